"""The reroute variants: guaranteed connections the controller moves off a failed element.

A controller lab (examples/controller.yaml: h1, h2, h3 in a triangle, pc1 on h1, pc3 on
h3) is brought up once under a name of its own. Per number of connections N and per run:

- `reroute-link`: N connections pc1 -> pc3 are admitted (each on the direct link h1-h3),
  then h1-h3 fails (`vnet lab link down`). The controller learns it from the agents and
  moves each one onto h1-h2-h3.
- `reroute-host`: h1-h3 is cut while N connections are admitted (so each runs through
  h2), and restored; then h2 fails as a power failure would (`vnet lab host down`: its
  links down, its agent stopped), and the controller moves each one back onto h1-h3.

The figures come from the controller's own answers (GET /links: when it recorded the
link down; each connection's history: when it was rerouted or degraded), on the clock
the bench shares with it. Then the element comes back, and after a short watch each
connection's history is read again: a path change after the return is a flap (the
policy is never to move back on its own). Finally every connection is released and the
ledger must hold nothing: what it still holds leaked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vnet.bench.contract import OptionError
from vnet.bench.controller.driver import Access
from vnet.bench.controller.harness import controller_lab
from vnet.bench.failover import timeline
from vnet.bench.failover.scenario import DST, SRC, endhost, failed_link
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult
from vnet.client.controller import ControllerClient
from vnet.client.errors import ControllerError
from vnet.client.netconf import NetconfClient
from vnet.lab import faults
from vnet.lab.access import agent_endpoint
from vnet.model.controller_api import ConnectionEvent, ConnectionRequest, ConnectionView
from vnet.model.yang.module import qualified
from vnet.tools.wait import WaitTimeout, wait_until

LINK, HOST = "reroute-link", "reroute-host"
VARIANTS = (LINK, HOST)
BANDWIDTH = "500kbit"  # 100 of them fit on one 100 Mbit/s link with their headers
FIRST_PORT = 20000  # connection k matches UDP to port FIRST_PORT + k
SEEN = 15.0  # seconds the controller may take to show a link's or host's state
# seconds for every connection to be moved: 100 of them, each tried and degraded once per
# link of a host powered off before they move, on a busy machine
SETTLE = 300.0
WATCH = 2.0  # seconds the connections are watched for a flap after the element is back
HOST_BACK = 180.0  # seconds `vnet lab host up` may take (the agent restores its VRs)
RECONCILED = 90.0  # seconds: the controller's reconcile watcher checks every 30 s by default
POLL = 0.25  # seconds between reads while the controller works (reads load it too)

DETECT, MOVE, MOVE_LAST = "detect", "move", "move_last"
HANDLED_LAST, DEGRADED, DEGRADED_FIRST = "handled_last", "degraded", "degraded_first"
OVER, STALE, LEAKED, FLAPPED = "over_admitted", "stale", "leaked", "flapped"
X_LABEL = "connections on the failed element"


@dataclass(frozen=True)
class Scene:
    """Who is who in the controller lab: the connections' ends, the link that fails and
    the host the other path crosses."""

    tenant: str
    direct: str  # the link between the end hosts' hosts, "h1-h3"
    direct_ends: tuple[str, str]
    transit: str  # the third host, "h2"
    transit_links: tuple[str, ...]


def scene_of(data: dict[str, Any]) -> Scene:
    src, dst = endhost(data, SRC), endhost(data, DST)
    direct = failed_link(data)
    if src is None or dst is None:
        raise OptionError("--controller-file", f"needs end hosts {SRC} and {DST}")
    ends = (src["host"], dst["host"])
    others = [h["name"] for h in data.get("hosts", []) if h.get("name") not in ends]
    if len(others) != 1:
        raise OptionError("--controller-file", "needs three hosts: two ends and one between")
    transit = others[0]
    network = next(n for n in data.get("networks", []) if n["name"] == src["network"])
    links = [f"{x['a']}-{x['b']}" for x in data.get("links", []) if transit in (x["a"], x["b"])]
    return Scene(network["tenant"], direct, ends, transit, tuple(links))


def declare(result: BenchResult) -> None:
    def ms(name: str, text: str) -> None:
        result.declare(name, "ms", x_label=X_LABEL, description=text)

    ms(DETECT, "From the failure to the controller recording the link down (GET /links).")
    ms(MOVE, "From the controller learning of the failure to each connection rerouted.")
    ms(MOVE_LAST, "From the controller learning of the failure to the last one rerouted.")
    ms(HANDLED_LAST, "From the failure to the last connection moved or degraded.")
    result.declare(DEGRADED, "connections", x_label=X_LABEL, description="Left degraded.")
    result.declare(
        DEGRADED_FIRST, "connections", x_label=X_LABEL, description="Degraded, then moved."
    )
    result.declare(OVER, "bit/s", x_label=X_LABEL, description="Held beyond a link's capacity.")
    result.declare(
        STALE, "bit/s", x_label=X_LABEL, description="Held on the failed element after the moves."
    )
    result.declare(LEAKED, "bit/s", x_label=X_LABEL, description="Held after every release.")
    result.declare(FLAPPED, "connections", x_label=X_LABEL, description="Moved after the return.")


def run_reroute(
    result: BenchResult,
    variants: Sequence[str],
    sizes: Sequence[int],
    file: Path,
    scene: Scene,
    bench: BenchOptions,
    progress: BenchProgress,
) -> None:
    with controller_lab(file, "sqlite") as access, access.client() as client:
        result.parameters["controller_lab"] = access.lab
        for variant in variants:
            for n in sizes:
                for k in range(bench.repeat):
                    progress.update(f"{variant}: {n} connection(s), run {k + 1}/{bench.repeat}")
                    try:
                        _one_run(result, variant, n, Run(access, client, scene))
                    except (WaitTimeout, timeline.NotLearned, ControllerError) as err:
                        result.note(f"{variant} at {n} run {k + 1}: {err}")
                    finally:
                        progress.advance()


@dataclass(frozen=True)
class Run:
    access: Access
    client: ControllerClient
    scene: Scene

    @property
    def lab(self) -> str:
        return self.access.lab

    def mine(self) -> dict[str, ConnectionView]:
        views = self.client.connections(tenant=self.scene.tenant)
        return {v.name: v for v in views if v.name.startswith("fo")}

    def link_state(self, name: str, state: str) -> bool:
        return any(v.name == name and v.status.state == state for v in self.client.links())

    def host_state(self, name: str, state: str) -> bool:
        return any(v.name == name and v.status.state == state for v in self.client.hosts())

    def histories(self, names: Sequence[str]) -> dict[str, list[ConnectionEvent]]:
        return {n: self.client.history(self.scene.tenant, n) for n in names}


def _one_run(result: BenchResult, variant: str, n: int, run: Run) -> None:
    scene = run.scene
    wait_until(lambda: run.link_state(scene.direct, "up"), SEEN, f"{scene.direct} up at first")
    names = [f"fo{k}" for k in range(n)]
    try:
        if variant == LINK:
            admitted = _admit(run, names)
            failed, restore, off = [scene.direct], _link_back, _off_link(scene)
            _on_the_element(result, variant, admitted, off)
            failed_at = _now()
            faults.set_link(run.lab, scene.direct, up=False)
        else:
            admitted = _admit_around(run, names)
            failed, restore, off = list(scene.transit_links), _host_back, _off_host(scene)
            _on_the_element(result, variant, admitted, off)
            failed_at = _now()
            faults.host_down(run.lab, scene.transit)
        try:
            _until_moved(result, variant, n, run, names, off)
            _record_failure(result, variant, n, run, failed, failed_at)
        finally:
            back_at = restore(run)
        _record_return(result, variant, n, run, names, back_at)
    finally:
        _release(run, names)
    result.record(LEAKED, variant, timeline.reserved_bps(run.client.links()), x=n)


def _now() -> datetime:
    return datetime.now(UTC)


def _request(name: str, k: int) -> ConnectionRequest:
    return ConnectionRequest.model_validate(
        {"name": name, "a": SRC, "b": DST, "protocol": "udp", "dst_port": FIRST_PORT + k,
         "bandwidth": BANDWIDTH}
    )  # fmt: skip


def _admit(run: Run, names: Sequence[str]) -> list[ConnectionView]:
    """Each connection admitted, one after the other (the controller answers when it runs)."""
    tenant = run.scene.tenant
    return [
        run.client.request_connection(tenant, _request(name, k)).connection
        for k, name in enumerate(names)
    ]


def _on_the_element(
    result: BenchResult, variant: str, admitted: Sequence[ConnectionView], off: Off
) -> None:
    """Said in the report if the controller placed some elsewhere than across the element
    that fails (they are then not moved, and the figures are of the others)."""
    elsewhere = [v.name for v in admitted if off(v)]
    if elsewhere:
        result.note(f"{variant}: {', '.join(elsewhere)} not across the failed element")


def _admit_around(run: Run, names: Sequence[str]) -> list[ConnectionView]:
    """Admitted while the direct link is down, so each runs through the transit host; then
    the link is back (they stay where they are)."""
    scene = run.scene
    faults.set_link(run.lab, scene.direct, up=False)
    try:
        wait_until(lambda: run.link_state(scene.direct, "down"), SEEN, f"{scene.direct} down")
        admitted = _admit(run, names)
    finally:
        faults.set_link(run.lab, scene.direct, up=True)
    wait_until(lambda: run.link_state(scene.direct, "up"), SEEN, f"{scene.direct} up again")
    return admitted


Off = Callable[[ConnectionView], bool]


def _off_link(scene: Scene) -> Off:
    return lambda v: not timeline.crosses(v.path, [scene.direct_ends])


def _off_host(scene: Scene) -> Off:
    return lambda v: scene.transit not in v.path


def _until_moved(
    result: BenchResult, variant: str, n: int, run: Run, names: Sequence[str], off: Off
) -> None:
    """Until every connection is off the failed element, at most SETTLE s. Degraded is not
    the end: a connection degraded on the way (a move that asked a host's agent gone with
    its power) is tried again, and moved, once the controller knows the host is gone."""

    def moved() -> bool:
        views = run.mine()
        return all(name in views and off(views[name]) for name in names)

    try:
        wait_until(moved, SETTLE, "every connection off the failed element", interval=POLL)
    except WaitTimeout as err:  # what the controller did by then is recorded all the same
        result.note(f"{variant} at {n}: {err}")


def _record_failure(
    result: BenchResult,
    variant: str,
    n: int,
    run: Run,
    failed: Sequence[str],
    failed_at: datetime,
) -> None:
    links = run.client.links()
    learned = timeline.learned_at(links, failed, failed_at)
    found = timeline.outcomes(run.histories(sorted(run.mine())), failed_at)
    figures = timeline.figures(found, failed_at, learned)
    result.record(DETECT, variant, timeline.ms_between(failed_at, learned), x=n)
    if figures.moves:
        result.add(MOVE, variant, figures.moves, x=n)
        result.record(MOVE_LAST, variant, max(figures.moves), x=n)
    if figures.handled_last is not None:
        result.record(HANDLED_LAST, variant, figures.handled_last, x=n)
    result.record(DEGRADED, variant, figures.degraded, x=n)
    result.record(DEGRADED_FIRST, variant, figures.degraded_then_moved, x=n)
    for why in figures.reasons:
        result.note(f"{variant} at {n}: degraded because {why}")
    result.record(OVER, variant, timeline.over_admitted_bps(links), x=n)
    if not figures.degraded:  # a degraded connection keeps its reservations where they were
        result.record(STALE, variant, timeline.reserved_bps(links, failed), x=n)
    if figures.unhandled:
        quiet = ", ".join(figures.unhandled)
        result.note(f"{variant} at {n}: nothing in the history of {quiet} after the failure")


def _link_back(run: Run) -> datetime:
    back_at = _now()
    faults.set_link(run.lab, run.scene.direct, up=True)
    wait_until(lambda: run.link_state(run.scene.direct, "up"), SEEN, f"{run.scene.direct} up")
    return back_at


def _host_back(run: Run) -> datetime:
    scene = run.scene
    back_at = _now()
    faults.host_up(run.lab, scene.transit)
    wait_until(lambda: run.host_state(scene.transit, "up"), HOST_BACK, f"{scene.transit} up", POLL)
    for link in scene.transit_links:
        wait_until(lambda link=link: run.link_state(link, "up"), SEEN, f"{link} up")  # type: ignore[misc]
    wait_until(lambda: _reconciled(run), RECONCILED, f"{scene.transit} reconciled", POLL)
    return back_at


def _reconciled(run: Run) -> bool:
    """Whether the transit host's agent holds no more connection pieces than connections
    cross it. Back from a power failure, it restored the pieces of the connections moved
    off it meanwhile; the controller removes them when its reconcile watcher next finds
    the agent answering, and until then a new connection given one of their numbers is
    refused by that agent: the next run starts only once they are gone."""
    host = run.scene.transit
    crossing = sum(host in v.path for v in run.mine().values())
    with NetconfClient(agent_endpoint(run.lab, host)) as agent:
        srv6 = agent.guarantees().get(qualified("srv6"), {})
    return len(srv6.get("connection", [])) <= crossing


def _record_return(
    result: BenchResult, variant: str, n: int, run: Run, names: Sequence[str], back_at: datetime
) -> None:
    """Watch the connections for WATCH s after the return (a move back would show as a
    path change in GET /connections), then count what their histories say changed."""
    paths = {name: view.path for name, view in run.mine().items()}

    def changed() -> bool:
        return any(view.path != paths.get(name) for name, view in run.mine().items())

    with contextlib.suppress(WaitTimeout):  # a watch: what is expected is that nothing comes
        wait_until(changed, WATCH, "a path change", interval=POLL)
    result.record(FLAPPED, variant, len(timeline.flapped(run.histories(names), back_at)), x=n)


def _release(run: Run, names: Sequence[str]) -> None:
    for name in sorted(set(names) & set(run.mine())):
        run.client.release(run.scene.tenant, name)
