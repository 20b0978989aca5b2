"""`vnet agent run --startup FILE`: validated like an edit, applied when it changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vnet.agent.datastore import Datastore
from vnet.agent.startup import apply_startup
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


def test_a_valid_startup_is_stored_once_and_again_when_it_changes(tmp_path: Path) -> None:
    ds = datastore(tmp_path)
    tree = {"vnet-router:virtual-networks": NETWORKS, "vnet-router:routers": {"router": [R1]}}
    path = startup(tmp_path, tree)
    assert apply_startup(ds, path)
    stored = json.loads(ds.path.read_text())
    assert stored["vnet-router:routers"]["router"][0]["index"] == 1  # as an edit assigns it
    assert not apply_startup(ds, path), "unchanged: the stored configuration is kept"
    tree["vnet-router:routers"] = {"router": [{**R1, "admin-state": "down"}]}
    assert apply_startup(ds, startup(tmp_path, tree))
    assert json.loads(ds.path.read_text())["vnet-router:routers"]["router"][0]["admin-state"] == (
        "down"
    )


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
        apply_startup(ds, startup(tmp_path, tree))
    assert info.value.tag == tag and info.value.path == where, info.value
    assert not ds.path.exists()
