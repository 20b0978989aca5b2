"""Readers of /proc: pure parsers (unit-tested on recorded files) and thin readers.

Per-namespace files (/proc/thread-self/net/...) are read with the calling
thread inside the namespace, so they show that namespace's counters.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass

from vnet.tools.errors import ToolError
from vnet.tools.netns import entered

NET = "/proc/thread-self/net"


# -- /proc/PID/stat -----------------------------------------------------------------


def parse_pid_stat(text: str) -> tuple[str, int]:
    """/proc/PID/stat -> (state letter, start time in clock ticks)."""
    # the command name (field 2) may contain spaces and parentheses
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[19])


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks, or None if it is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state, started = parse_pid_stat(f.read())
    except (OSError, IndexError, ValueError):
        return None
    return None if state in ("Z", "X") else started  # Z: exited, only the parent's wait() is left


def memory_of(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of a process in MiB (empty if it is gone)."""
    out: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024  # kB -> MiB
    return out


def children_of(pid: int) -> list[int]:
    """The direct children of a process, over all its threads."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                found.extend(int(p) for p in f.read().split())
    return found


# -- /proc/net/dev ------------------------------------------------------------------


@dataclass(frozen=True)
class IfCounters:
    rx_packets: int
    rx_dropped: int
    tx_packets: int
    tx_dropped: int
    rx_bytes: int = 0  # frame bytes (on loopback: with the 14-byte link header, as tcpdump)
    tx_bytes: int = 0


def parse_net_dev(text: str) -> dict[str, IfCounters]:
    """/proc/net/dev -> counters per interface."""
    out: dict[str, IfCounters] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        f = [int(v) for v in rest.split()]
        out[name.strip()] = IfCounters(f[1], f[3], f[9], f[11], rx_bytes=f[0], tx_bytes=f[8])
    return out


def interface_counters(ns: str, ifname: str) -> IfCounters:
    """Counters of one interface, read from inside its namespace."""
    with entered(ns), open(f"{NET}/dev") as f:
        text = f.read()
    try:
        return parse_net_dev(text)[ifname]
    except KeyError:
        raise ToolError(f"no interface {ifname} in {ns}") from None


# -- /proc/net/tcp, tcp6 ---------------------------------------------------------------


def parse_listening_ports(text: str) -> set[int]:
    """Local ports in state LISTEN from /proc/net/tcp or tcp6."""
    ports = set()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A":
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def listening(ns: str | None, port: int) -> bool:
    """Whether a TCP socket (IPv4 or IPv6) listens on `port` inside `ns`."""
    with entered(ns):
        texts = []
        for name in ("tcp", "tcp6"):
            with contextlib.suppress(OSError), open(f"{NET}/{name}") as f:
                texts.append(f.read())
    return any(port in parse_listening_ports(t) for t in texts)


# -- /proc/net/unix ----------------------------------------------------------------------

ACCEPTING = 0x10000  # __SO_ACCEPTCON in a socket's flags: listen() was called


def parse_unix_listening(text: str) -> set[str]:
    """Paths of the Unix sockets that listen, from /proc/net/unix."""
    paths = set()
    for line in text.splitlines()[1:]:
        fields = line.split(maxsplit=7)
        if len(fields) == 8 and int(fields[3], 16) & ACCEPTING:
            paths.add(fields[7])
    return paths


def unix_listening(ns: str | None, path: str) -> bool:
    """Whether a Unix socket made inside `ns` listens at `path` (a client may connect)."""
    with entered(ns), open(f"{NET}/unix") as f:
        text = f.read()
    return path in parse_unix_listening(text)


# -- /proc/net/snmp, snmp6 ---------------------------------------------------------------


def parse_snmp(text: str) -> dict[str, int]:
    """/proc/net/snmp (header line, value line per protocol) -> {"Udp:RcvbufErrors": n, ...}."""
    rows: dict[str, list[str]] = {}
    out: dict[str, int] = {}
    for line in text.splitlines():
        proto, _, rest = line.partition(":")
        if proto in rows:
            for key, value in zip(rows.pop(proto), rest.split(), strict=False):
                out[f"{proto}:{key}"] = int(value)
        else:
            rows[proto] = rest.split()
    return out


def parse_snmp6(text: str) -> dict[str, int]:
    """/proc/net/snmp6 ("Name value" lines) -> {"Udp6RcvbufErrors": n, ...}."""
    return {w[0]: int(w[1]) for line in text.splitlines() if len(w := line.split()) == 2}


def snmp_counters(ns: str | None) -> dict[str, int]:
    """The IPv4 and IPv6 protocol counters of a namespace, in one dictionary."""
    with entered(ns):
        with open(f"{NET}/snmp") as f:
            v4 = f.read()
        with open(f"{NET}/snmp6") as f:
            v6 = f.read()
    return {**parse_snmp(v4), **parse_snmp6(v6)}


# -- /proc/net/softnet_stat --------------------------------------------------------------


def parse_softnet_drops(text: str) -> int:
    """/proc/net/softnet_stat (a line per CPU, hexadecimal columns, the second the packets
    dropped because that CPU's input backlog was full) -> the drops of all CPUs."""
    return sum(int(line.split()[1], 16) for line in text.splitlines() if line.strip())


def backlog_drops() -> int:
    """Packets the kernel's input backlogs dropped since boot: machine-wide, not a namespace's
    (a stall of the machine shows here, a shaper's drop does not)."""
    with open(f"{NET}/softnet_stat") as f:
        return parse_softnet_drops(f.read())


# -- /proc/stat --------------------------------------------------------------------------

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True)
class CpuTimes:
    """Clock ticks (USER_HZ) spent per state, summed over some CPUs."""

    user: int = 0
    nice: int = 0
    system: int = 0
    idle: int = 0
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0

    @property
    def busy(self) -> int:
        return self.user + self.nice + self.system + self.irq + self.softirq

    def __sub__(self, other: CpuTimes) -> CpuTimes:
        return CpuTimes(*(getattr(self, f) - getattr(other, f) for f in CPU_FIELDS))


def parse_proc_stat(text: str, cpus: Sequence[int]) -> CpuTimes:
    """/proc/stat -> the ticks of the given CPUs, summed."""
    wanted = {f"cpu{c}" for c in cpus}
    total = [0] * len(CPU_FIELDS)
    seen: set[str] = set()
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in wanted:
            seen.add(words[0])
            for i, value in enumerate(words[1 : 1 + len(CPU_FIELDS)]):
                total[i] += int(value)
    if seen != wanted:
        raise ToolError(f"/proc/stat has no line for {sorted(wanted - seen)}")
    return CpuTimes(*total)


def cpu_times(cpus: Sequence[int]) -> CpuTimes:
    with open("/proc/stat") as f:
        return parse_proc_stat(f.read(), cpus)


def ticks_per_second() -> int:
    return os.sysconf("SC_CLK_TCK")


def write_sysctl(ns: str | None, key: str, value: str) -> None:
    """Set a sysctl of namespace `ns` (net.* ones are per namespace)."""
    with entered(ns), open("/proc/sys/" + key.replace(".", "/"), "w") as f:
        f.write(value)


# -- CPU time of one process (all its threads) ------------------------------------------


@dataclass(frozen=True)
class ProcessCpu:
    """A process's CPU time so far: user and system ticks (USER_HZ) from /proc/PID/stat,
    and the nanoseconds its live threads ran (schedstat; finer than the 10 ms ticks)."""

    user_ticks: int
    system_ticks: int
    runtime_ns: int


def parse_stat_cpu(text: str) -> tuple[int, int]:
    """/proc/PID/stat -> (utime, stime) in ticks; the name may hold spaces and ')'."""
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)


def parse_schedstat(text: str) -> int:
    """/proc/PID/task/TID/schedstat -> nanoseconds on a CPU (its first number)."""
    return int(text.split()[0])


def process_cpu(pid: int) -> ProcessCpu | None:
    """The CPU time of process `pid` and its threads, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            user, system = parse_stat_cpu(f.read())
        runtime = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                runtime += parse_schedstat(f.read())
    except (OSError, ValueError, IndexError):
        return None
    return ProcessCpu(user, system, runtime)
