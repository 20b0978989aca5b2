"""vnet bench mgmt: bytes on the wire and the agent's CPU time, from recorded /proc samples.

The samples were read around one NETCONF create with a new session (SSH
handshake included): 22 frames, 13033 bytes on lo; the agent's main thread ran
12.43 ms, its ticks moved by 2 user and 1 system.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vnet.bench.mgmt.accounting import Cost, CpuBatch, Reading, cost, wire_delta
from vnet.tools import procfs

RECORDED = Path(__file__).parent / "recorded" / "mgmt"


def text(name: str) -> str:
    return (RECORDED / name).read_text()


def cpu(stat: str, *schedstats: str) -> procfs.ProcessCpu:
    user, system = procfs.parse_stat_cpu(text(stat))
    return procfs.ProcessCpu(user, system, sum(procfs.parse_schedstat(text(s)) for s in schedstats))


def lo(name: str) -> procfs.IfCounters:
    return procfs.parse_net_dev(text(name))["lo"]


def test_stat_cpu_fields_survive_a_name_with_spaces() -> None:
    assert procfs.parse_stat_cpu(text("agent_stat_before.txt")) == (812, 97)
    assert procfs.parse_stat_cpu("7 (a) b) c) S " + " ".join(["0"] * 10) + " 5 6 0") == (5, 6)


def test_schedstat_is_the_first_number_in_nanoseconds() -> None:
    assert procfs.parse_schedstat(text("schedstat_main_before.txt")) == 8123456789


def test_net_dev_has_the_bytes() -> None:
    counters = lo("lo_before.txt")
    assert (counters.tx_bytes, counters.rx_bytes, counters.tx_packets) == (1204331, 1204331, 9120)


def test_one_operation_costs_the_deltas() -> None:
    before = Reading(cpu("agent_stat_before.txt", "schedstat_main_before.txt"), lo("lo_before.txt"))
    after = Reading(cpu("agent_stat_after.txt", "schedstat_main_after.txt"), lo("lo_after.txt"))
    c = cost(before, after)
    assert c.wire_bytes == 13033  # one direction: lo's receive counter sees the same frames
    assert c.packets == 22
    assert c.cpu_ms == pytest.approx(12.434445)
    assert (c.user_ticks, c.system_ticks) == (2, 1)


def test_a_thread_that_ended_never_makes_time_negative() -> None:
    before = Reading(
        cpu("agent_stat_before.txt", "schedstat_main_before.txt", "schedstat_thread.txt"),
        lo("lo_before.txt"),
    )
    after = Reading(cpu("agent_stat_after.txt", "schedstat_main_before.txt"), lo("lo_after.txt"))
    assert cost(before, after).cpu_ms == 0.0


def test_a_gone_process_costs_no_cpu_but_its_bytes() -> None:
    c = cost(Reading(None, lo("lo_before.txt")), Reading(None, lo("lo_after.txt")))
    assert c == Cost(None, 0, 0, 13033, 22)


def test_counters_going_backwards_are_an_error() -> None:
    with pytest.raises(ValueError, match="backwards"):
        wire_delta(lo("lo_after.txt"), lo("lo_before.txt"))


def test_ticks_are_attributed_per_operation_over_the_batch() -> None:
    batch = CpuBatch(ticks_per_second=100)
    assert batch.per_operation_ms() is None
    for user, system, ns_ms in ((1, 0, 9.0), (0, 0, 4.0), (1, 1, 11.0), (0, 0, 6.0)):
        batch.add(Cost(ns_ms, user, system, 0, 0))
    # 2 user ticks and 1 system tick of 10 ms over 4 operations
    assert batch.per_operation_ms() == pytest.approx((5.0, 2.5))
    assert batch.agreement() == pytest.approx(30.0 / 30.0)
