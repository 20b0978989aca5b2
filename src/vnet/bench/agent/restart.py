"""An agent restarted with N VRs: time to a listening front-end, to the first NETCONF
answer and to the end of the reconcile (issue 17: 10k VRs to serving <= 20 s).

The VRs are made over NETCONF in edit-configs of 100; then the agent is stopped and
started again from the same state directory, `rounds` times. Times run from the
spawn of `vnet agent run`; "listening" is the front-end's log line, "first answer" a
<get-config> of running answered by a new session, "reconciled" the agent's ready file.
"""

from __future__ import annotations

import math
import time

from ncclient import NCClientError

from vnet.bench.agent.sandbox import sandboxed_agent
from vnet.bench.client import NS, agent_session
from vnet.bench.results import BenchResult
from vnet.lab.sandbox import SandboxAgent
from vnet.model.bridge_ports import BRIDGE_MAX_PORTS
from vnet.tools import processes
from vnet.tools.wait import wait_until

METRIC = "restart"
LISTENING, ANSWER, RECONCILED = "listening", "first NETCONF answer", "reconciled"
STAGES = (LISTENING, ANSWER, RECONCILED)
DEADLINE = 3600.0  # seconds: a restart slower than this is a failure, not a sample
# VRs per network: a Linux bridge takes at most BRIDGE_MAX_PORTS ports, so 10,000 VRs need
# ten networks (one network of them all was refused at the 1024th)
PER_NETWORK = 1000
assert PER_NETWORK <= BRIDGE_MAX_PORTS


def declare(result: BenchResult, vrs: int) -> None:
    result.declare(
        METRIC,
        "s",
        x_label="after the spawn of the agent",
        plot="bar",
        description=f"`vnet agent run` restarted holding {vrs} VRs (1 interface each, "
        f"{PER_NETWORK} to a network): seconds until a front-end listens, until a new "
        "NETCONF session's get-config is answered, and until the kernel is reconciled.",
    )


def networks(vrs: int) -> str:
    """n1, n2, ...: one per PER_NETWORK VRs, network k+1 on 10.k.0.0/16."""
    items = "".join(
        f"<network><name>n{k + 1}</name><tenant>a</tenant><vni>{10 + k}</vni>"
        f"<ipv4-prefix>10.{k}.0.0/16</ipv4-prefix></network>"
        for k in range(max(1, math.ceil(vrs / PER_NETWORK)))
    )
    return f'<config><virtual-networks xmlns="{NS}">{items}</virtual-networks></config>'


def routers(first: int, count: int) -> str:
    """VRs first .. first+count-1, each with one interface on its network."""
    items = []
    for i in range(first, first + count):
        k, j = divmod(i, PER_NETWORK)
        items.append(
            f"<router><name>r{i}</name><interface><name>eth0</name><network>n{k + 1}</network>"
            f"<ipv4>10.{k}.{(j + 1) // 256}.{(j + 1) % 256}/16</ipv4></interface></router>"
        )
    return f'<config><routers xmlns="{NS}">{"".join(items)}</routers></config>'


def _answered(agent: SandboxAgent) -> bool:
    try:
        with agent_session(agent, 5) as m:
            m.get_config(source="running")
        return True
    except (OSError, NCClientError):  # not listening yet, or refused while starting
        return False


def _restart(agent: SandboxAgent, result: BenchResult) -> None:
    agent.stop()
    offset = agent.log.stat().st_size  # only this run's log lines count
    argv = [*processes.python_module("vnet"), "agent", "run", "--config"]
    argv += [str(agent.state_dir / "agent.yaml"), "--frontends", "netconf"]
    started = time.monotonic()
    agent.proc = agent.host.spawn(argv, agent.log)

    def listening() -> bool:
        with agent.log.open("rb") as log:
            log.seek(offset)
            return b"listening" in log.read()

    def exited() -> str | None:
        code = agent.proc.poll() if agent.proc else None
        return None if code is None else f"the agent exited with {code}"

    wait_until(listening, DEADLINE, "a front-end", interval=0.02, give_up=exited)
    result.record(METRIC, "vnet", time.monotonic() - started, x=LISTENING)
    wait_until(lambda: _answered(agent), DEADLINE, "a NETCONF answer", 0.05, exited)
    result.record(METRIC, "vnet", time.monotonic() - started, x=ANSWER)
    ready = agent.config.ready_path
    wait_until(ready.exists, DEADLINE, "the reconcile", interval=0.05, give_up=exited)
    result.record(METRIC, "vnet", time.monotonic() - started, x=RECONCILED)


def measure(result: BenchResult, vrs: int, rounds: int) -> None:
    with sandboxed_agent(result, "restart", {"drift_interval": 0}) as agent:
        with agent_session(agent, 3600) as m:
            m.edit_config(target="running", config=networks(vrs))
            start = time.perf_counter()
            for first in range(0, vrs, 100):
                m.edit_config(target="running", config=routers(first, min(100, vrs - first)))
            result.parameters["restart_load_s"] = round(time.perf_counter() - start, 2)
        for _ in range(rounds):
            _restart(agent, result)
