"""A real Datastore whose kernel work is skipped: commits validate, persist and notify as
always; operational state is made up from the configuration. For fuzzing the front-ends
without root (the kernel paths have their own integration tests)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vnet.agent.datastore import Datastore
from vnet.model.agent_config import AgentConfig

NETWORKS = {
    "vnet-router:virtual-networks": {
        "network": [
            {"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"},
            {"name": "n2", "tenant": "a", "vni": 11, "ipv4-prefix": "10.2.0.0/24"},
        ]
    }
}


class NoKernelDatastore(Datastore):
    def __init__(self, state_dir: Path):
        config = AgentConfig.model_validate(
            {"state_dir": state_dir, "users": [{"name": "admin", "password": "s3cret"}]}
        )
        super().__init__(config, apply_to_kernel=False)
        self.running = copy.deepcopy(NETWORKS)
        self.candidate = copy.deepcopy(NETWORKS)

    async def _in_kernel_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        await asyncio.sleep(0)
        return None

    async def state_tree(self, detailed: set[str] | None = None) -> dict[str, Any]:
        tree = copy.deepcopy(self.running)
        for r in tree.get("vnet-router:routers", {}).get("router", []):
            r["oper-state"] = "stopped" if r.get("admin-state") == "down" else "running"
        tree["vnet-router:hypervisor"] = {"host-name": "h1", "next-available-index": 1}
        return tree
