#!/usr/bin/env python3
"""Restart an agent holding N VRs; print how long until NETCONF answers and until the
kernel is reconciled (issue 17, finding 9). Needs root; run from the repository:

    .venv/bin/python scripts/restart_many_vrs.py 1000

The agent runs in a sandbox namespace (vnet.lab.sandbox), the VRs are made over
NETCONF in batches of 100, and the sandbox is removed at the end.
"""

from __future__ import annotations

import json
import sys
import time

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.tools.wait import wait_until

NS = "urn:vnet:yang:vnet-router"
NET = (
    f'<config><virtual-networks xmlns="{NS}"><network><name>n1</name><tenant>a</tenant>'
    "<vni>10</vni><ipv4-prefix>10.0.0.0/16</ipv4-prefix></network></virtual-networks></config>"
)


def routers(first: int, count: int) -> str:
    items = "".join(
        f"<router><name>r{i}</name><interface><name>eth0</name><network>n1</network>"
        f"<ipv4>10.0.{(i + 1) // 256}.{(i + 1) % 256}/16</ipv4></interface></router>"
        for i in range(first, first + count)
    )
    return f'<config><routers xmlns="{NS}">{items}</routers></config>'


def first_answer(agent: SandboxAgent, started: float) -> float:
    """Seconds from `started` until a NETCONF session answers <get-config>."""
    while True:
        try:
            with agent.netconf(timeout=5) as m:
                m.get_config(source="running")
                return time.monotonic() - started
        except Exception:
            time.sleep(0.1)


def main(n: int) -> dict[str, float]:
    host = HostSandbox()
    agent = SandboxAgent(host, {"drift_interval": 0})
    try:
        host.create()
        agent.start("netconf")
        with agent.netconf(timeout=600) as m:
            m.edit_config(target="running", config=NET)
            for first in range(0, n, 100):
                m.edit_config(target="running", config=routers(first, min(100, n - first)))
        agent.stop()
        agent.log.write_text("")
        argv = [sys.executable, "-m", "vnet", "agent", "run", "--config"]
        argv += [str(agent.state_dir / "agent.yaml"), "--frontends", "netconf"]
        started = time.monotonic()
        agent.proc = host.spawn(argv, agent.log)
        wait_until(lambda: "listening" in agent.log.read_text(), 3600, "a front-end", 0.02)
        listening = time.monotonic() - started
        answered = first_answer(agent, started)
        ready = agent.state_dir / "agent.ready"
        wait_until(ready.exists, 3600, "the reconcile", interval=0.05)
        return {
            "vrs": n,
            "seconds_to_listening": round(listening, 2),
            "seconds_to_first_netconf_answer": round(answered, 2),
            "seconds_to_reconciled": round(time.monotonic() - started, 2),
        }
    finally:
        agent.stop()
        host.cleanup()


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
