"""Parsers of the traffic tools' output, on outputs recorded on this machine's kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnet.bench.forwarding.profile import (
    IDLE,
    OTHER_KERNEL,
    OTHER_PROCESSES,
    function_group,
    parse_perf_script,
)
from vnet.bench.forwarding.receiver import DROP_DISCARD
from vnet.tools import fping, iperf3, procfs, trafgen
from vnet.tools.errors import ToolError

RECORDED = Path(__file__).parent / "recorded"


def recorded(name: str) -> str:
    return (RECORDED / name).read_text()


def test_iperf3_udp_gives_receiver_totals_and_seconds() -> None:
    run = iperf3.parse_iperf3_udp(recorded("iperf3_udp.json"))
    assert run.mbit == pytest.approx(199.6, abs=1.0)  # 200 Mbit/s offered, 2 s
    assert run.sent_mbit == pytest.approx(200.0, abs=0.5)
    assert run.packets > 35_000
    assert 0 <= run.loss_percent < 5
    assert len(run.intervals) == 2
    assert all(i.mbit == pytest.approx(200, abs=5) for i in run.intervals)
    assert run.jitter_ms == pytest.approx(sum(i.jitter_ms for i in run.intervals) / 2)
    assert sum(i.packets for i in run.intervals) == run.packets


def test_iperf3_tcp_gives_rate_retransmits_and_srtt() -> None:
    run = iperf3.parse_iperf3_tcp(recorded("iperf3_tcp.json"))
    assert run.mbit > 1000
    assert run.retransmits >= 0
    assert run.srtt_ms is not None and 0 < run.srtt_ms < 10


def test_iperf3_error_becomes_tool_error() -> None:
    with pytest.raises(ToolError, match="Connection refused"):
        iperf3.parse_iperf3_tcp(recorded("iperf3_refused.json"))
    with pytest.raises(ToolError, match="no JSON"):
        iperf3.parse_iperf3_udp("iperf3: error - the server is busy")
    with pytest.raises(ToolError, match="unexpected"):
        iperf3.parse_iperf3_udp('{"end": {}}')


def test_fping_rtts_and_losses() -> None:
    rtts = fping.parse_fping(recorded("fping.txt"))
    assert len(rtts) == 20 and all(r is not None and r > 0 for r in rtts)
    assert fping.parse_fping(recorded("fping_lost.txt")) == [None] * 4
    mixed = fping.parse_fping("10.9.2.2 : 0.010 - 0.030\n")
    assert mixed == [0.010, None, 0.030]
    with pytest.raises(ToolError):
        fping.parse_fping("fping: can't create socket\n")


def test_rtt_distribution() -> None:
    stats = fping.RttStats.of([0.004, None, 0.002, 0.010, 0.006])
    assert (stats.sent, stats.received) == (5, 4)
    assert stats.min == 0.002 and stats.max == 0.010
    assert stats.p50 == pytest.approx(0.005)
    assert 0.006 < stats.p99 <= 0.010  # type: ignore[operator]
    empty = fping.RttStats.of([None, None])
    assert empty.received == 0 and empty.p50 is None


def test_fping_argv_sets_source_only_when_given() -> None:
    assert "-S" not in fping.fping_argv("10.9.2.2", 5)
    argv = fping.fping_argv("10.9.2.2", 5, source="10.9.1.2")
    assert argv[-3:] == ["-S", "10.9.1.2", "10.9.2.2"]


@pytest.mark.parametrize(("frame", "fill"), [(64, 18), (128, 82), (512, 466), (1500, 1454)])
def test_trafgen_frame_sizes_count_the_fcs(frame: int, fill: int) -> None:
    packet = trafgen.trafgen_packet(
        "aa:bb:cc:dd:ee:ff", "02:00:00:00:00:01", "10.9.1.2", "10.9.2.2", frame
    )
    assert f"fill(0x00, {fill})" in packet
    assert "eth(da=aa:bb:cc:dd:ee:ff, sa=02:00:00:00:00:01)" in packet
    assert "ipv4(saddr=10.9.1.2, daddr=10.9.2.2, ttl=64)" in packet
    # Ethernet 14 + IPv4 20 + UDP 8 + fill = frame - FCS
    assert 14 + 20 + 8 + fill == frame - 4


def test_trafgen_frame_too_small() -> None:
    with pytest.raises(ValueError):
        trafgen.trafgen_packet("aa:bb:cc:dd:ee:ff", "02:00:00:00:00:01", "1.1.1.1", "2.2.2.2", 40)


def test_trafgen_sent_packets() -> None:
    assert trafgen.parse_trafgen_sent(recorded("trafgen_2cpus.txt")) == 422_400
    assert trafgen.parse_trafgen_sent("Running! Hang up with ^C!\n") is None


def test_net_dev_counters() -> None:
    counters = procfs.parse_net_dev(recorded("net_dev.txt"))
    assert {"lo", "eth0"} <= set(counters)
    eth0 = counters["eth0"]
    assert eth0.rx_packets > 30_000 and eth0.tx_packets > 0


def test_proc_stat_sums_the_chosen_cpus() -> None:
    text = recorded("proc_stat.txt")
    cpu0, cpu1 = procfs.parse_proc_stat(text, [0]), procfs.parse_proc_stat(text, [1])
    both = procfs.parse_proc_stat(text, [0, 1])
    assert both.softirq == cpu0.softirq + cpu1.softirq
    assert both.busy == cpu0.busy + cpu1.busy
    assert (both - cpu0) == cpu1
    with pytest.raises(ToolError):
        procfs.parse_proc_stat(text, [7])


def test_listening_ports_from_proc_net_tcp6() -> None:
    # One connection in TIME_WAIT on 5201 (not listening) and iperf3 listening on 5299.
    assert procfs.parse_listening_ports(recorded("tcp6.txt")) == {5299}


def test_listening_unix_sockets_from_proc_net_unix() -> None:
    # a VR's FRR: zebra's API socket listens and has three clients connected at the same
    # path (state 03, no listening flag); sockets without a path are left out
    assert procfs.parse_unix_listening(recorded("unix.txt")) == {
        "/var/run/frr/bfdd.sock",
        *(f"/run/vnet-frr/svv.h1/r1/{name}" for name in ("bfdd.vty", "ospfd.vty", "ospf6d.vty")),
        "/run/vnet-frr/svv.h1/r1/zserv.api",
        "/run/vnet-frr/svv.h1/r1/zebra.vty",
    }


def test_iperf3_seconds_are_whole() -> None:
    assert iperf3.iperf3_seconds(0.4) == 1
    assert iperf3.iperf3_seconds(2.6) == 3


def test_perf_samples_grouped_by_kernel_function() -> None:
    groups = parse_perf_script(recorded("perf_script.txt"))
    assert "bridge" in groups and "netfilter" in groups
    assert groups[OTHER_PROCESSES] > 0  # the machine was shared
    assert groups[IDLE] > 0
    assert sum(groups.values()) == 161  # every line is one sample


@pytest.mark.parametrize(
    ("comm", "symbol", "kernel", "group"),
    [
        ("trafgen", "packet_sendmsg", True, "sender"),
        ("trafgen", "br_nf_pre_routing", True, "netfilter"),
        ("trafgen", "br_handle_frame", True, "bridge"),
        ("ksoftirqd/0", "ip_forward", True, "ip fwd"),
        ("swapper", "veth_xmit", True, "veth"),
        ("swapper", "pv_native_safe_halt", True, IDLE),
        ("trafgen", "[unknown]", False, "sender"),
        ("trafgen", "schedule", True, OTHER_KERNEL),
        ("cc1", "br_handle_frame", True, OTHER_PROCESSES),
    ],
)
def test_function_groups(comm: str, symbol: str, kernel: bool, group: str) -> None:
    assert function_group(comm, symbol, kernel) == group


def test_drop_program_checks_four_fields_and_every_jump_lands_on_pass() -> None:
    insns = [DROP_DISCARD[i : i + 8] for i in range(0, len(DROP_DISCARD), 8)]
    assert len(insns) == 17 and insns[-1][0] == insns[14][0] == 0x95  # two exits
    pass_at = 15
    jumps = [
        (i, int.from_bytes(x[2:4], "little", signed=True))
        for i, x in enumerate(insns)
        if x[0] in (0x2D, 0x55)
    ]
    assert len(jumps) == 5 and all(i + off + 1 == pass_at for i, off in jumps)
