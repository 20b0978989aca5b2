"""vnet bench dataplane/forwarding without root: path topologies, goals, reports from samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from vnet.bench.dataplane import DATAPLANE_KINDS
from vnet.bench.dataplane import measure as dp_measure
from vnet.bench.dataplane import paths as dp_paths
from vnet.bench.dataplane import summary as dp_summary
from vnet.bench.forwarding import FORWARDING_KINDS
from vnet.bench.forwarding import measure as fw_measure
from vnet.bench.forwarding import summary as fw_summary
from vnet.bench.registry import BENCHMARKS
from vnet.bench.report import write_report
from vnet.bench.results import BenchResult
from vnet.cli.bench_cmds import make_command
from vnet.model.names import lab_name_problem

RECORDED = Path(__file__).parent / "recorded"


# -- path kinds ------------------------------------------------------------------


def test_every_kind_has_a_builder_and_a_lab_code() -> None:
    assert set(dp_paths.PATH_BUILDERS) == set(dp_paths.LAB_CODES)
    assert set(DATAPLANE_KINDS) <= set(dp_paths.PATH_BUILDERS)
    assert set(FORWARDING_KINDS) <= set(dp_paths.PATH_BUILDERS)


def test_lab_names_are_valid_and_unique() -> None:
    names = dp_paths.lab_names("dp", list(dp_paths.PATH_BUILDERS))
    assert len(set(names.values())) == len(names)
    for name in names.values():
        assert lab_name_problem(name) is None, name


def test_physical_path_is_two_hosts_and_one_underlay_link() -> None:
    spec = dp_paths.physical_path("dptest")
    topo = spec.topology
    assert [h.name for h in topo.hosts] == ["src", "dst"]
    assert len(topo.links) == 1
    assert not topo.networks and not topo.routers and not topo.endhosts
    assert spec.src.ifname == "ul-dst" and spec.dst.ifname == "ul-src"
    assert spec.first_hop == spec.dst


def test_native_router_path_uses_loopbacks() -> None:
    spec = dp_paths.native_path("fwtest")
    assert [h.name for h in spec.topology.hosts] == ["src", "fwd", "dst"]
    assert spec.first_hop.node == "fwd"
    assert spec.dst_address == dp_paths.Endpoint("dst", "lo")


@pytest.mark.parametrize(("kind", "hosts"), [("bridge", 1), ("vxlan", 2)])
def test_lan_paths_share_the_addresses(kind: str, hosts: int) -> None:
    spec = dp_paths.PATH_BUILDERS[kind]("dptest")
    assert spec is not None
    topo = spec.topology
    assert len(topo.hosts) == hosts and len(topo.networks) == 1
    addresses = {eh.name: str(eh.ipv4.ip) for eh in topo.endhosts if eh.ipv4}
    assert addresses == {"src": dp_paths.SRC_ADDRESS, "dst": dp_paths.DST_ADDRESS}
    assert {eh.host for eh in topo.endhosts} == {h.name for h in topo.hosts}


@pytest.mark.parametrize("vrs", [1, 2, 4])
def test_vr_chain_routes_end_to_end(vrs: int) -> None:
    spec = dp_paths.vr_chain_path("dptest", vrs)
    topo = spec.topology
    assert len(topo.routers) == vrs and len(topo.networks) == vrs + 1
    assert spec.first_hop == dp_paths.Endpoint("r1", "eth0")
    src = next(eh for eh in topo.endhosts if eh.name == "src")
    dst = next(eh for eh in topo.endhosts if eh.name == "dst")
    assert str(src.ipv4.ip) == dp_paths.SRC_ADDRESS  # type: ignore[union-attr]
    assert str(dst.ipv4.ip) == dp_paths.DST_ADDRESS  # type: ignore[union-attr]
    # auto routing: both end hosts have a default route, every VR knows both ends
    assert src.routes and dst.routes
    for vr in topo.routers:
        known = {str(r.destination) for r in vr.routes} | {
            str(i.ipv4.network)
            for i in vr.interfaces
            if i.ipv4  # type: ignore[union-attr]
        }
        assert {"10.9.1.0/24", "10.9.2.0/24"} <= known, vr.name


def test_srv6_kind_is_a_connection_over_the_chain() -> None:
    spec = dp_paths.srv6_path("dptest")
    (conn,) = spec.topology.connections
    assert (conn.a, conn.b, conn.path, conn.bidirectional) == (
        "src",
        "dst",
        ["r1", "r2", "r3"],
        True,
    )
    assert spec.first_hop == dp_paths.Endpoint("r1", "eth0")


def test_em_kind_is_paper_001s_table_2_path() -> None:
    """hs -> R1 -> MR1 -> MR5 -> MR12 -> MR7 -> MR2 -> R2 -> hd, by auto routing."""
    spec = dp_paths.em_path("dptest")
    topo = spec.topology
    hops, here = ["R1"], "R1"
    while here != "R2":
        vr = topo.router(here)
        route = next(r for r in vr.routes if str(r.destination) == "10.10.255.0/24")
        here = next(
            other.name
            for other in topo.routers
            if any(i.ipv4 is not None and i.ipv4.ip == route.via for i in other.interfaces)
        )
        hops.append(here)
    assert hops == ["R1", "MR1", "MR5", "MR12", "MR7", "MR2", "R2"]
    assert (spec.src.node, spec.dst.node) == ("hs", "hd")


def test_native4_is_four_forwarding_hosts_and_bridged_kinds_keep_their_path() -> None:
    spec = dp_paths.PATH_BUILDERS["native4"]("dptest")
    assert [h.name for h in spec.topology.hosts] == ["src", "fwd1", "fwd2", "fwd3", "fwd4", "dst"]
    bridged = dp_paths.PATH_BUILDERS["vr4-bridged"]("dptest")
    assert bridged.kind == "vr4-bridged" and not bridged.shortcuts
    assert bridged.topology == dp_paths.PATH_BUILDERS["vr4"]("dptest").topology


def test_ping_count_fits_the_load() -> None:
    assert dp_measure.ping_count(3) == 240
    assert dp_measure.ping_count(1) == 40


# -- goals and the lead, from samples ---------------------------------------------


def synthetic(
    bridge_tput: float = 99.0,
    bridge_rtt: float = 12.0,
    baseline_loss_at_1000: float = 2.0,
) -> BenchResult:
    """Three runs per point; the physical baseline loses at 1000 Mbit/s only."""
    r = BenchResult("dataplane", baseline="physical", parameters={"kinds": ["physical", "bridge"]})
    for load, base_tput, base_loss in ((100, 100.0, 0.0), (1000, 980.0, baseline_loss_at_1000)):
        r.add("udp throughput", "physical", [base_tput] * 3, x=load)
        r.add("udp loss", "physical", [base_loss] * 3, x=load)
        r.add("udp throughput", "bridge", [bridge_tput * base_tput / 100] * 3, x=load)
        r.add("udp loss", "bridge", [0.0] * 3, x=load)
        r.add("rtt p50", "physical", [10.0, 10.0, 10.0], x=load)
        r.add("rtt p50", "bridge", [bridge_rtt] * 3, x=load)
    r.add("rtt p50", "physical", [10.0, 10.5, 9.5], x=0)
    r.add("rtt p50", "bridge", [bridge_rtt, bridge_rtt + 0.5, bridge_rtt - 0.5], x=0)
    r.add("udp max throughput", "physical", [3000.0, 3100.0, 2900.0])
    r.add("udp max throughput", "bridge", [2400.0, 2500.0, 2300.0])
    r.add("tcp throughput", "physical", [40000.0, 41000.0, 39000.0])
    r.add("tcp throughput", "bridge", [30000.0, 31000.0, 29000.0])
    return r


def test_sustained_loads_exclude_where_the_baseline_loses() -> None:
    assert dp_summary.sustained_loads(synthetic()) == [100]
    assert dp_summary.sustained_loads(synthetic(baseline_loss_at_1000=0.05)) == [100, 1000]


def test_goals_met() -> None:
    checks = dp_summary.check_goals(synthetic())
    assert [c.met for c in checks] == [True, True, True, None], checks
    assert "no vrN kind" in checks[3].detail


def test_rtt_per_hop_goal_uses_the_longest_chain() -> None:
    r = synthetic()
    r.add("rtt p50", "vr1", [13.0] * 3, x=0)
    r.add("rtt p50", "vr4", [14.0] * 3, x=0)
    goal = dp_summary.check_goals(r)[3]
    assert goal.met is True and "vr4" in goal.detail and "+1.00 µs per hop" in goal.detail
    r = synthetic()
    r.add("rtt p50", "vr2", [16.0] * 3, x=0)
    assert dp_summary.check_goals(r)[3].met is False


def test_throughput_goal_missed_says_by_how_much() -> None:
    checks = dp_summary.check_goals(synthetic(bridge_tput=90.0))
    assert checks[1].met is False
    assert "0.900" in checks[1].detail and "5.0% short" in checks[1].detail


def test_rtt_goal_missed_says_by_how_much() -> None:
    checks = dp_summary.check_goals(synthetic(bridge_rtt=18.0))
    assert checks[2].met is False
    assert "1.800" in checks[2].detail and "0.30x over" in checks[2].detail


def test_missing_kind_is_a_miss() -> None:
    r = synthetic()
    r.parameters["kinds"] = ["physical", "bridge", "srv6"]
    assert dp_summary.check_goals(r)[0].met is False


def test_no_judgement_without_a_sustained_load() -> None:
    r = BenchResult("dataplane", baseline="physical")
    r.add("udp throughput", "physical", [1.0, 1.0], x=100)
    r.add("udp loss", "physical", [5.0, 5.0], x=100)
    assert dp_summary.check_goals(r)[1].met is None


def test_lead_summary_shows_every_kind_and_the_overhead_steps() -> None:
    text = dp_summary.lead_summary(synthetic())
    assert text.startswith("## Against the physical baseline")
    assert "| bridge | 0.990" in text
    assert "physical → bridge" in text
    assert "**met**" in text and "MISSED" not in text
    assert "Loss-bounded" not in text  # no max-rate samples, no table
    assert "Sustained loads" in text and "100 Mbit/s" in text


@pytest.mark.slow  # a whole (small) bench run with its figures: not in `make check`
def test_dataplane_report_from_recorded_samples(tmp_path: Path) -> None:
    result = BenchResult.load(RECORDED / "dataplane_results.json")
    result.description = dp_summary.lead_summary(result)
    paths = write_report(result, tmp_path)
    text = paths.markdown.read_text()
    # The lead comes first, then the shared metric sections.
    assert text.index("## Against the physical baseline") < text.index("## udp throughput")
    for kind in ("bridge", "vxlan", "vr1"):
        assert f"| {kind} |" in text
    for metric in ("udp throughput", "udp jitter", "udp loss", "rtt p50", "tcp throughput"):
        assert metric in paths.plots and paths.plots[metric].stat().st_size > 1000
    assert "udp throughput per second at 100 Mbit/s" in paths.plots


# -- forwarding ----------------------------------------------------------------------


def test_forwarding_points() -> None:
    points = fw_measure.plan_points([64, 128, 512, 1500], [1, 2])
    assert [(p.size, p.cores) for p in points] == [
        (64, 1),
        (64, 2),
        (128, 1),
        (512, 1),
        (1500, 1),
    ]


def test_forwarding_report_from_recorded_samples(tmp_path: Path) -> None:
    result = BenchResult.load(RECORDED / "forwarding_results.json")
    result.description = fw_summary.lead_summary(result)
    assert result.baseline == "native"
    paths = write_report(result, tmp_path)
    text = paths.markdown.read_text()
    assert text.index("## Forwarding rate at 64 B") < text.index("## pps at 64 B")
    for kind in ("physical", "native", "bridge", "vr1"):
        assert f"| {kind} |" in text
    assert "native → vr1" in text
    assert "## CPU per packet by kernel function group" in text
    assert "pps at 64 B" in paths.plots
    assert "pps by frame size, 1 sender core" in paths.plots


def test_forwarding_lead_without_rates() -> None:
    assert "No packet rates" in fw_summary.lead_summary(BenchResult("forwarding"))


# -- command line ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        (make_command(BENCHMARKS["dataplane"]), ["--kinds", "physical,warp"], "unknown kind"),
        (make_command(BENCHMARKS["dataplane"]), ["--loads", "100,lots"], "loads"),
        (make_command(BENCHMARKS["forwarding"]), ["--sizes", "32"], "64..1518"),
        (make_command(BENCHMARKS["forwarding"]), ["--cores", "0"], "core counts"),
        (make_command(BENCHMARKS["forwarding"]), ["--kinds", "srv6"], "unknown kind"),
        (make_command(BENCHMARKS["forwarding"]), ["--max-rate-sizes", "2000"], "64..1500"),
        (make_command(BENCHMARKS["dataplane"]), ["--max-rate-sizes", "10"], "64..1500"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(
    command: object, args: list[str], message: str
) -> None:
    done = CliRunner().invoke(command, args)  # type: ignore[arg-type]
    assert done.exit_code == 2, done.output
    assert message in done.output


def test_forwarding_goals_compare_vrs_with_native_routers_in_one_run() -> None:
    r = BenchResult("forwarding", baseline="native")
    for kind, pps in (("native", 100.0), ("vr1", 96.0), ("native4", 50.0), ("vr4", 35.0)):
        r.add("pps at 64 B", kind, [pps, pps], x=1)
        r.add("pps at 64 B", kind, [pps * 2, pps * 2], x=2)
    vr1, vr4 = fw_summary.check_goals(r)
    assert vr1.met is True and "0.960" in vr1.detail and "1 core" in vr1.detail
    assert vr4.met is False and "0.700" in vr4.detail
    assert [g.met for g in fw_summary.check_goals(BenchResult("forwarding"))] == [None, None]
