"""The controller's `agents:` configuration as vnet.client Endpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from vnet.controller.agents.access import AccessError, endpoints_of
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.db import make_engine
from vnet.controller.service.core import Service
from vnet.model.controller_config import ControllerConfig

KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIJCZ+FN4s1s3WL20ryAMafdtQRGwtZhMCPoB+/aSh1oX"


def config(tmp_path: Path, agents: list[dict[str, object]]) -> ControllerConfig:
    return ControllerConfig.model_validate({"state_dir": str(tmp_path), "agents": agents})


def test_endpoints_carry_the_access_and_the_password_from_its_file(tmp_path: Path) -> None:
    secret = tmp_path / "h1.password"
    secret.write_text("s3cret\n")
    cfg = config(
        tmp_path,
        [
            {
                "host": "h1",
                "address": "172.30.0.1",
                "password_file": str(secret),
                "namespace": "vnet-lab-mgmt",
                "hostkey": f"ssh-ed25519 {KEY} root@h1",
            },
            {
                "host": "h2",
                "address": "172.30.0.2",
                "netconf_port": 8830,
                "user": "ops",
                "hostkey": KEY,
            },
        ],
    )
    eps = endpoints_of(cfg)
    assert eps["h1"].password == "s3cret" and eps["h1"].namespace == "vnet-lab-mgmt"
    assert eps["h1"].port == 830 and eps["h1"].host == "h1"
    assert eps["h1"].hostkey == eps["h2"].hostkey == KEY  # what `vnet agent hostkey` prints
    assert eps["h2"].port == 8830 and eps["h2"].user == "ops" and eps["h2"].password is None
    assert eps["h1"].timeout == eps["h2"].timeout == 30.0  # the default rpc_timeout
    agents = NetconfSouthbound.from_config(cfg)
    assert set(agents.endpoints) == {"h1", "h2"} and set(agents.hosts) == {"h1", "h2"}


def test_the_rpc_timeout_and_the_lock_wait_come_from_the_configuration(tmp_path: Path) -> None:
    agent = {"host": "h1", "address": "172.30.0.1", "hostkey": KEY}
    cfg = ControllerConfig.model_validate(
        {"state_dir": str(tmp_path), "agents": [agent], "rpc_timeout": 2.5, "lock_wait": 0.5}
    )
    southbound = NetconfSouthbound.from_config(cfg)
    assert southbound.endpoints["h1"].timeout == 2.5
    assert southbound.sessions["h1"].endpoint.timeout == 2.5
    service = Service(cfg, make_engine(f"sqlite:///{tmp_path / 'c.db'}"), southbound)
    assert service.agents.lock_wait == 0.5 and service.agents.confirm_timeout == cfg.confirm_timeout


@pytest.mark.parametrize(
    ("setting", "value", "reason"),
    [
        ("rpc_timeout", 0, "greater than 0"),
        ("rpc_timeout", 601, "less than or equal to 600"),
        ("lock_wait", -1, "greater than or equal to 0"),
        ("lock_wait", 601, "less than or equal to 600"),
    ],
)
def test_an_rpc_timeout_or_lock_wait_out_of_bounds_is_refused(
    tmp_path: Path, setting: str, value: float, reason: str
) -> None:
    with pytest.raises(ValidationError, match=rf"{setting}\n.*{reason}"):
        ControllerConfig.model_validate({"state_dir": str(tmp_path), setting: value})


def test_an_unreadable_password_file_or_a_host_twice_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(AccessError, match=r"host 'h1'.*password_file.*nowhere"):
        endpoints_of(
            config(
                tmp_path,
                [{"host": "h1", "address": "a", "password_file": str(missing), "hostkey": KEY}],
            )
        )
    twice = [{"host": "h1", "address": "a", "hostkey": KEY}, {"host": "h1", "address": "b"}]
    with pytest.raises(AccessError, match="'h1' is given twice"):
        endpoints_of(config(tmp_path, twice))


def test_an_agent_without_a_pinned_host_key_is_refused_unless_trusted_on_first_use(
    tmp_path: Path,
) -> None:
    unpinned = [{"host": "h1", "address": "172.30.0.1"}]
    with pytest.raises(AccessError, match=r"host 'h1'.*not pinned.*vnet agent hostkey"):
        endpoints_of(config(tmp_path, unpinned))
    with pytest.raises(AccessError, match=r"host 'h1'.*hostkey.*ssh-ed25519 AAAA"):
        endpoints_of(config(tmp_path, [{**unpinned[0], "hostkey": "not a key"}]))
    trusting = ControllerConfig.model_validate(
        {"state_dir": str(tmp_path), "agents": unpinned, "trust_on_first_use": True}
    )
    ep = endpoints_of(trusting)["h1"]
    assert ep.hostkey is None and ep.known_hosts == str(tmp_path / "agents.known_hosts")
