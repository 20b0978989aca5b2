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

from vnet.lab.probes import PingResult, fping
from vnet.substrate import Kernel
from vnet.substrate.tc import class_counters
from vnet.tools import iperf3, processes, procfs
from vnet.tools.errors import ToolError


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
    counters = procfs.snmp_counters(ns)
    return counters["Udp:RcvbufErrors"] + counters.get("Udp6RcvbufErrors", 0)


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
    server = iperf3.Iperf3Server(server_ns, port, one_off=True, json=False)
    argv = _client_argv(address, seconds, protocol, rate_bps, length, port, streams)
    meters = _Meters(shaper, also)
    threads = meters.threads(
        warm, seconds, (ping_from, ping_to, ping_interval_ms, ping_timeout_ms), at
    )
    drops_before = udp_receive_errors(server_ns) if protocol == "udp" else 0
    try:
        with server:  # listening from here on
            done = _client(client_ns, argv, seconds, threads)
    except ToolError as err:
        raise FlowError(str(err)) from None
    finally:
        meters.stop.set()
        for th in threads:
            if th.is_alive():
                th.join(timeout=seconds + 30)
    what = f"{protocol} to {address}:{port}"
    end = _iperf3_end(done, what)
    if meters.errors:
        raise FlowError(f"measuring {what}: {meters.errors[0]}") from meters.errors[0]
    result = _flow_result(end, protocol, seconds, meters.ping)
    if protocol == "udp":
        result.receiver_drops = udp_receive_errors(server_ns) - drops_before
    meters.apply_window(result, warm, tail=min(0.25, seconds * 0.1))
    return result


def _client_argv(
    address: str,
    seconds: float,
    protocol: str,
    rate_bps: float | None,
    length: int | None,
    port: int,
    streams: int,
) -> list[str]:
    udp = protocol == "udp"
    argv = iperf3.client_argv(
        address,
        float(seconds),
        port=port,
        udp_rate=str(int(rate_bps or 1_000_000)) if udp else None,
        tcp_rate=str(int(rate_bps)) if rate_bps and not udp else None,
        length=length,
        streams=streams,
    )
    if udp:
        # a 4 MB socket buffer (up to net.core.rmem_max) so that a receiver starved of
        # CPU for a moment does not drop what the network delivered
        argv += ["-w", "4M"]
    return argv


class _Meters:
    """What runs beside the flow: the shaper's counters, fping, a call at a set time."""

    def __init__(self, shaper: ClassRef | None, also: tuple[ClassRef, ...]) -> None:
        self.shaper, self.also = shaper, also
        self.samples: list[ClassSample] = []
        self.others: list[list[ClassSample]] = [[] for _ in also]
        self.ping: PingResult | None = None
        self.errors: list[BaseException] = []  # reported with the result
        self.stop = threading.Event()

    def threads(
        self,
        warm: float,
        seconds: float,
        ping: tuple[str | None, str | None, int, int],
        at: tuple[float, Callable[[], None]] | None,
    ) -> list[threading.Thread]:
        wanted = []
        if self.shaper is not None:
            wanted.append(self._guarded(self._sample, self.shaper))
        if ping[1] is not None:
            wanted.append(self._guarded(self._ping, warm, seconds, *ping))
        if at is not None:
            wanted.append(self._guarded(self._call, *at))
        return [threading.Thread(target=t, daemon=True) for t in wanted]

    def _guarded(self, fn: Callable[..., None], *args: Any) -> Callable[[], None]:
        def run() -> None:
            try:
                fn(*args)
            except BaseException as err:
                self.errors.append(err)

        return run

    def _sample(self, shaper: ClassRef) -> None:
        with Kernel() as kernel:
            while True:
                self.samples.append(sample_class(kernel, shaper))
                for ref, out in zip(self.also, self.others, strict=True):
                    out.append(sample_class(kernel, ref))
                if self.stop.is_set():
                    break
                self.stop.wait(SAMPLE_INTERVAL)

    def _ping(
        self, warm: float, seconds: float, ns: str, to: str, interval_ms: int, timeout_ms: int
    ) -> None:
        time.sleep(warm)
        span = max(0.1, seconds - warm - 0.3) * 1000
        count = max(3, int(span / interval_ms))
        self.ping = fping(ns, to, count=count, interval_ms=interval_ms, timeout_ms=timeout_ms)

    @staticmethod
    def _call(delay: float, fn: Callable[[], None]) -> None:
        time.sleep(delay)
        fn()

    def apply_window(self, result: FlowResult, warm: float, tail: float) -> None:
        """The shaper's rate (and the other classes') over the flow's steady part."""
        window = steady_window(self.samples, warm, tail)
        if self.shaper is None or window is None:
            return
        a, b = window
        result.window_s = b.t - a.t
        result.l2_bps = (b.bytes - a.bytes) * 8 / result.window_s
        result.class_drops = b.drops - a.drops
        i, j = self.samples.index(a), self.samples.index(b)
        for ref, out in zip(self.also, self.others, strict=True):
            result.also_l2_bps[ref] = (out[j].bytes - out[i].bytes) * 8 / (out[j].t - out[i].t)


def _iperf3_end(done: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    """The "end" section of the client's JSON; FlowError if iperf3 failed."""
    try:
        data = json.loads(done.stdout or "{}")
    except ValueError:
        data = {"error": done.stdout[-300:]}
    if "error" in data or not data.get("end"):
        raise FlowError(f"iperf3 {what} failed: {data.get('error') or done.stderr}")
    return data["end"]  # type: ignore[no-any-return]


def _flow_result(
    end: dict[str, Any], protocol: str, seconds: float, ping: PingResult | None
) -> FlowResult:
    received = end.get("sum_received") or end.get("sum") or {}
    sent = end.get("sum_sent") or {}
    result = FlowResult(
        protocol=protocol,
        seconds=float(received.get("seconds") or seconds),
        offered_bps=float(sent.get("bits_per_second", 0)) if protocol == "udp" else None,
        payload_bps=float(received.get("bits_per_second", 0)),
        ping=ping,
        retransmits=sent.get("retransmits"),
        iperf=end,
    )
    if protocol == "udp":
        result.lost_packets = int(received.get("lost_packets", 0))
        result.packets = int(received.get("packets", 0))
    return result


def _client(
    ns: str, argv: list[str], seconds: float, threads: list[threading.Thread]
) -> subprocess.CompletedProcess[str]:
    """The iperf3 client to completion, with the measuring threads started beside it."""
    client = processes.spawn(ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for th in threads:
        th.start()
    try:
        out, err = client.communicate(timeout=seconds + 20)
    except subprocess.TimeoutExpired:
        client.kill()
        out, err = client.communicate()
    return subprocess.CompletedProcess(argv, client.returncode, out, err)


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
