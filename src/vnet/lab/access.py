"""How a client reaches what a running lab serves, from the lab's record and the files its
agents made: the controller (URL, namespace, provider token, certificate) and each host's
agent (`vnet conn|tenant|net|vr --lab`, the benchmarks, the tests).

This module does not import the lab's machinery (the substrate and pyroute2): a command that
only asks a lab's controller or agent spent 0.4 s of CPU importing it, more than the rest
of the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vnet.lab.record import ControllerRecord, LabError, LabRecord, read_record
from vnet.model.agent_config import HOSTKEY_FILE, AgentConfig
from vnet.model.management import MANAGEMENT_NODE
from vnet.tools.sshkeys import key_base64, public_line

if TYPE_CHECKING:
    from vnet.client import Endpoint

AGENT_CONFIG = "agent.yaml"  # the AgentConfig the lab hands over (JSON is valid YAML)


def controller_access(lab: str) -> ControllerRecord:
    """Where the lab's controller serves and its provider token (for `vnet conn --lab L`)."""
    rec = read_record(lab)
    if rec is None:
        raise LabError(f"lab {lab!r} is not up")
    if rec.controller is None:
        raise LabError(f"lab {lab!r} has no controller (its file has no `controller:` section)")
    return rec.controller


def agent_endpoint(lab: str, host: str, protocol: str = "netconf") -> Endpoint:
    """How to reach the agent of `host` in `lab` over `protocol` (`vnet vr --lab L --host H`)."""
    rec = read_record(lab)
    if rec is None:
        raise LabError(f"lab {lab!r} is not up")
    try:
        return endpoint(lab, host, rec, protocol)
    except KeyError:
        known = ", ".join(sorted(rec.agents)) or "none: the file has no management"
        raise LabError(f"lab {lab!r} has no agent on host {host!r} (agents: {known})") from None


def endpoint(topo_name: str, host: str, rec: LabRecord, protocol: str = "netconf") -> Endpoint:
    """How a client reaches the agent of `host` over `protocol` ("netconf" or "restconf"):
    from the management namespace, pinning the agent's host key or certificate."""
    from vnet.client import Endpoint

    agent = rec.agents.get(host)
    if agent is None:
        raise KeyError(host)
    assert rec.agent_user is not None and rec.agent_password is not None
    state_dir = Path(agent.state_dir)
    restconf = protocol == "restconf"
    return Endpoint(
        namespace=f"vnet-{topo_name}-{MANAGEMENT_NODE}",
        address=agent.address,
        port=agent.restconf_port if restconf else agent.netconf_port,
        user=rec.agent_user,
        password=rec.agent_password,
        verify=str(handed_config(state_dir).restconf_cert_path) if restconf else True,
        hostkey=pinned_hostkey(state_dir),
        host=host,
    )


def handed_config(directory: Path) -> AgentConfig:
    """The AgentConfig the lab wrote in `directory` (the agent's state_dir): where the
    agent keeps the files the lab reads (ready file, certificate, host key)."""
    return AgentConfig.model_validate_json((directory / AGENT_CONFIG).read_bytes())


def pinned_hostkey(state_dir: Path) -> str | None:
    """The SSH host key (base64) the agent made in `state_dir` at its first start, for its
    clients to pin; None before that."""
    path = state_dir / HOSTKEY_FILE
    return key_base64(public_line(path)) if path.exists() else None
