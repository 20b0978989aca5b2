"""Measuring shapers: one iperf3 flow, the shaper's own byte counters, and RTT meanwhile.

A shaper is judged by the bytes it lets through, counted where it counts them
(layer 2, the HTB class's counter): the class counter is read twice while the
flow is steady (after a warm-up, before the end), so slow start and the
initial burst do not inflate the rate. iperf3 reports the payload the receiver
got and, for UDP, the datagrams lost by sequence number. fping runs alongside,
through the same shaper when the flow's path carries ICMP too.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vnet.lab import processes
from vnet.lab.probes import PingResult, fping
from vnet.substrate import Kernel
from vnet.substrate.tc import class_counters


@dataclass(frozen=True)
class ClassRef:
    """One HTB class: namespace, interface, classid (e.g. 0x760001 for 76:1)."""

    ns: str
    dev: str
    classid: int


@dataclass
class ClassSample:
    t: float
    bytes: int
    packets: int
    drops: int


def sample_class(kernel: Kernel, ref: ClassRef) -> ClassSample:
    before = time.monotonic()
    counters = class_counters(kernel, ref.ns, ref.dev)
    t = (before + time.monotonic()) / 2
    b, p, d = counters.get(ref.classid, (0, 0, 0))
    return ClassSample(t, b, p, d)


@dataclass
class FlowResult:
    protocol: str
    seconds: float
    offered_bps: float | None  # UDP: what iperf3 sent (payload)
    payload_bps: float  # what the receiver got (payload)
    l2_bps: float | None = None  # the class's byte counter over the steady window
    # other classes read at the same moments, over the same window (e.g. the link's root)
    also_l2_bps: dict[ClassRef, float] = field(default_factory=dict)
    window_s: float = 0.0
    class_drops: int = 0
    lost_packets: int | None = None  # UDP, by sequence number
    packets: int | None = None
    ping: PingResult | None = None
    retransmits: int | None = None
    # datagrams the receiving host dropped itself (socket buffer full): lost, but
    # not in the network; a starved iperf3 server shows up here
    receiver_drops: int | None = None
    error: str | None = None
    iperf: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def loss(self) -> float | None:
        if self.lost_packets is None or not self.packets:
            return None
        return self.lost_packets / self.packets


SAMPLE_INTERVAL = 0.05  # seconds between reads of the shaper's counters


class FlowError(RuntimeError):
    pass


def udp_receive_errors(ns: str) -> int:
    """UDP datagrams `ns` dropped for want of socket buffer (IPv4 and IPv6)."""
    from vnet.substrate import nsfs

    total = 0
    with nsfs.entered(ns):
        with open("/proc/thread-self/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith("Udp:")]
        with open("/proc/thread-self/net/snmp6") as f:
            v6 = f.read().split()
    total += int(rows[1][rows[0].index("RcvbufErrors")])
    if "Udp6RcvbufErrors" in v6:
        total += int(v6[v6.index("Udp6RcvbufErrors") + 1])
    return total


def wait_listening(ns: str, port: int, timeout: float = 5.0) -> None:
    """Until a TCP socket listens on `port` inside `ns` (iperf3 -s takes a moment)."""
    from vnet.substrate import nsfs

    want = f":{port:04X} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with nsfs.entered(ns):
            for table in ("/proc/thread-self/net/tcp6", "/proc/thread-self/net/tcp"):
                try:
                    with open(table) as f:
                        for line in f:
                            cols = line.split()
                            if len(cols) > 3 and cols[3] == "0A" and want in cols[1] + " ":
                                return
                except OSError:
                    continue
        time.sleep(0.01)
    raise FlowError(f"no iperf3 server listening on port {port} in {ns}")


def run_flow(
    client_ns: str,
    server_ns: str,
    address: str,
    *,
    seconds: float,
    protocol: str = "tcp",
    rate_bps: float | None = None,
    length: int | None = None,
    port: int = 5201,
    streams: int = 1,
    shaper: ClassRef | None = None,
    also: tuple[ClassRef, ...] = (),
    warmup: float | None = None,
    ping_from: str | None = None,
    ping_to: str | None = None,
    ping_interval_ms: int = 20,
    ping_timeout_ms: int = 2000,
    at: tuple[float, Callable[[], None]] | None = None,
) -> FlowResult:
    """One iperf3 flow of `seconds`; samples `shaper` while steady; pings and calls `at`."""
    warm = warmup if warmup is not None else min(1.0, max(0.25, seconds * 0.2))
    server = processes.spawn(
        server_ns,
        ["iperf3", "-s", "-1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    argv = ["iperf3", "-c", address, "-p", str(port), "-t", f"{seconds:g}", "-J"]
    if streams > 1:
        argv += ["-P", str(streams)]
    if protocol == "udp":
        # a 4 MB socket buffer (up to net.core.rmem_max) so that a receiver starved of
        # CPU for a moment does not drop what the network delivered
        argv += ["-u", "-b", str(int(rate_bps or 1_000_000)), "-w", "4M"]
    elif rate_bps:
        argv += ["-b", str(int(rate_bps))]
    if length:
        argv += ["-l", str(length)]
    samples: list[ClassSample] = []
    others: list[list[ClassSample]] = [[] for _ in also]
    extra: dict[str, Any] = {}
    errors: list[BaseException] = []

    stop = threading.Event()

    def sampler() -> None:
        try:
            with Kernel() as kernel:
                while True:
                    samples.append(sample_class(kernel, shaper))  # type: ignore[arg-type]
                    for ref, out in zip(also, others, strict=True):
                        out.append(sample_class(kernel, ref))
                    if stop.is_set():
                        break
                    stop.wait(SAMPLE_INTERVAL)
        except BaseException as err:  # reported with the result
            errors.append(err)

    def pinger() -> None:
        try:
            time.sleep(warm)
            span = max(0.1, seconds - warm - 0.3) * 1000
            count = max(3, int(span / ping_interval_ms))
            extra["ping"] = fping(
                ping_from,  # type: ignore[arg-type]
                ping_to,  # type: ignore[arg-type]
                count=count,
                interval_ms=ping_interval_ms,
                timeout_ms=ping_timeout_ms,
            )
        except BaseException as err:
            errors.append(err)

    def caller() -> None:
        try:
            time.sleep(at[0])  # type: ignore[index]
            at[1]()  # type: ignore[index]
        except BaseException as err:
            errors.append(err)

    drops_before = udp_receive_errors(server_ns) if protocol == "udp" else 0
    try:
        wait_listening(server_ns, port)
        threads = [
            threading.Thread(target=target, daemon=True)
            for wanted, target in ((shaper, sampler), (ping_to, pinger), (at, caller))
            if wanted is not None
        ]
        client = processes.spawn(
            client_ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for th in threads:
            th.start()
        try:
            out, err = client.communicate(timeout=seconds + 20)
        except subprocess.TimeoutExpired:
            client.kill()
            out, err = client.communicate()
        stop.set()
        for th in threads:
            th.join(timeout=seconds + 30)
        done = subprocess.CompletedProcess(argv, client.returncode, out, err)
    finally:
        processes.stop_child(server)
    try:
        data = json.loads(done.stdout or "{}")
    except ValueError:
        data = {"error": done.stdout[-300:]}
    if "error" in data or not data.get("end"):
        raise FlowError(
            f"iperf3 {protocol} to {address}:{port} failed: {data.get('error') or done.stderr}"
        )
    if errors:
        raise FlowError(f"measuring {protocol} to {address}:{port}: {errors[0]}") from errors[0]
    end = data["end"]
    received = end.get("sum_received") or end.get("sum") or {}
    sent = end.get("sum_sent") or {}
    result = FlowResult(
        protocol=protocol,
        seconds=float(received.get("seconds") or seconds),
        offered_bps=float(sent.get("bits_per_second", 0)) if protocol == "udp" else None,
        payload_bps=float(received.get("bits_per_second", 0)),
        ping=extra.get("ping"),
        retransmits=sent.get("retransmits"),
        iperf=end,
    )
    if protocol == "udp":
        result.lost_packets = int(received.get("lost_packets", 0))
        result.packets = int(received.get("packets", 0))
        result.receiver_drops = udp_receive_errors(server_ns) - drops_before
    window = steady_window(samples, warm, tail=min(0.25, seconds * 0.1))
    if shaper is not None and window is not None:
        a, b = window
        result.window_s = b.t - a.t
        result.l2_bps = (b.bytes - a.bytes) * 8 / result.window_s
        result.class_drops = b.drops - a.drops
        i, j = samples.index(a), samples.index(b)
        for ref, out in zip(also, others, strict=True):
            result.also_l2_bps[ref] = (out[j].bytes - out[i].bytes) * 8 / (out[j].t - out[i].t)
    return result


def steady_window(
    samples: list[ClassSample], warm: float, tail: float
) -> tuple[ClassSample, ClassSample] | None:
    """The samples bracketing the flow's steady part, by the counter itself.

    The flow starts when the counter first moves (iperf3 takes a while to set
    up, longer on a busy machine) and ends when it last moves; `warm` seconds
    after the start and `tail` seconds before the end are left out.
    """
    moving = [i for i in range(1, len(samples)) if samples[i].bytes > samples[i - 1].bytes]
    if not moving:
        return None
    begin, end = samples[moving[0] - 1].t, samples[moving[-1]].t
    inside = [x for x in samples if begin + warm <= x.t <= end - tail]
    if len(inside) < 2 or inside[-1].t - inside[0].t < SAMPLE_INTERVAL * 3:
        return None
    return inside[0], inside[-1]
