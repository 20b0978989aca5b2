"""The failover benchmark's runs: per variant a lab, per run a probe across a failure."""

from __future__ import annotations

import contextlib
import tempfile
import threading
from pathlib import Path
from typing import Any

from vnet.bench.failover import reroute
from vnet.bench.failover.converged import Converged, expected, lagging
from vnet.bench.failover.goals import reroute_headline
from vnet.bench.failover.scenario import (
    DST,
    SRC,
    dead_interval_s,
    destination,
    failed_link,
    reply_ttl,
    variant,
    write,
)
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult, tool_version
from vnet.lab import faults
from vnet.lab import lab as labmod
from vnet.lab.shaping import FlowError, FlowResult, run_flow
from vnet.tools import procfs
from vnet.tools.wait import WaitTimeout, wait_until

RATE_PPS = 1000
PAYLOAD = 64  # bytes of UDP payload per datagram
FAIL_AT = 1.0  # seconds into the run
TAIL = 2.0  # seconds of the run after the link is back (iperf3's results need a path)
CONVERGE = 60.0  # seconds a lab may take to reach the direct path (OSPF Full)
PORT = 5411
DIRECT_VRS = 2  # r1 and r3
INITIAL_TTL = 64  # Linux's
OUTAGE, LOST = "outage", "lost"


def run_failover(plan: dict[str, Any], bench: BenchOptions) -> BenchResult:
    """The routing variants (a probe across a failure) then the reroute variants (the
    controller's connections), each in labs of their own."""
    routing, rerouting = plan["routing"], plan["rerouting"]
    result = BenchResult.start(
        "failover",
        parameters={**bench.as_parameters(), "variants": routing + rerouting},
        tools={"iperf3": tool_version(["iperf3", "--version"])},
        description=DESCRIPTION,
    )
    steps = (len(routing) + len(rerouting) * len(plan.get("sizes", []))) * bench.repeat
    with BenchProgress("failover", total=steps, quiet=bench.quiet) as progress:
        if routing:
            _routing(result, plan["base"], plan["file"], routing, bench, progress)
        if rerouting:
            result.parameters.update(
                controller_file=str(plan["controller_file"]),
                connections=plan["sizes"],
                connection_bandwidth=reroute.BANDWIDTH,
            )
            reroute.declare(result)
            scene = plan["scene"]
            reroute.run_reroute(
                result, rerouting, plan["sizes"], plan["controller_file"], scene, bench, progress
            )
    return result


DESCRIPTION = (
    "Routing variants (bfd, ospf, static): a constant UDP probe across an underlay link "
    "that fails and comes back; the outage is the datagrams lost divided by the rate "
    "(RFC 6413's loss-derived convergence time); static is the baseline without dynamic "
    "routing, which does not recover until the link returns. Reroute variants: guaranteed "
    "connections the controller moves off a failed link (reroute-link) or host "
    "(reroute-host), timed from the controller's own records."
)


def _routing(
    result: BenchResult,
    base: dict[str, Any],
    file: Path,
    chosen: list[str],
    bench: BenchOptions,
    progress: BenchProgress,
) -> None:
    link = failed_link(base)
    result.parameters.update(
        file=str(file),
        failed_link=link,
        probe=f"UDP {SRC} -> {DST}, {RATE_PPS} datagrams/s of {PAYLOAD} B",
        fail_at_s=FAIL_AT,
        link_down_s=bench.duration - FAIL_AT - TAIL,
        dead_interval_s=dead_interval_s(base),
    )
    result.declare(OUTAGE, "ms", description="Lost datagrams / rate: how long pc3 was cut off.")
    result.declare(LOST, "datagrams", description="Datagrams lost in the network in a run.")
    with tempfile.TemporaryDirectory(prefix="vnet-failover-") as tmp:
        for name in chosen:
            data = variant(base, name)
            _measure(result, name, data, write(data, Path(tmp) / f"{name}.yaml"), bench, progress)


def _measure(
    result: BenchResult,
    name: str,
    data: dict[str, Any],
    path: Path,
    bench: BenchOptions,
    progress: BenchProgress,
) -> None:
    lab, link, address = data["name"], failed_link(data), destination(data)
    if lab in labmod.running_labs():
        labmod.down(lab)  # an interrupted earlier run
    try:
        labmod.up(path)
        hold = bench.duration - FAIL_AT - TAIL
        for run in range(bench.repeat):
            progress.update(f"{name}: run {run + 1}/{bench.repeat}")
            try:
                _settled(lab, address, expected(data))
                flow = _across_a_failure(lab, link, address, bench.duration, hold)
            except FlowError as err:
                result.note(f"{name} run {run + 1}: {err}")
                continue
            except WaitTimeout as err:  # a run would not start from the converged network
                result.note(f"{name} run {run + 1} and after: not run: {err}")
                break
            finally:
                progress.advance()
            _record(result, name, flow.lost_packets, flow.receiver_drops, hold)
    finally:
        labmod.down(lab)


def _across_a_failure(lab: str, link: str, address: str, seconds: float, hold: float) -> FlowResult:
    """The probe for `seconds`; `link` down for `hold` seconds from FAIL_AT, or from when
    the probe reaches pc3 if it is later (iperf3 may take a while to start: a failure
    before it sends would cut nothing, and its own connection would wait it out)."""
    restore = threading.Timer(hold, lambda: faults.set_link(lab, link, up=True))
    receiver = f"vnet-{lab}-{DST}"
    before = _received(receiver)

    def fail() -> None:
        with contextlib.suppress(WaitTimeout):
            wait_until(
                lambda: _received(receiver) - before >= RATE_PPS // 10,
                TAIL / 2,
                "the probe reaches pc3",
                interval=0.02,
            )
        faults.set_link(lab, link, up=False)
        restore.start()

    try:
        return run_flow(
            f"vnet-{lab}-{SRC}",
            receiver,
            address,
            seconds=seconds,
            protocol="udp",
            rate_bps=RATE_PPS * PAYLOAD * 8,
            length=PAYLOAD,
            port=PORT,
            at=(FAIL_AT, fail),
        )
    finally:
        restore.cancel()
        if restore.is_alive():
            restore.join()
        faults.set_link(lab, link, up=True)


def _received(ns: str) -> int:
    return procfs.snmp_counters(ns)["Udp:InDatagrams"]


def _record(
    result: BenchResult, name: str, lost: int | None, at_receiver: int | None, hold: float
) -> None:
    if lost is None:
        result.note(f"{name}: iperf3 reported no loss count")
        return
    in_network = max(0, lost - (at_receiver or 0))
    result.record(LOST, name, in_network)
    result.record(OUTAGE, name, in_network * 1000 / RATE_PPS)
    if in_network * 1000 / RATE_PPS >= hold * 1000 * 0.95:
        result.note(f"{name}: not restored while the link was down ({hold:.0f} s)")


def _settled(lab: str, address: str, network: Converged) -> None:
    """Wait until pc1 and pc3 talk along the direct path both ways (a request that may
    cross only DIRECT_VRS VRs, one fewer than through r2, is answered, and the answer
    arrives having crossed as many), and OSPF has converged (converged.py says why)."""
    wait_until(
        lambda: reply_ttl(lab, address, DIRECT_VRS) == INITIAL_TTL - DIRECT_VRS,
        CONVERGE,
        f"{DST} answers along the direct path",
        interval=0.2,
    )
    what = "OSPF converged (adjacencies, LSAs, routes, BFD sessions)"
    try:
        wait_until(lambda: lagging(lab, network) is None, CONVERGE, what, interval=0.2)
    except WaitTimeout as err:
        raise WaitTimeout(f"{what}; still: {lagging(lab, network)}", err.timeout) from None


def worst(result: BenchResult, series: str) -> float | None:
    found = result.get(OUTAGE, series)
    return max(found.samples) if found is not None and found.samples else None


def dead_interval_ms(result: BenchResult) -> float | None:
    dead = result.parameters.get("dead_interval_s")
    return float(dead) * 1000 if dead is not None else None


def headline(result: BenchResult) -> str | None:
    parts = []
    for series in result.series_names(OUTAGE):
        found = result.get(OUTAGE, series)
        if found is not None and found.samples:
            s = found.summary()
            parts.append(f"{series} {s.p50:.0f} ms (worst {max(found.samples):.0f})")
    lines = ["outage after a link failure: " + ", ".join(parts)] if parts else []
    moved = reroute_headline(result)
    if moved:
        lines.append("controller's reroute (p50): " + ", ".join(moved))
    return "; ".join(lines) or None
