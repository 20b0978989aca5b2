"""Traffic for the data-plane benchmarks: iperf3, fping and trafgen inside lab namespaces.

Parsers are pure functions of a tool's output (unit-tested on recorded outputs);
runners start the tool as a child process inside a namespace, with a timeout,
and stop it by PID (trafgen: by the process group its own PID leads, because
it forks one worker per CPU). Traffic only goes to addresses inside the lab.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vnet.bench.stats import percentile
from vnet.lab import processes
from vnet.substrate import nsfs

IPERF3_PORT = 5201
PING_INTERVAL_MS = 10  # fping -p: 100 probes a second, light next to any load
FCS_BYTES = 4  # counted in a frame size (RFC 2544), never carried by a veth
UDP_HEADERS = 14 + 20 + 8  # Ethernet + IPv4 + UDP


class ToolError(RuntimeError):
    """A traffic tool failed or printed something we cannot read."""


# -- iperf3 ----------------------------------------------------------------------


@dataclass(frozen=True)
class UdpInterval:
    """One second (one iperf3 interval) as the receiver saw it."""

    seconds: float
    mbit: float
    jitter_ms: float
    lost: int
    packets: int

    @property
    def loss_percent(self) -> float:
        return 100.0 * self.lost / self.packets if self.packets else 0.0


@dataclass(frozen=True)
class UdpRun:
    """An iperf3 UDP test, receiver side: what arrived, its jitter and its loss."""

    mbit: float  # received payload rate
    sent_mbit: float  # what the sender managed to offer
    lost: int
    packets: int
    intervals: list[UdpInterval] = field(default_factory=list)

    @property
    def loss_percent(self) -> float:
        return 100.0 * self.lost / self.packets if self.packets else 0.0

    @property
    def jitter_ms(self) -> float:
        """Mean of the per-second jitter (iperf3's RFC 3550 estimate at each interval's end)."""
        values = [i.jitter_ms for i in self.intervals]
        return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class TcpRun:
    mbit: float  # received payload rate
    retransmits: int
    srtt_ms: float | None  # the sender's smoothed RTT (tcp_info), mean over the test


def _iperf3_json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError as err:
        raise ToolError(f"iperf3 printed no JSON: {err}: {text[:200]!r}") from err
    if not isinstance(data, dict):
        raise ToolError("iperf3 printed JSON that is not an object")
    if "error" in data:
        raise ToolError(f"iperf3: {data['error']}")
    return data


def parse_iperf3_udp(text: str) -> UdpRun:
    """`iperf3 -u -J --get-server-output` (client side) -> receiver totals and seconds."""
    data = _iperf3_json(text)
    try:
        end = data["end"]
        received = end["sum_received"]
        sent = end["sum_sent"]
        server = data.get("server_output_json") or {}
        intervals = [
            UdpInterval(
                seconds=float(i["sum"]["seconds"]),
                mbit=float(i["sum"]["bits_per_second"]) / 1e6,
                jitter_ms=float(i["sum"]["jitter_ms"]),
                lost=int(i["sum"]["lost_packets"]),
                packets=int(i["sum"]["packets"]),
            )
            for i in server.get("intervals", [])
            if not i["sum"].get("omitted", False)
        ]
        return UdpRun(
            mbit=float(received["bits_per_second"]) / 1e6,
            sent_mbit=float(sent["bits_per_second"]) / 1e6,
            lost=int(received["lost_packets"]),
            packets=int(received["packets"]),
            intervals=intervals,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ToolError(f"unexpected iperf3 UDP JSON: missing or bad {err}") from err


def parse_iperf3_tcp(text: str) -> TcpRun:
    """`iperf3 -J` TCP (client side) -> received rate, retransmits and the sender's RTT."""
    data = _iperf3_json(text)
    try:
        end = data["end"]
        rtts = [
            float(s["sender"]["mean_rtt"]) / 1000  # microseconds
            for s in end.get("streams", [])
            if "mean_rtt" in s.get("sender", {})
        ]
        return TcpRun(
            mbit=float(end["sum_received"]["bits_per_second"]) / 1e6,
            retransmits=int(end["sum_sent"].get("retransmits", 0)),
            srtt_ms=sum(rtts) / len(rtts) if rtts else None,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ToolError(f"unexpected iperf3 TCP JSON: missing or bad {err}") from err


class Iperf3Server:
    """`iperf3 -s` inside a namespace for the life of a `with` block."""

    def __init__(self, ns: str, port: int = IPERF3_PORT) -> None:
        self.ns, self.port = ns, port
        self._proc: subprocess.Popen[Any] | None = None

    def __enter__(self) -> Iperf3Server:
        # -J so that clients' --get-server-output carries per-second receiver data.
        self._proc = processes.spawn(
            self.ns,
            ["iperf3", "-s", "-J", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5.0
        while not listening(self.ns, self.port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                processes.stop_child(self._proc)
                raise ToolError(f"iperf3 server in {self.ns} did not start listening")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            processes.stop_child(self._proc)


def parse_listening_ports(text: str) -> set[int]:
    """Local ports in state LISTEN from /proc/net/tcp or tcp6."""
    ports = set()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A":
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def listening(ns: str, port: int) -> bool:
    """Whether a TCP socket listens on `port` inside `ns`."""
    with nsfs.entered(ns):
        texts = []
        for name in ("tcp", "tcp6"):
            with contextlib.suppress(OSError), open(f"/proc/thread-self/net/{name}") as f:
                texts.append(f.read())
    return any(port in parse_listening_ports(t) for t in texts)


def iperf3_seconds(duration: float) -> int:
    """iperf3 -t takes whole seconds."""
    return max(1, round(duration))


@dataclass(frozen=True)
class Probe:
    """fping next to a load: `count` probes every PING_INTERVAL_MS, from `delay` s on."""

    address: str
    source: str | None
    count: int
    delay: float = 0.3


def _iperf3_with_probe(
    ns: str, argv: list[str], seconds: int, probe: Probe | None
) -> tuple[str, RttStats | None]:
    """Run an iperf3 client with fping beside it; retry briefly if the server is busy."""
    for attempt in range(3):
        proc = processes.spawn(ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ping: BackgroundPing | None = None
        try:
            if probe is not None:
                time.sleep(probe.delay)
                ping = BackgroundPing(ns, probe)
            try:
                out, _ = proc.communicate(timeout=seconds + 15)
            except subprocess.TimeoutExpired:
                raise ToolError(f"iperf3 did not finish within {seconds + 15} s") from None
            rtt = ping.result() if ping is not None else None
            ping = None
        finally:
            processes.stop_child(proc)
            if ping is not None:
                ping.cancel()
        try:
            _iperf3_json(out)
            return out, rtt
        except ToolError as err:
            # The server takes a moment between tests; anything else is a real failure.
            if attempt == 2 or not any(w in str(err) for w in ("busy", "connect", "refused")):
                raise
            time.sleep(0.3)
    raise AssertionError("unreachable")


def run_udp(
    ns: str,
    address: str,
    mbit: float | None,
    duration: float,
    length: int,
    probe: Probe | None = None,
    port: int = IPERF3_PORT,
) -> tuple[UdpRun, RttStats | None]:
    """UDP at `mbit` Mbit/s offered (None: as fast as the sender can) for `duration` s."""
    seconds = iperf3_seconds(duration)
    rate = "0" if mbit is None else f"{mbit:g}M"
    argv = ["iperf3", "-c", address, "-p", str(port), "-u", "-b", rate, "-l", str(length)]
    argv += ["-t", str(seconds), "-J", "--get-server-output"]
    out, rtt = _iperf3_with_probe(ns, argv, seconds, probe)
    return parse_iperf3_udp(out), rtt


def run_tcp(
    ns: str, address: str, duration: float, probe: Probe | None = None, port: int = IPERF3_PORT
) -> tuple[TcpRun, RttStats | None]:
    seconds = iperf3_seconds(duration)
    argv = ["iperf3", "-c", address, "-p", str(port), "-t", str(seconds), "-J"]
    out, rtt = _iperf3_with_probe(ns, argv, seconds, probe)
    return parse_iperf3_tcp(out), rtt


# -- fping -----------------------------------------------------------------------


def parse_fping(stderr: str) -> list[float | None]:
    """`fping -C N -q` output -> one RTT in ms per probe, None for a lost one."""
    for line in stderr.splitlines():
        if " : " not in line:
            continue
        fields = line.split(" : ", 1)[1].split()
        try:
            return [None if f == "-" else float(f) for f in fields]
        except ValueError as err:
            raise ToolError(f"unexpected fping line {line!r}") from err
    raise ToolError(f"fping printed no result line: {stderr[:200]!r}")


@dataclass(frozen=True)
class RttStats:
    """The distribution of one fping run's RTTs (ms); None when nothing came back."""

    sent: int
    received: int
    min: float | None
    p50: float | None
    p99: float | None
    max: float | None

    @classmethod
    def of(cls, probes: Sequence[float | None]) -> RttStats:
        rtts = [r for r in probes if r is not None]
        if not rtts:
            return cls(len(probes), 0, None, None, None, None)
        return cls(
            len(probes),
            len(rtts),
            min(rtts),
            percentile(rtts, 50),
            percentile(rtts, 99),
            max(rtts),
        )


def fping_argv(
    address: str, count: int, source: str | None = None, interval_ms: int = PING_INTERVAL_MS
) -> list[str]:
    argv = ["fping", "-C", str(count), "-p", str(interval_ms), "-t", "500", "-q"]
    return [*argv, *(["-S", source] if source else []), address]


def fping_timeout(count: int, interval_ms: int = PING_INTERVAL_MS) -> float:
    return 5 + count * interval_ms / 1000


def ping_rtts(ns: str, address: str, count: int, source: str | None = None) -> RttStats:
    """`count` pings every PING_INTERVAL_MS from `ns` (from address `source`, if given)."""
    done = processes.run(ns, fping_argv(address, count, source), timeout=fping_timeout(count))
    return RttStats.of(parse_fping(done.stderr))


class BackgroundPing:
    """fping running next to a load; `result()` waits for it and parses the RTTs."""

    def __init__(self, ns: str, probe: Probe) -> None:
        self.count = probe.count
        self._proc = processes.spawn(
            ns,
            fping_argv(probe.address, probe.count, probe.source),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def result(self) -> RttStats:
        try:
            _, err = self._proc.communicate(timeout=fping_timeout(self.count))
        except subprocess.TimeoutExpired:
            processes.stop_child(self._proc)
            raise ToolError("fping did not finish in time") from None
        return RttStats.of(parse_fping(err))

    def cancel(self) -> None:
        processes.stop_child(self._proc)


# -- trafgen ---------------------------------------------------------------------


def trafgen_packet(dst_mac: str, src_mac: str, src_ip: str, dst_ip: str, frame_size: int) -> str:
    """trafgen's description of one UDP frame of `frame_size` bytes, FCS included.

    64 B on the wire is 60 B handed to the device (a veth carries no FCS).
    """
    fill = frame_size - FCS_BYTES - UDP_HEADERS
    if fill < 0:
        raise ValueError(f"a {frame_size} B frame cannot hold Ethernet/IPv4/UDP headers")
    return (
        f"{{ eth(da={dst_mac}, sa={src_mac}), "
        f"ipv4(saddr={src_ip}, daddr={dst_ip}, ttl=64), "
        f"udp(sport=1024, dport=9), fill(0x00, {fill}) }}"
    )


def parse_trafgen_sent(stdout: str) -> int | None:
    """Packets trafgen says it sent ("N packets outgoing"), summed over its workers."""
    total, found = 0, False
    for line in stdout.splitlines():
        words = line.split()
        if len(words) >= 3 and words[1:3] == ["packets", "outgoing"]:
            total += int(words[0])
            found = True
    return total if found else None


class Trafgen:
    """trafgen blasting one frame from a namespace, for the life of a `with` block.

    trafgen forks a worker per CPU and workers ignore a signal sent to the
    parent alone, so it runs in a process group of its own and the group led
    by our child's PID is signalled; nothing else is.
    """

    def __init__(self, ns: str, ifname: str, packet: str, cpus: int) -> None:
        self.argv = ["trafgen", "--dev", ifname, "--cpus", str(cpus)]
        # Leave the machine's socket memory and IRQ affinity alone.
        self.argv += ["--no-sock-mem", "--notouch-irq", packet]
        self.ns = ns
        self.stdout = self.stderr = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Trafgen:
        self._proc = processes.spawn(
            self.ns,
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # sysctl warnings inside a namespace are expected
            text=True,
            start_new_session=True,
        )
        return self

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __exit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is None:
            return
        for sig, grace in ((signal.SIGINT, 3.0), (signal.SIGKILL, 3.0)):
            # Only while our child is unreaped is its PID (= the group's ID) surely ours.
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
            try:
                self.stdout, self.stderr = proc.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue

    @property
    def sent(self) -> int | None:
        return parse_trafgen_sent(self.stdout)

    def complaint(self) -> str:
        """trafgen's last words, without the expected sysctl warnings."""
        lines = [
            line.strip()
            for line in (self.stderr + self.stdout).splitlines()
            if line.strip() and "Cannot set system socket memory" not in line
        ]
        return "; ".join(lines[-3:])


# -- kernel counters -------------------------------------------------------------


@dataclass(frozen=True)
class IfCounters:
    rx_packets: int
    rx_dropped: int
    tx_packets: int
    tx_dropped: int


def parse_net_dev(text: str) -> dict[str, IfCounters]:
    """/proc/net/dev -> counters per interface."""
    out: dict[str, IfCounters] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        f = [int(v) for v in rest.split()]
        out[name.strip()] = IfCounters(f[1], f[3], f[9], f[11])
    return out


def interface_counters(ns: str, ifname: str) -> IfCounters:
    """Counters of one interface, read from inside its namespace."""
    with nsfs.entered(ns), open("/proc/thread-self/net/dev") as f:
        text = f.read()
    try:
        return parse_net_dev(text)[ifname]
    except KeyError:
        raise ToolError(f"no interface {ifname} in {ns}") from None


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
