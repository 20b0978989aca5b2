"""The one place the benchmarks talk NETCONF to an agent (or to a reference server).

Every NETCONF session a benchmark opens comes from here, so swapping the
client library (for vnet.client) touches this file only. Sessions are
ncclient managers opened from inside a namespace; the agent itself runs in
the lab's sandbox (vnet.lab.sandbox).
"""

from __future__ import annotations

from typing import Any

from vnet.lab.sandbox import SandboxAgent, connect_netconf
from vnet.model.yang.module import NAMESPACE

NS = NAMESPACE  # the vnet-router YANG module's namespace, as the benchmarks' XML writes it

RPC_TIMEOUT = 600.0  # seconds; loading 1000 VRs into the kernel on a busy machine is slow


def connect(namespace: str, rpc_timeout: float = RPC_TIMEOUT, **kwargs: Any) -> Any:
    """A session with any NETCONF server listening on `namespace`'s loopback."""
    session = connect_netconf(namespace, **kwargs)
    session.timeout = rpc_timeout
    return session


def agent_session(agent: SandboxAgent, timeout: float = 30) -> Any:
    """A session with a sandboxed vnet agent, as its configured user."""
    return agent.netconf(timeout=timeout)


def create_networks(agent: SandboxAgent, config: str, timeout: float = 600) -> None:
    """One edit-config of running with `config` (a <config> element), in its own session."""
    with agent_session(agent, timeout) as m:
        m.edit_config(target="running", config=config)
