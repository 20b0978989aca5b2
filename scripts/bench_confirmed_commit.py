"""What a confirmed commit and its confirmation cost over a plain commit (issue 11's goal:
<= 5 ms each, p50), measured with ncclient against one real agent in a namespace of its own.

Each cycle takes the admin-state of one VR down and up again (real kernel changes), one
change committed plainly and the other confirmed, interleaved so that drift hits both:
  plain      <commit/> of one change
  noop       <commit/> of an unchanged candidate
  confirmed  <commit><confirmed/></commit> of the other change
  confirm    <commit/> confirming it (unchanged candidate)
Odd cycles swap the two changes, so each kind takes the VR down as often as up.
The confirmed commit is compared with `plain`, the confirmation with `noop`.

    sudo .venv/bin/python scripts/bench_confirmed_commit.py [--cycles 30] [--vrs 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from vnet.lab.sandbox import HostSandbox, SandboxAgent

NS = "urn:vnet:yang:vnet-router"
NETWORK = (
    f'<config><virtual-networks xmlns="{NS}"><network><name>n1</name><tenant>a</tenant>'
    "<vni>10</vni><ipv4-prefix>10.1.0.0/16</ipv4-prefix></network></virtual-networks></config>"
)


def vr(i: int, admin: str = "up") -> str:
    return (
        f"<router><name>b{i}</name><admin-state>{admin}</admin-state><interface><name>eth0"
        f"</name><network>n1</network><ipv4>10.1.{i // 250}.{i % 250 + 1}/16</ipv4>"
        "</interface></router>"
    )


def routers(*entries: str) -> str:
    return f'<config><routers xmlns="{NS}">{"".join(entries)}</routers></config>'


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def measure(m: Any, cycles: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"plain": [], "noop": [], "confirmed": [], "confirm": []}
    for i in range(cycles):
        # both start with the VR up and take it down and up again; odd cycles swap which
        # of the two changes is the confirmed one, so each kind does each direction
        plain = [("plain", "down"), ("noop", None)]
        confirmed = [("confirmed", "up"), ("confirm", None)]
        if i % 2:
            plain, confirmed = (
                [("plain", "up"), ("noop", None)],
                [("confirmed", "down"), ("confirm", None)],
            )
            steps = confirmed + plain
        else:
            steps = plain + confirmed
        for kind, admin in steps:
            if admin is not None:
                m.edit_config(target="candidate", config=routers(vr(0, admin)))
            options = {"confirmed": True} if kind == "confirmed" else {}
            samples[kind].append(timed(lambda options=options: m.commit(**options)))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--vrs", type=int, default=10, help="VRs configured (the tree's size)")
    args = parser.parse_args()
    host = HostSandbox()
    agent = SandboxAgent(host)
    try:
        host.create()
        agent.start("netconf")
        with agent.netconf() as m:
            m.edit_config(target="running", config=NETWORK)
            m.edit_config(target="running", config=routers(*(vr(i) for i in range(args.vrs))))
            m.commit()  # warm-up
            samples = measure(m, args.cycles)
    finally:
        agent.stop()
        problems = host.cleanup()
        if problems:
            print("cleanup:", problems)
    p50 = {k: statistics.median(v) for k, v in samples.items()}
    result = {
        "cycles": args.cycles,
        "vrs": args.vrs,
        "p50_ms": {k: round(v, 2) for k, v in p50.items()},
        "confirmed_over_plain_ms": round(p50["confirmed"] - p50["plain"], 2),
        "confirm_over_noop_ms": round(p50["confirm"] - p50["noop"], 2),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
