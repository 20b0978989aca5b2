"""vnet.tools: the pure parts of the wrappers (parsers, percentiles, argv), without root."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from vnet.bench.stats import percentile as numpy_percentile
from vnet.tools import fping, iperf3, processes, procfs

SNMP = """\
Icmp: InMsgs InErrors InEchos
Icmp: 12 0 7
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors
Udp: 100 2 0 90 5 0
"""
SNMP6 = "Icmp6InEchos                    \t3\nUdp6RcvbufErrors                \t4\n"


def test_snmp_counters_by_protocol_and_name() -> None:
    v4 = procfs.parse_snmp(SNMP)
    assert v4["Icmp:InEchos"] == 7 and v4["Udp:RcvbufErrors"] == 5 and v4["Udp:NoPorts"] == 2
    assert procfs.parse_snmp6(SNMP6) == {"Icmp6InEchos": 3, "Udp6RcvbufErrors": 4}


def test_backlog_drops_are_summed_over_the_cpus_in_hexadecimal() -> None:
    softnet = (
        "0ebf7670 00000000 0000005a 00000000 00000000 00000000 00000000 00000000\n"
        "099f9072 0000001a 00000068 00000000 00000000 00000000 00000000 00000000\n"
    )
    assert procfs.parse_softnet_drops(softnet) == 26
    assert procfs.backlog_drops() >= 0  # this machine's file parses


def test_pid_stat_survives_a_command_name_with_spaces_and_parentheses() -> None:
    stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1 2"
    assert procfs.parse_pid_stat(stat) == ("S", 987654)


def test_our_own_start_time_is_read_and_a_record_knows_us() -> None:
    assert procfs.start_time(os.getpid()) is not None
    rec = processes.record_pid(os.getpid(), "this test")
    assert rec is not None and processes.is_running(rec)
    assert processes.record_pid(2**22 + 1, "no such process") is None  # above pid_max


def test_memory_of_ourselves_and_of_nobody() -> None:
    mine = procfs.memory_of(os.getpid())
    assert mine["VmRSS"] > 1 and mine["VmHWM"] >= mine["VmRSS"]
    assert procfs.memory_of(2**22 + 1) == {}


@pytest.mark.parametrize("q", [0, 1, 25, 50, 90, 99, 100])
def test_fping_percentile_is_numpy_s(q: float) -> None:
    values = [0.31, 0.02, 5.5, 0.7, 0.7, 1.25, 0.04, 3.0]
    assert fping.percentile(values, q) == pytest.approx(numpy_percentile(values, q))


def test_fping_argv_and_bound() -> None:
    argv = fping.fping_argv("10.0.0.2", 5, source="10.0.0.1", interval_ms=20, timeout_ms=300)
    assert argv == ["fping", "-C", "5", "-p", "20", "-t", "300", "-q", "-S", "10.0.0.1", "10.0.0.2"]
    assert fping.fping_timeout(5, 20, 300) > 5 * 0.02 + 0.3


def test_iperf3_client_argv() -> None:
    udp = iperf3.client_argv("10.0.0.2", "3", port=5301, udp_rate="100M", length=1400)
    assert udp[:5] == ["iperf3", "-c", "10.0.0.2", "-p", "5301"]
    assert udp[5:] == ["-u", "-b", "100M", "-l", "1400", "-t", "3", "-J"]
    tcp = iperf3.client_argv("10.0.0.2", 1.5, tcp_rate="50000000", streams=4)
    assert tcp[-5:] == ["-P", "4", "-t", "1.5", "-J"] and "-b" in tcp and "-u" not in tcp


def test_a_python_module_child_ignores_a_same_named_file_in_its_directory(
    tmp_path: Path,
) -> None:
    """vnet starts its agents and controllers (as root) from wherever `vnet lab up` ran: a
    module there named like one they import (someone's grp.py in /tmp) must not run."""
    (tmp_path / "grp.py").write_text("raise SystemExit('the grp.py of the directory ran')\n")
    (tmp_path / "click.py").write_text("raise SystemExit('the click.py of the directory ran')\n")
    done = subprocess.run(
        [*processes.python_module("vnet"), "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "vnet, version" in done.stdout, done.stderr


def test_every_python_child_of_vnet_is_started_through_python_module() -> None:
    """No `sys.executable, "-m"` of its own anywhere else in vnet (the class of the bug)."""
    source = Path(processes.__file__).parents[1]
    own = re.compile(r"sys\.executable\s*,\s*\"-m\"")
    found = [
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if own.search(path.read_text()) and path != Path(processes.__file__)
    ]
    assert found == []
