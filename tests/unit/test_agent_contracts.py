"""What an agent shares with the processes that start it and talk to it, typed by the
model: its files (ready file, certificate) and the error-app-tags of its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import etree
from pydantic import ValidationError

from vnet.agent.frontends import FRONTENDS
from vnet.client import ClientError, Endpoint
from vnet.controller.agents.transaction import nothing_pending
from vnet.lab.access import AGENT_CONFIG, endpoint
from vnet.lab.record import AgentRecord, LabRecord
from vnet.model.agent_config import FRONTEND_NAMES, AgentConfig, AgentReady, Ports, User
from vnet.model.yang.errors import (
    RESTCONF_NS,
    AppTag,
    ErrorTag,
    ErrorType,
    RpcError,
    netconf_error_xml,
    parse_restconf_error,
    restconf_error_json,
    restconf_error_xml,
)
from vnet.model.yang.module import NETCONF_NS as NC


def config(tmp_path: Path, **extra: object) -> AgentConfig:
    return AgentConfig(state_dir=tmp_path, users=[User(name="a", password="x")], **extra)


def test_the_model_names_every_front_end_the_agent_registers() -> None:
    assert tuple(FRONTENDS) == FRONTEND_NAMES


def test_the_agent_files_live_in_its_state_dir(tmp_path: Path) -> None:
    c = config(tmp_path)
    paths = {c.ready_path, c.restconf_cert_path, c.restconf_key_path, c.hostkey_path}
    assert {p.parent for p in paths} == {tmp_path} and len(paths) == 4
    assert c.served_frontends == list(FRONTEND_NAMES)
    assert config(tmp_path, frontends=["netconf"]).served_frontends == ["netconf"]


def test_the_ready_file_round_trips_and_is_none_until_written(tmp_path: Path) -> None:
    c = config(tmp_path)
    assert c.ready() is None
    ready = AgentReady(pid=7, address="127.0.0.1", ports=Ports(), frontends=["netconf"])
    c.ready_path.write_text(ready.model_dump_json())
    assert c.ready() == ready
    c.ready_path.write_text('{"pid": 7}')  # a file of another shape is an error, not "ready"
    with pytest.raises(ValidationError):
        c.ready()


def test_the_app_tag_travels_in_every_error_format_and_back() -> None:
    err = RpcError(
        ErrorTag.OPERATION_FAILED, "nothing", ErrorType.PROTOCOL, app_tag=AppTag.NOTHING_PENDING
    )
    nc = etree.fromstring(
        netconf_error_xml(err).replace("<rpc-error>", f'<rpc-error xmlns="{NC}">')
    )
    assert nc.findtext(f"{{{NC}}}error-app-tag") == "vnet-nothing-pending"
    rc = etree.fromstring(restconf_error_xml(err))
    assert rc.findtext(f"{{{RESTCONF_NS}}}error/{{{RESTCONF_NS}}}error-app-tag") == err.app_tag
    back = parse_restconf_error(json.loads(restconf_error_json(err, None)))
    assert back.app_tag is AppTag.NOTHING_PENDING
    plain = RpcError(ErrorTag.OPERATION_FAILED, "no confirmed commit is pending")
    assert "error-app-tag" not in netconf_error_xml(plain)
    assert parse_restconf_error(json.loads(restconf_error_json(plain, None))).app_tag is None


def test_the_controller_tells_nothing_pending_by_the_app_tag_not_the_words() -> None:
    tagged = ClientError("invalid-value", "anything at all", app_tag="vnet-nothing-pending")
    assert nothing_pending(tagged)
    # the words of the old refusals, without the tag, are another refusal
    assert not nothing_pending(ClientError("operation-failed", "no confirmed commit is pending"))


def test_a_lab_agent_is_reached_through_the_clients_endpoint_per_protocol(tmp_path: Path) -> None:
    """One endpoint type: the lab hands out vnet.client.Endpoint, the port and the pin of
    the protocol asked for, with the certificate where the agent's config says it is."""
    c = config(tmp_path, host="h1", address="10.0.0.1")
    (tmp_path / AGENT_CONFIG).write_text(c.model_dump_json())
    record = LabRecord("L", agent_user="admin", agent_password="pw")
    record.agents["h1"] = AgentRecord("10.0.0.1", 830, 443, str(tmp_path))
    netconf = endpoint("L", "h1", record)
    restconf = endpoint("L", "h1", record, "restconf")
    assert type(netconf) is Endpoint and type(restconf) is Endpoint
    assert (netconf.port, netconf.verify) == (830, True)
    assert (restconf.port, restconf.verify) == (443, str(c.restconf_cert_path))
    assert netconf.namespace == restconf.namespace == "vnet-L-mgmt"
    assert (restconf.user, restconf.password, restconf.host) == ("admin", "pw", "h1")
