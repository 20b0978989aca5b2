"""One agent in a namespace of its own per part, removed again whatever happens."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from vnet.bench.results import BenchResult
from vnet.client import Endpoint
from vnet.lab.sandbox import ADDRESS, HostSandbox, SandboxAgent


@contextmanager
def sandboxed_agent(
    result: BenchResult,
    part: str,
    settings: dict[str, Any] | None = None,
    frontends: str = "netconf",
    **agent: Any,
) -> Iterator[SandboxAgent]:
    """A started `vnet agent run --frontends FRONTENDS` in a new sandbox; the scope is
    recorded in the result, and anything cleanup could not remove becomes a note."""
    host = HostSandbox(scope="ab" + secrets.token_hex(3))
    result.parameters.setdefault("scopes", []).append(host.scope)
    sandbox = SandboxAgent(host, settings or {}, **agent)
    try:
        host.create()
        sandbox.start(frontends)
        yield sandbox
    finally:
        sandbox.stop()
        for problem in host.cleanup():
            result.note(f"cleanup after {part}: {problem}")


def endpoint(agent: SandboxAgent, timeout: float = 600) -> Endpoint:
    """vnet.client's address of the agent's NETCONF server, from inside its namespace."""
    port = agent.ports["netconf"]
    return Endpoint(
        ADDRESS, port, agent.user, agent.password, agent.host.namespace, timeout=timeout
    )
