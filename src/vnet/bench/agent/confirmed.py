"""What a confirmed commit and its confirmation cost over a plain commit (issue 11:
<= 5 ms each, p50), with ncclient against one agent.

Each cycle takes the admin-state of one VR down and up again (real kernel changes), one
change committed plainly and the other confirmed, interleaved so that drift hits both:
  plain      <commit/> of one change
  noop       <commit/> of an unchanged candidate
  confirmed  <commit><confirmed/></commit> of the other change
  confirm    <commit/> confirming it (unchanged candidate)
Odd cycles swap the two changes, so each kind takes the VR down as often as up. The
confirmed commit is compared with `plain`, the confirmation with `noop`.
"""

from __future__ import annotations

import time
from typing import Any

from vnet.bench.agent.sandbox import sandboxed_agent
from vnet.bench.client import NS, agent_session
from vnet.bench.results import BenchResult

METRIC = "commit"
KINDS = ("plain", "noop", "confirmed", "confirm")
VRS = 10  # the tree the commits carry

NETWORK = (
    f'<config><virtual-networks xmlns="{NS}"><network><name>n1</name><tenant>a</tenant>'
    "<vni>10</vni><ipv4-prefix>10.1.0.0/16</ipv4-prefix></network></virtual-networks></config>"
)


def declare(result: BenchResult) -> None:
    result.declare(
        METRIC,
        "ms",
        x_label="<commit> of the candidate",
        plot="bar",
        description="plain: a commit taking one VR's admin-state down or up; noop: a commit of "
        "an unchanged candidate; confirmed: <commit><confirmed/> of the opposite change; "
        f"confirm: the commit confirming it. {VRS} VRs configured; request to <ok>.",
    )


def vr(i: int, admin: str = "up") -> str:
    return (
        f"<router><name>b{i}</name><admin-state>{admin}</admin-state><interface><name>eth0"
        f"</name><network>n1</network><ipv4>10.1.{i // 250}.{i % 250 + 1}/16</ipv4>"
        "</interface></router>"
    )


def routers(*entries: str) -> str:
    return f'<config><routers xmlns="{NS}">{"".join(entries)}</routers></config>'


def cycle_steps(i: int) -> list[tuple[str, str | None]]:
    """(kind, admin-state the candidate gets first or None) for cycle i; both changes
    start from the VR up, odd cycles swap which of them is confirmed."""
    if i % 2:
        return [("confirmed", "down"), ("confirm", None), ("plain", "up"), ("noop", None)]
    return [("plain", "down"), ("noop", None), ("confirmed", "up"), ("confirm", None)]


def _cycle(m: Any, i: int, result: BenchResult) -> None:
    for kind, admin in cycle_steps(i):
        if admin is not None:
            m.edit_config(target="candidate", config=routers(vr(0, admin)))
        start = time.perf_counter()
        m.commit(confirmed=kind == "confirmed")
        result.record(METRIC, "vnet", (time.perf_counter() - start) * 1000, x=kind)


def measure(result: BenchResult, cycles: int) -> None:
    with sandboxed_agent(result, "confirmed") as agent, agent_session(agent, 600) as m:
        m.edit_config(target="running", config=NETWORK)
        m.edit_config(target="running", config=routers(*(vr(i) for i in range(VRS))))
        m.commit()  # warm-up: the first commit builds what later ones reuse
        for i in range(cycles):
            _cycle(m, i, result)
