"""`vnet agent run --startup FILE`: validated like an edit, applied when it changed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from vnet.agent.datastore import RUNNING, Datastore
from vnet.agent.startup import start_datastore
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.errors import ErrorTag, RpcError

NETWORKS = {"network": [{"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"}]}
R1 = {"name": "r1", "interface": [{"name": "eth0", "network": "n1", "ipv4": "10.1.0.1/24"}]}


def datastore(tmp_path: Path) -> Datastore:
    # the lab's agents: networks are the lab's, and still the startup file may set them
    config = AgentConfig(
        state_dir=tmp_path / "state",
        users=[User(name="admin", password="x")],
        provision_networks=False,
    )
    return Datastore(config, apply_to_kernel=False)


def startup(tmp_path: Path, tree: dict[str, object]) -> Path:
    path = tmp_path / "startup.json"
    path.write_text(json.dumps(tree))
    return path


def start(tmp_path: Path, path: Path) -> tuple[bool, dict[str, Any]]:
    """An agent's start with this startup file: (applied?, its running tree)."""
    ds = datastore(tmp_path)
    applied = asyncio.run(start_datastore(ds, path))
    return applied, ds.tree(RUNNING)


def test_a_valid_startup_is_stored_once_and_again_when_it_changes(tmp_path: Path) -> None:
    tree = {"vnet-router:virtual-networks": NETWORKS, "vnet-router:routers": {"router": [R1]}}
    path = startup(tmp_path, tree)
    applied, running = start(tmp_path, path)
    assert applied
    assert running["vnet-router:routers"]["router"][0]["index"] == 1  # as an edit assigns it
    applied, again = start(tmp_path, path)
    assert not applied and again == running, "unchanged: the stored configuration is kept"
    tree["vnet-router:routers"] = {"router": [{**R1, "admin-state": "down"}]}
    applied, running = start(tmp_path, startup(tmp_path, tree))
    assert applied
    assert running["vnet-router:routers"]["router"][0]["admin-state"] == "down"


@pytest.mark.parametrize(
    ("tree", "tag", "where"),
    [
        (  # the model's invariants, with the exact path
            {"vnet-router:routers": {"router": [R1]}},
            ErrorTag.INVALID_VALUE,
            "/vr:routers/vr:router[vr:name='r1']/vr:interface[vr:name='eth0']/vr:network",
        ),
        (  # the schema
            {"vnet-router:routers": {"router": [{**R1, "colour": "red"}]}},
            ErrorTag.UNKNOWN_ELEMENT,
            "/vr:routers/vr:router[vr:name='r1']/vr:colour",
        ),
    ],
)
def test_an_invalid_startup_stores_nothing(
    tmp_path: Path, tree: dict[str, object], tag: ErrorTag, where: str
) -> None:
    ds = datastore(tmp_path)
    with pytest.raises(RpcError) as info:
        asyncio.run(start_datastore(ds, startup(tmp_path, tree)))
    assert info.value.tag == tag and info.value.path == where, info.value
    assert not ds.has_stored()
