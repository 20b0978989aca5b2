"""Readers hold the committed running tree itself (no copy): a commit must leave it as it was."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from tests.datastore_support import commit_as
from vnet.agent.datastore import RUNNING, Datastore
from vnet.model.agent_config import AgentConfig, User

NETWORKS = {"network": [{"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"}]}


def router(name: str, address: str, admin: str = "up") -> dict[str, Any]:
    itf = {"name": "eth0", "network": "n1", "ipv4": address}
    return {"name": name, "admin-state": admin, "interface": [itf]}


def tree(*routers: dict[str, Any]) -> dict[str, Any]:
    return {"vnet-router:virtual-networks": NETWORKS, "vnet-router:routers": {"router": [*routers]}}


def test_a_commit_leaves_a_held_snapshot_unchanged(tmp_path: Path) -> None:
    config = AgentConfig(state_dir=tmp_path, users=[User(name="admin", password="x")])
    ds = Datastore(config, apply_to_kernel=False)

    async def main() -> None:
        await ds.start()
        await commit_as(ds, tree(router("r1", "10.1.0.1/24")))
        held = ds.running_snapshot()
        as_read = copy.deepcopy(held)

        def edit(current: dict[str, Any]) -> tuple[dict[str, Any], None]:
            current["vnet-router:routers"]["router"][0]["admin-state"] = "down"
            current["vnet-router:routers"]["router"].append(router("r2", "10.1.0.2/24"))
            return current, None

        await ds.update(RUNNING, edit)  # an edit of running, as NETCONF and SNMP make it
        await commit_as(ds, tree())  # and a commit that removes every VR
        assert held == as_read, "a commit changed a tree a reader holds"
        assert ds.running_snapshot() is not held
        assert ds.running_snapshot()["vnet-router:routers"]["router"] == []

    asyncio.run(main())
