"""iperf3: servers and clients inside namespaces, and parsers of its JSON.

Parsers are pure functions of iperf3's output (unit-tested on recorded
outputs); a server runs for the life of a `with` block, a client to
completion with a timeout, both stopped by PID.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vnet.tools import processes
from vnet.tools.errors import ToolError
from vnet.tools.fping import BackgroundPing, Probe, RttStats
from vnet.tools.procfs import listening
from vnet.tools.wait import WaitTimeout, wait_until

IPERF3_PORT = 5201
CLIENT_GRACE = 15.0  # s a client may run past its -t before it counts as hung


# -- parsers -----------------------------------------------------------------------


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
    intervals: list[float] = field(default_factory=list)  # Mbit/s in each second (sender)


def parse_json(text: str) -> dict[str, Any]:
    """iperf3 -J output as a dict; ToolError if it is no JSON object or reports an error."""
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError as err:
        raise ToolError(f"iperf3 printed no JSON: {err}: {text[:200]!r}") from err
    if not isinstance(data, dict):
        raise ToolError("iperf3 printed JSON that is not an object")
    if "error" in data:
        raise ToolError(f"iperf3: {data['error']}")
    return data


def _udp_interval(raw: dict[str, Any]) -> UdpInterval:
    s = raw["sum"]
    return UdpInterval(
        seconds=float(s["seconds"]),
        mbit=float(s["bits_per_second"]) / 1e6,
        jitter_ms=float(s["jitter_ms"]),
        lost=int(s["lost_packets"]),
        packets=int(s["packets"]),
    )


def parse_iperf3_udp(text: str) -> UdpRun:
    """`iperf3 -u -J --get-server-output` (client side) -> receiver totals and seconds."""
    data = parse_json(text)
    try:
        end = data["end"]
        received = end["sum_received"]
        server = data.get("server_output_json") or {}
        intervals = [
            _udp_interval(i)
            for i in server.get("intervals", [])
            if not i["sum"].get("omitted", False)
        ]
        return UdpRun(
            mbit=float(received["bits_per_second"]) / 1e6,
            sent_mbit=float(end["sum_sent"]["bits_per_second"]) / 1e6,
            lost=int(received["lost_packets"]),
            packets=int(received["packets"]),
            intervals=intervals,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ToolError(f"unexpected iperf3 UDP JSON: missing or bad {err}") from err


def parse_iperf3_tcp(text: str) -> TcpRun:
    """`iperf3 -J` TCP (client side) -> received rate, retransmits and the sender's RTT."""
    data = parse_json(text)
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
            intervals=[float(i["sum"]["bits_per_second"]) / 1e6 for i in data.get("intervals", [])],
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ToolError(f"unexpected iperf3 TCP JSON: missing or bad {err}") from err


# -- processes ------------------------------------------------------------------------


def iperf3_seconds(duration: float) -> int:
    """iperf3 -t takes whole seconds."""
    return max(1, round(duration))


def wait_listening(ns: str, port: int, timeout: float = 5.0, proc: Any = None) -> None:
    """Until a TCP socket listens on `port` in `ns`; ToolError if not (or if `proc` exits)."""

    def exited() -> str | None:
        return "the server exited" if proc is not None and proc.poll() is not None else None

    try:
        wait_until(
            lambda: listening(ns, port), timeout, f"iperf3 on port {port} in {ns}", 0.01, exited
        )
    except WaitTimeout as err:
        raise ToolError(f"no iperf3 server listening on port {port} in {ns}: {err}") from None


class Iperf3Server:
    """`iperf3 -s` inside a namespace for the life of a `with` block, listening on entry.

    `one_off`: serve one test and exit (-1); `json`: -J, so that clients'
    --get-server-output carries per-second receiver data.
    """

    def __init__(
        self,
        ns: str,
        port: int = IPERF3_PORT,
        *,
        one_off: bool = False,
        json: bool = True,
        bind: str | None = None,
    ) -> None:
        self.ns, self.port = ns, port
        self.argv = ["iperf3", "-s", *(["-1"] if one_off else []), *(["-J"] if json else [])]
        self.argv += ["-p", str(port)]
        if bind:  # UDP replies leave from this address, not the routing's first choice
            self.argv += ["-B", bind]
        self._proc: subprocess.Popen[Any] | None = None

    def __enter__(self) -> Iperf3Server:
        self._proc = processes.spawn(
            self.ns, self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_listening(self.ns, self.port, proc=self._proc)
        except ToolError:
            processes.stop_child(self._proc)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            processes.stop_child(self._proc)


def client_argv(
    address: str,
    seconds: float | str,
    *,
    port: int = IPERF3_PORT,
    udp_rate: str | None = None,
    tcp_rate: str | None = None,
    length: int | None = None,
    streams: int = 1,
    extra: tuple[str, ...] = (),
) -> list[str]:
    """`iperf3 -c ... -J`; `udp_rate` ("0" = unlimited) makes it UDP."""
    argv = ["iperf3", "-c", address, "-p", str(port)]
    if udp_rate is not None:
        argv += ["-u", "-b", udp_rate]
    elif tcp_rate is not None:
        argv += ["-b", tcp_rate]
    if length:
        argv += ["-l", str(length)]
    if streams > 1:
        argv += ["-P", str(streams)]
    duration = f"{seconds:g}" if isinstance(seconds, float) else str(seconds)
    return [*argv, *extra, "-t", duration, "-J"]


def _busy(err: ToolError) -> bool:
    """The server takes a moment between tests; anything else is a real failure."""
    return any(w in str(err) for w in ("busy", "connect", "refused"))


def run_client(
    ns: str,
    argv: list[str],
    seconds: float,
    probe: Probe | None = None,
    attempts: int = 3,
    before_retry: Callable[[], None] = lambda: time.sleep(0.3),
) -> tuple[str, RttStats | None]:
    """Run an iperf3 client (fping beside it, if `probe`); retry while the server is busy."""
    for attempt in range(attempts):
        out, rtt = _client_once(ns, argv, seconds, probe)
        try:
            parse_json(out)
            return out, rtt
        except ToolError as err:
            if attempt == attempts - 1 or not _busy(err):
                raise
            before_retry()
    raise AssertionError("unreachable")


def _client_once(
    ns: str, argv: list[str], seconds: float, probe: Probe | None
) -> tuple[str, RttStats | None]:
    proc = processes.spawn(ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ping: BackgroundPing | None = None
    try:
        if probe is not None:
            time.sleep(probe.delay)
            ping = BackgroundPing(ns, probe)
        try:
            out, _ = proc.communicate(timeout=seconds + CLIENT_GRACE)
        except subprocess.TimeoutExpired:
            raise ToolError(f"iperf3 did not finish within {seconds + CLIENT_GRACE:g} s") from None
        rtt = ping.result() if ping is not None else None
        ping = None
        return out, rtt
    finally:
        processes.stop_child(proc)
        if ping is not None:
            ping.cancel()


def run_udp(
    ns: str,
    address: str,
    mbit: float | None,
    duration: float,
    length: int,
    probe: Probe | None = None,
    port: int = IPERF3_PORT,
    bind: str | None = None,
) -> tuple[UdpRun, RttStats | None]:
    """UDP at `mbit` Mbit/s offered (None: as fast as the sender can) for `duration` s;
    `bind`: the source address (a host reached only at its loopback needs it)."""
    seconds = iperf3_seconds(duration)
    rate = "0" if mbit is None else f"{mbit:g}M"
    extra = ("-B", bind) if bind else ()
    argv = client_argv(address, str(seconds), port=port, udp_rate=rate, length=length, extra=extra)
    out, rtt = run_client(ns, [*argv, "--get-server-output"], seconds, probe)
    return parse_iperf3_udp(out), rtt


def run_tcp(
    ns: str,
    address: str,
    duration: float,
    probe: Probe | None = None,
    port: int = IPERF3_PORT,
    bind: str | None = None,
) -> tuple[TcpRun, RttStats | None]:
    seconds = iperf3_seconds(duration)
    argv = client_argv(address, str(seconds), port=port, extra=("-B", bind) if bind else ())
    out, rtt = run_client(ns, argv, seconds, probe)
    return parse_iperf3_tcp(out), rtt
