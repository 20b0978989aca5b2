"""A real Datastore whose kernel work is skipped: commits validate, persist and notify as
always; operational state is made up from the configuration. For the front-ends' tests and
fuzzers without root (the kernel paths have their own integration tests).

`kernel_pause=None`: no kernel step at all (the fuzzers). A number of seconds: the commit
takes its kernel step, which only sleeps that long (so concurrent edits overlap, as on an
agent; the RESTCONF app's tests)."""

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


def admin_config(state_dir: Path, **more: Any) -> AgentConfig:
    """An agent's configuration with one user, admin (password s3cret)."""
    users = [{"name": "admin", "password": "s3cret"}]
    return AgentConfig.model_validate({"state_dir": state_dir, "users": users, **more})


class NoKernelDatastore(Datastore):
    def __init__(self, config: AgentConfig, kernel_pause: float | None = None):
        super().__init__(config, apply_to_kernel=kernel_pause is not None)
        self.kernel_pause = kernel_pause or 0.0

    @classmethod
    def with_networks(cls, config: AgentConfig, kernel_pause: float | None = None) -> Any:
        """One whose running (and candidate) configuration holds NETWORKS."""
        ds = cls(config, kernel_pause)
        ds.running = copy.deepcopy(NETWORKS)
        ds.candidate = copy.deepcopy(NETWORKS)
        return ds

    def _desired(self, tree: dict[str, Any]) -> Any:
        return None

    async def _in_kernel_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        await asyncio.sleep(self.kernel_pause)
        return None

    async def state_tree(
        self, detailed: set[str] | None = None, tops: set[str] | None = None
    ) -> dict[str, Any]:
        tree = copy.deepcopy(self.running)
        for r in tree.get("vnet-router:routers", {}).get("router", []):
            r["oper-state"] = "stopped" if r.get("admin-state") == "down" else "running"
            for itf in r.get("interface", []):
                itf["oper-status"] = "up"
        tree["vnet-router:hypervisor"] = {"host-name": "h1", "next-available-index": 1}
        return tree
