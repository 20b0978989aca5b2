"""vnet bench sdn: OpenFlow control-plane latency of Open vSwitch, direct and through a hypervisor.

perfbench (the Rust crate in ``perfbench/``) plays the tenant controllers and the
data plane; Open vSwitch's userspace datapath is the switch. Each setup of the
paper's Table 1 (seeds/002, "perfbench") runs twice: switch-only ("ovs": the
switch connects straight to the tenant controllers) and through perfbench's
pass-through proxy ("proxy": the switch connects to the proxy, which connects
on to the controllers), with TCP_NODELAY off ("AGG", Nagle aggregates) and on
("ND") where the paper varies it.

Everything runs inside one network namespace made for the run: ovsdb-server and
ovs-vswitchd (private OVS_RUNDIR/DBDIR/LOGDIR/SYSCONFDIR in a temp folder), the
proxy and perfbench, with a veth pair whose one end is the bridge's port 1 and
whose other end is perfbench's data-plane interface (AF_PACKET). Daemons are
stopped by the PIDs they wrote, and deleting the namespace removes the veth
pair and the bridge's tap device.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import click

from vnet.bench.progress import BenchOptions, BenchProgress, bench_options
from vnet.bench.report import finish_run
from vnet.bench.results import BenchResult

REPO = Path(__file__).resolve().parents[3]
PERFBENCH_DIR = REPO / "perfbench"
OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
CONTROLLER_PORT = 6653  # tenant i listens on 6653 + i
PROXY_PORT = 6753  # the proxy listens on 6753 + i and relays to 6653 + i
OVS_PORT = 1  # the veth end attached to the bridge

# The paper's Table 1 (rates in messages/s).
PACKET_IN_RATES = [10_000, 20_000, 30_000, 40_000]
PORT_STATS_RATES = [5_000, 6_000, 7_000, 8_000]
PACKET_OUT_TOTAL = 60_000
DEFAULT_TENANTS = [1, 5, 10, 20]
QUICK_TENANTS = [2, 20]


class SdnBenchError(RuntimeError):
    """A setup step failed; the message says which and why."""


def _run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 30) -> str:
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise SdnBenchError(f"{' '.join(cmd)}: no answer within {timeout:g} s") from err
    except FileNotFoundError as err:
        raise SdnBenchError(f"{cmd[0]}: not installed") from err
    if done.returncode != 0:
        raise SdnBenchError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


# -- the perfbench binary ----------------------------------------------------------------


def perfbench_binary(build: bool = True) -> Path:
    """perfbench's release binary ($PERFBENCH, else perfbench/target/release), built if missing."""
    env = os.environ.get("PERFBENCH")
    if env:
        path = Path(env)
        if not path.is_file():
            raise SdnBenchError(f"PERFBENCH={env} is not a file")
        return path
    path = PERFBENCH_DIR / "target" / "release" / "perfbench"
    if not path.is_file():
        if not build:
            raise SdnBenchError(
                f"{path} is missing: run 'cargo build --release' in {PERFBENCH_DIR}"
            )
        cargo = shutil.which("cargo")
        if cargo is None:
            raise SdnBenchError(f"{path} is missing and cargo is not installed to build it")
        _run(
            [cargo, "build", "--release", "--manifest-path", str(PERFBENCH_DIR / "Cargo.toml")],
            timeout=900,
        )
    return path


# -- Open vSwitch in a namespace of its own ----------------------------------------------


def _pid_alive(pid: int) -> bool:
    """True while `pid` runs; an exited daemon waiting to be reaped (zombie) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rfind(")") + 2 :][:1] not in ("Z", "X")


def stop_pid(pid: int, timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `timeout`; only this PID, never by name."""
    if not _pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)


@dataclass
class OvsLab:
    """ovsdb-server + ovs-vswitchd (userspace datapath) with bridge br0 in a fresh namespace."""

    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    dir: Path = field(init=False)
    ns: str = field(init=False)
    ovs_iface: str = field(init=False)
    dp_iface: str = field(init=False)
    pids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ns = f"vnetpb-{self.tag}"
        self.ovs_iface = f"vpb{self.tag}o"
        self.dp_iface = f"vpb{self.tag}d"
        self.dir = Path(tempfile.mkdtemp(prefix=f"vnetpb-{self.tag}-"))

    @property
    def env(self) -> dict[str, str]:
        d = str(self.dir)
        return {
            **os.environ,
            "OVS_RUNDIR": d,
            "OVS_DBDIR": d,
            "OVS_LOGDIR": d,
            "OVS_SYSCONFDIR": d,
        }

    def in_ns(self, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *cmd]

    def vsctl(self, *args: str, timeout: float = 20) -> str:
        return _run(
            ["ovs-vsctl", f"--db=unix:{self.dir}/db.sock", f"--timeout={int(timeout)}", *args],
            env=self.env,
            timeout=timeout + 5,
        )

    def _read_pid(self, name: str, timeout: float = 10) -> int:
        path = self.dir / f"{name}.pid"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                return int(path.read_text().strip())
            except (FileNotFoundError, ValueError):
                time.sleep(0.02)
        raise SdnBenchError(f"{name} wrote no PID file {path} within {timeout:g} s")

    def start(self) -> None:
        for tool in ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ip"):
            if shutil.which(tool) is None:
                raise SdnBenchError(
                    f"{tool} not installed (apt-get install openvswitch-switch iproute2)"
                )
        _run(["ip", "netns", "add", self.ns])
        _run(self.in_ns("ip", "link", "set", "lo", "up"))
        # No IPv6 in here: no router solicitations or MLD reports reach the bridge.
        for key in ("all", "default"):
            _run(self.in_ns("sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1"))
        _run(
            self.in_ns(
                "ip", "link", "add", self.ovs_iface, "type", "veth", "peer", "name", self.dp_iface
            )
        )
        for iface in (self.ovs_iface, self.dp_iface):
            _run(self.in_ns("ip", "link", "set", iface, "up"))
        d = self.dir
        _run(["ovsdb-tool", "create", f"{d}/conf.db", str(OVS_SCHEMA)], env=self.env)
        _run(
            self.in_ns(
                "ovsdb-server",
                f"{d}/conf.db",
                f"--remote=punix:{d}/db.sock",
                f"--pidfile={d}/ovsdb-server.pid",
                f"--log-file={d}/ovsdb-server.log",
                "--detach",
            ),
            env=self.env,
        )
        self.pids["ovsdb-server"] = self._read_pid("ovsdb-server")
        self.vsctl("--no-wait", "init")
        _run(
            self.in_ns(
                "ovs-vswitchd",
                f"unix:{d}/db.sock",
                f"--pidfile={d}/ovs-vswitchd.pid",
                f"--log-file={d}/ovs-vswitchd.log",
                "--detach",
            ),
            env=self.env,
        )
        self.pids["ovs-vswitchd"] = self._read_pid("ovs-vswitchd")
        self.vsctl(
            "add-br",
            "br0",
            "--",
            "set",
            "bridge",
            "br0",
            "datapath_type=netdev",
            "fail_mode=secure",
            "protocols=OpenFlow10,OpenFlow13",
            "other-config:disable-in-band=true",
            "--",
            "add-port",
            "br0",
            self.ovs_iface,
            "--",
            "set",
            "Interface",
            self.ovs_iface,
            f"ofport_request={OVS_PORT}",
        )

    def set_controllers(self, ports: list[int]) -> None:
        """Point br0 at tcp:127.0.0.1:PORT for each port (one connection each)."""
        args: list[str] = []
        ids = []
        for i, port in enumerate(ports):
            ids.append(f"@c{i}")
            args += [
                "--",
                f"--id=@c{i}",
                "create",
                "Controller",
                f'target="tcp:127.0.0.1:{port}"',
                "max_backoff=1000",
                "inactivity_probe=0",
                "connection_mode=out-of-band",
            ]
        self.vsctl(*args, "--", "set", "bridge", "br0", f"controller=[{','.join(ids)}]")

    def clear_controllers(self) -> None:
        self.vsctl("del-controller", "br0")

    def stop(self) -> None:
        for name in ("ovs-vswitchd", "ovsdb-server"):
            pid = self.pids.pop(name, None)
            if pid is not None:
                stop_pid(pid)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> OvsLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_for_line(stream: IO[bytes], want: str, timeout: float) -> bool:
    """Read a pipe (unbuffered) until a line equals `want` (True), or EOF/timeout (False)."""
    fd = stream.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return False
        chunk = os.read(fd, 4096)
        if not chunk:
            return False
        buf += chunk
        if want.encode() in (line.strip() for line in buf.split(b"\n")):
            return True
    return False


@contextmanager
def proxy(lab: OvsLab, binary: Path, ports: int, max_seconds: float) -> Iterator[int]:
    """perfbench's pass-through proxy in the lab's namespace; yields its PID."""
    cmd = lab.in_ns(
        str(binary),
        "proxy",
        "--listen",
        f"127.0.0.1:{PROXY_PORT}",
        "--upstream",
        f"127.0.0.1:{CONTROLLER_PORT}",
        "--ports",
        str(ports),
        "--nodelay",
        "1",
        "--max-seconds",
        f"{max_seconds:.0f}",
    )
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        if not _wait_for_line(proc.stdout, "ready", 10.0):
            err = proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else ""
            raise SdnBenchError(f"the proxy did not get ready within 10 s: {err.strip()}")
        yield proc.pid
    finally:
        stop_pid(proc.pid)
        proc.wait(timeout=10)


# -- one perfbench run --------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    experiment: str  # "packet-in", "port-stats", "packet-out"
    via: str  # "ovs" (switch only) or "proxy"
    nodelay: bool
    tenants: int
    rate: int  # messages/s in total over all tenants

    @property
    def series(self) -> str:
        return f"{self.via}-{'ND' if self.nodelay else 'AGG'}"


def run_perfbench(
    lab: OvsLab,
    binary: Path,
    setup: Setup,
    *,
    duration: float,
    trim: float,
    version: str,
    cpu_pids: list[int],
    spin_us: int = 0,
) -> dict[str, Any]:
    """One `perfbench cp` run against the lab's OVS; returns perfbench's JSON report."""
    kind = setup.experiment
    cmd = [
        str(binary),
        "cp",
        "--listen",
        f"127.0.0.1:{CONTROLLER_PORT}",
        "--tenants",
        str(setup.tenants),
        "--type",
        kind,
        "--total-rate",
        str(setup.rate),
        "--nodelay",
        "1" if setup.nodelay else "0",
        "--of",
        version,
        "--duration",
        f"{duration}",
        "--warmup",
        f"{trim}",
        "--cooldown",
        f"{trim}",
        "--drain",
        "0.5",
        "--setup-timeout",
        "15",
        "--no-records",
        "--spin-us",
        str(spin_us),
    ]
    if kind == "packet-in":
        cmd += ["--inject-iface", lab.dp_iface, "--install-table-miss"]
    elif kind == "packet-out":
        cmd += ["--capture-iface", lab.dp_iface, "--out-port", str(OVS_PORT)]
    for pid in cpu_pids:
        cmd += ["--cpu-pid", str(pid)]
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(lab.in_ns(*cmd), stdout=out, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        err: list[str] = []

        def pump() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                err.append(line)
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            listening, deadline = 0, time.monotonic() + 15
            while listening < setup.tenants:
                try:
                    line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
                except queue.Empty:
                    raise SdnBenchError("perfbench did not start listening within 15 s") from None
                if line is None:
                    break
                listening += "listening on" in line
            if listening == setup.tenants:
                base = PROXY_PORT if setup.via == "proxy" else CONTROLLER_PORT
                lab.set_controllers([base + i for i in range(setup.tenants)])
            proc.wait(timeout=duration + 60)
        finally:
            if proc.poll() is None:
                stop_pid(proc.pid)
                proc.wait(timeout=10)
            reader.join(timeout=5)
            lab.clear_controllers()
        if proc.returncode != 0:
            tail = "".join(err).strip().splitlines()[-3:]
            raise SdnBenchError(f"perfbench cp exited {proc.returncode}: {' | '.join(tail)}")
        out.seek(0)
        report: dict[str, Any] = json.load(out)
    return report


# -- the experiment plan ---------------------------------------------------------------


def plan(quick: bool, tenants: list[int]) -> list[Setup]:
    """Table 1 of the paper, each setup switch-only and through the proxy."""
    setups: list[Setup] = []
    for via in ("ovs", "proxy"):
        for rate in [40_000] if quick else PACKET_IN_RATES:
            setups.append(Setup("packet-in", via, False, 1, rate))
        if not quick:
            setups.append(Setup("packet-in", via, True, 1, 40_000))
        for rate in [8_000] if quick else PORT_STATS_RATES:
            setups.append(Setup("port-stats", via, False, 1, rate))
        for n in tenants:
            for nd in (False, True):
                setups.append(Setup("packet-out", via, nd, n, PACKET_OUT_TOTAL))
    return setups


def _loadavg() -> str:
    """The machine's load average after a run: other work on a shared machine shows here."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def _cpu(report: dict[str, Any], pid: int | None) -> float | None:
    for c in report.get("cpu", []):
        if c.get("pid") == pid and not c.get("error"):
            return float(c["percent_of_core"])
    return None


def record_run(
    result: BenchResult, setup: Setup, report: dict[str, Any], pids: dict[str, int | None]
) -> None:
    t = report["totals"]
    lat = t["latency"]
    x: float = setup.tenants if setup.experiment == "packet-out" else setup.rate
    if lat["count"] > 0:
        result.record(f"{setup.experiment} mean latency", setup.series, lat["mean_us"], x=x)
        result.record(f"{setup.experiment} p99 latency", setup.series, lat["p99_us"], x=x)
    sent = t["sent"]
    result.record(
        f"{setup.experiment} loss", setup.series, 100.0 * t["lost"] / sent if sent else 100.0, x=x
    )
    if setup.experiment == "packet-out":
        ovs = _cpu(report, pids.get("ovs-vswitchd"))
        if ovs is not None:
            result.record("packet-out OVS CPU", setup.series, ovs, x=x)
        prx = _cpu(report, pids.get("proxy"))
        if prx is not None:
            result.record("packet-out proxy CPU", setup.series, prx, x=x)
    for p in report.get("problems", []):
        result.note(f"{setup.experiment} {setup.series} x={x}: {p}")


def declare_metrics(result: BenchResult) -> None:
    for exp, x_label in (
        ("packet-in", "PACKET_IN rate (msgs/s)"),
        ("port-stats", "port stats request rate (msgs/s)"),
        ("packet-out", "tenants (60k PACKET_OUT/s in total)"),
    ):
        result.declare(f"{exp} mean latency", "µs", x_label=x_label)
        result.declare(f"{exp} p99 latency", "µs", x_label=x_label)
        result.declare(f"{exp} loss", "%", x_label=x_label)
    result.declare("packet-out OVS CPU", "% of a core", x_label="tenants")
    result.declare("packet-out proxy CPU", "% of a core", x_label="tenants")


# -- figures in the shape of the paper's Fig. 3 and 4 ------------------------------------


def _box(report: dict[str, Any], label: str) -> dict[str, Any]:
    lat = report["totals"]["latency"]
    ms = 1e-3
    return {
        "label": label,
        "whislo": lat["p1_us"] * ms,
        "q1": lat["p25_us"] * ms,
        "med": lat["p50_us"] * ms,
        "q3": lat["p75_us"] * ms,
        "whishi": lat["p99_us"] * ms,
        "mean": lat["mean_us"] * ms,
        "fliers": [],
    }


COLORS = {"ovs-AGG": "#1f77b4", "ovs-ND": "#aec7e8", "proxy-AGG": "#d62728", "proxy-ND": "#ff9896"}


def _boxes(
    ax: Any, groups: list[tuple[str, list[tuple[str, dict[str, Any]]]]], title: str, xlabel: str
) -> None:
    """Side-by-side boxes: one group per x value, one box per series."""
    from matplotlib.patches import Patch

    stats, pos, colors, ticks = [], [], [], []
    x = 0.0
    series_seen: list[str] = []
    for name, boxes in groups:
        start = x
        for series, rep in boxes:
            if rep["totals"]["latency"]["count"] == 0:
                x += 1
                continue
            stats.append(_box(rep, series))
            pos.append(x)
            colors.append(COLORS.get(series, "#777777"))
            if series not in series_seen:
                series_seen.append(series)
            x += 1
        ticks.append(((start + x - 1) / 2, name))
        x += 0.8
    if stats:
        art = ax.bxp(
            stats, positions=pos, widths=0.7, showmeans=True, patch_artist=True, manage_ticks=False
        )
        for patch, c in zip(art["boxes"], colors, strict=True):
            patch.set_facecolor(c)
    ax.set_xticks([t for t, _ in ticks], [n for _, n in ticks])
    ax.set_yscale("log")
    ax.set_ylabel("control latency (ms)")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(
        handles=[Patch(color=COLORS.get(s, "#777"), label=s) for s in series_seen], fontsize=7
    )


def _first(runs: list[tuple[Setup, dict[str, Any]]], **want: Any) -> dict[str, Any] | None:
    for s, rep in runs:
        if all(getattr(s, k) == v for k, v in want.items()):
            return rep
    return None


def plot_figures(runs: list[tuple[Setup, dict[str, Any]]], directory: Path) -> list[Path]:
    """fig3.png (single tenant: PACKET_IN, port stats) and fig4.png (PACKET_OUT vs tenants, CPU).

    Boxes: p25..p75 with the median, whiskers p1 and p99, triangle = mean (first repeat).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    written = []
    fig = Figure(figsize=(13, 4.2))
    FigureCanvasAgg(fig)
    a, b, c = fig.subplots(1, 3)
    series = ["ovs-AGG", "ovs-ND", "proxy-AGG", "proxy-ND"]
    top_in = max((s.rate for s, _ in runs if s.experiment == "packet-in"), default=40_000)
    grp_a = [
        (
            f"{top_in // 1000}k",
            [
                (se, r)
                for se in series
                if (r := _first(runs, experiment="packet-in", rate=top_in, series=se))
            ],
        )
    ]
    _boxes(a, grp_a, f"(a) switch only vs. proxy, PACKET_IN, {top_in // 1000}k/s", "")
    rates_in = sorted({s.rate for s, _ in runs if s.experiment == "packet-in"})
    grp_b = [
        (
            f"{r // 1000}k",
            [
                (se, rep)
                for se in ("ovs-AGG", "proxy-AGG")
                if (rep := _first(runs, experiment="packet-in", rate=r, series=se))
            ],
        )
        for r in rates_in
    ]
    _boxes(b, grp_b, "(b) single tenant, PACKET_IN", "PACKET_IN rate (msgs/s)")
    rates_ps = sorted({s.rate for s, _ in runs if s.experiment == "port-stats"})
    grp_c = [
        (
            f"{r // 1000}k",
            [
                (se, rep)
                for se in ("ovs-AGG", "proxy-AGG")
                if (rep := _first(runs, experiment="port-stats", rate=r, series=se))
            ],
        )
        for r in rates_ps
    ]
    _boxes(c, grp_c, "(c) single tenant, port statistics", "request rate (msgs/s)")
    fig.tight_layout()
    p = directory / "fig3.png"
    fig.savefig(p, dpi=120)
    written.append(p)

    fig = Figure(figsize=(12, 4.2))
    FigureCanvasAgg(fig)
    a, b = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    ns = sorted({s.tenants for s, _ in runs if s.experiment == "packet-out"})
    grp = [
        (
            str(n),
            [
                (se, rep)
                for se in series
                if (rep := _first(runs, experiment="packet-out", tenants=n, series=se))
            ],
        )
        for n in ns
    ]
    _boxes(
        a, grp, f"multiple tenants, PACKET_OUT, {PACKET_OUT_TOTAL // 1000}k/s in total", "tenants"
    )
    for se in series:
        pts = [
            (n, cpu)
            for n in ns
            if (rep := _first(runs, experiment="packet-out", tenants=n, series=se))
            and (cpu := _cpu(rep, rep.get("_pids", {}).get("ovs-vswitchd"))) is not None
        ]
        if pts:
            b.plot(
                [x for x, _ in pts], [y for _, y in pts], "o-", color=COLORS[se], label=f"OVS, {se}"
            )
        ppts = [
            (n, cpu)
            for n in ns
            if (rep := _first(runs, experiment="packet-out", tenants=n, series=se))
            and (cpu := _cpu(rep, rep.get("_pids", {}).get("proxy"))) is not None
        ]
        if ppts:
            b.plot(
                [x for x, _ in ppts],
                [y for _, y in ppts],
                "s--",
                color=COLORS[se],
                label=f"proxy, {se}",
            )
    b.set_xlabel("tenants")
    b.set_ylabel("CPU (% of one core)")
    b.set_title("CPU over the measured window", fontsize=9)
    b.grid(True, alpha=0.3)
    b.legend(fontsize=7)
    fig.tight_layout()
    p = directory / "fig4.png"
    fig.savefig(p, dpi=120)
    written.append(p)
    return written


def latency_table(runs: list[tuple[Setup, dict[str, Any]]]) -> str:
    rows = [
        "| experiment | series | tenants | target msgs/s | achieved msgs/s | sent | lost | "
        "p50 µs | p90 µs | p99 µs | max µs | OVS CPU % | proxy CPU % | load avg |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s, rep in runs:
        t, lat = rep["totals"], rep["totals"]["latency"]
        pids = rep.get("_pids", {})
        ovs, prx = _cpu(rep, pids.get("ovs-vswitchd")), _cpu(rep, pids.get("proxy"))
        rows.append(
            f"| {s.experiment} | {s.series} | {s.tenants} | {t['target_rate']:.0f} | "
            f"{t['achieved_rate']:.0f} | {t['sent']} | {t['lost']} | {lat['p50_us']:.1f} | "
            f"{lat['p90_us']:.1f} | {lat['p99_us']:.1f} | {lat['max_us']:.1f} | "
            f"{'' if ovs is None else f'{ovs:.0f}'} | {'' if prx is None else f'{prx:.0f}'} | "
            f"{rep.get('_loadavg', '')} |"
        )
    return "\n".join(rows) + "\n"


# -- the command -------------------------------------------------------------------------


def _one_run(
    lab: OvsLab,
    binary: Path,
    setup: Setup,
    k: int,
    bench: BenchOptions,
    trim: float,
    version: str,
    proxy_pid: int,
    result: BenchResult,
    progress: BenchProgress,
) -> dict[str, Any] | None:
    """Run repeat `k` of `setup`, record it; a failed run becomes a note, not an abort."""
    label = f"{setup.experiment} {setup.series} tenants={setup.tenants} rate={setup.rate}"
    progress.update(f"{label} run {k + 1}/{bench.repeat}")
    vswitchd = lab.pids["ovs-vswitchd"]
    via_proxy = setup.via == "proxy"
    try:
        rep = run_perfbench(
            lab,
            binary,
            setup,
            duration=bench.duration,
            trim=trim,
            version=version,
            cpu_pids=[vswitchd, proxy_pid] if via_proxy else [vswitchd],
        )
    except SdnBenchError as err:
        result.note(f"{label} run {k + 1}: {err}")
        progress.log(f"failed: {label}: {err}")
        progress.advance()
        return None
    rep["_loadavg"] = _loadavg()
    rep["_pids"] = {"ovs-vswitchd": vswitchd, "proxy": proxy_pid if via_proxy else None}
    record_run(result, setup, rep, rep["_pids"])
    lat, t = rep["totals"]["latency"], rep["totals"]
    progress.log(
        f"{label}: p50 {lat['p50_us']:.0f} µs, p99 {lat['p99_us']:.0f} µs, "
        f"lost {t['lost']}/{t['sent']}, load {rep['_loadavg']}"
    )
    progress.advance()
    return rep


def _parse_tenants(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a comma list of integers", param_hint="--tenants"
        ) from None
    if not values or any(not 1 <= v <= 100 for v in values):
        raise click.BadParameter(
            f"{text!r}: each tenant count must be within 1..100", param_hint="--tenants"
        )
    return values


@click.command("sdn")
@bench_options(duration=30.0, repeat=1, quick_duration=1.0, quick_repeat=1)
@click.option(
    "--tenants",
    "tenants_text",
    default=None,
    metavar="N,N,...",
    help="Tenant counts for the PACKET_OUT runs [default: 1,5,10,20; --quick: 2,20].",
)
@click.option(
    "--of",
    "version",
    type=click.Choice(["1.0", "1.3"]),
    default="1.3",
    show_default=True,
    help="OpenFlow version.",
)
def sdn(bench: BenchOptions, tenants_text: str | None, version: str) -> None:
    """OpenFlow control latency of Open vSwitch, switch-only and through a pass-through proxy.

    The paper's Table 1 (seeds/002): PACKET_IN at 10k-40k/s and port statistics at
    5k-8k/s for one tenant, PACKET_OUT at 60k/s in total for 1-20 tenants, with
    TCP_NODELAY off (AGG) and on (ND). The first and last sixth of each run
    (5 s of 30) are cut. Needs root (network namespace, AF_PACKET).
    """
    if os.geteuid() != 0:
        raise click.ClickException(
            "vnet bench sdn needs root: it makes a network namespace and uses AF_PACKET"
        )
    tenants = (
        _parse_tenants(tenants_text)
        if tenants_text
        else (QUICK_TENANTS if bench.quick else DEFAULT_TENANTS)
    )
    duration = bench.duration
    trim = min(5.0, duration / 6)
    try:
        binary = perfbench_binary()
    except SdnBenchError as err:
        raise click.ClickException(str(err)) from err
    setups = plan(bench.quick, tenants)
    result = BenchResult.start(
        "sdn",
        parameters={
            **bench.as_parameters(),
            "tenants": tenants,
            "openflow": version,
            "trim_seconds": trim,
            "packet_in_rates": sorted({s.rate for s in setups if s.experiment == "packet-in"}),
            "port_stats_rates": sorted({s.rate for s in setups if s.experiment == "port-stats"}),
            "packet_out_total_rate": PACKET_OUT_TOTAL,
        },
        tools={"ovs-vswitchd": "ovs-vswitchd", "perfbench": str(binary)},
        baseline="ovs-AGG",
        description=__doc__.split("\n\n")[0] if __doc__ else "",
    )
    declare_metrics(result)
    runs: list[tuple[Setup, dict[str, Any]]] = []
    total_time = len(setups) * bench.repeat * (duration + 1.5) + 60
    try:
        with (
            OvsLab() as lab,
            proxy(lab, binary, max(tenants), total_time) as proxy_pid,
            BenchProgress("sdn", total=len(setups) * bench.repeat, quiet=bench.quiet) as progress,
        ):
            for setup in setups:
                for k in range(bench.repeat):
                    rep = _one_run(
                        lab, binary, setup, k, bench, trim, version, proxy_pid, result, progress
                    )
                    if rep is not None and k == 0:
                        runs.append((setup, rep))
    except SdnBenchError as err:
        raise click.ClickException(str(err)) from err
    paths = finish_run(result, bench)
    figures = plot_figures(runs, paths.directory) if runs else []
    (paths.directory / "sdn-runs.json").write_text(
        json.dumps(
            [{"setup": s.__dict__, "series": s.series, "perfbench": rep} for s, rep in runs],
            indent=1,
        )
    )
    table = latency_table(runs)
    (paths.directory / "sdn-latency.md").write_text(table, encoding="utf-8")
    with paths.markdown.open("a", encoding="utf-8") as md:
        md.write("\n## perfbench runs (first repeat of each setup)\n\n" + table + "\n")
        for fig in figures:
            md.write(f"![{fig.stem}]({fig.name})\n\n")
        md.write(
            "Boxes: p25-p75 with the median, whiskers p1 and p99, triangle = mean. "
            "Series: ovs = switch only, proxy = through perfbench's pass-through proxy; "
            "AGG = TCP_NODELAY off, ND = on.\n"
        )
