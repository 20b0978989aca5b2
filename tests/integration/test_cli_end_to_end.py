"""The README's main job and the build benchmark, run as a user runs them."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
from pathlib import Path

import httpx

from vnet.lab import lab as labmod
from vnet.lab.access import controller_access
from vnet.tools import processes
from vnet.tools.wait import wait_until

from .conftest import ROOT, VNET, Labs, lab_namespaces, require_tools, vnet

# the demo's lines about the guaranteed connection (20mbit) and the refusal beyond capacity
MEASURED = re.compile(
    r"iperf3 through voice: offered [\d.]+ Mbit/s, received ([\d.]+) Mbit/s = \d+% "
    r"of its guarantee of 20 Mbit/s"
)
REFUSAL = re.compile(
    r"^ +no-capacity \(HTTP 409\): .+\n"
    r" +link (h\d-h\d) (h\d) -> (h\d): requested (\d+)kbit, free (\d+)kbit, missing (\d+)kbit$",
    re.MULTILINE,
)


def fresh_demo_lab() -> None:
    if "demo" in labmod.running_labs():
        labmod.down("demo")  # the demo's own lab, left by an earlier `vnet demo --keep`


def recorded_processes(lab: str) -> list[processes.ProcessRecord]:
    rec = labmod.read_record(lab)
    return rec.processes if rec is not None else []


def assert_demo_output(stdout: str) -> None:
    """The demo's four tables, the guaranteed connection's measured rate and the refusal
    beyond capacity, naming the short link, and its verdict."""
    for heading in (
        *("1. Who receives a probe", "2. Each tenant's path", "3. What vnet created"),
        "4. The manager: guaranteed connections",
    ):
        assert heading in stdout
    measured = MEASURED.search(stdout)
    assert measured, stdout
    # payload through a 20mbit shaper that counts the headers too (about 92 % of it)
    assert 16.0 <= float(measured[1]) <= 21.0, measured[0]
    refusal = REFUSAL.search(stdout)
    assert refusal, stdout
    link, origin, end, requested, free, missing = refusal.groups()
    assert set(link.split("-")) == {origin, end}
    assert int(requested) - int(free) == int(missing) > 0
    assert "all results as expected" in stdout


def test_make_demo_on_a_fresh_clone_installs_only_what_it_runs(tmp_path: Path) -> None:
    """The README's first command on a fresh clone of this checkout's HEAD (CI's checkout
    is one): `make demo` installs what the demo runs, not the benchmarks' or the tests'
    libraries, the demo prints its tables and ends as expected, and it removes both of its
    labs. (It once stopped at once: its install left out the agent's and controller's
    libraries, and only `make test`'s full install was tested.)"""
    require_tools("fping", "iperf3", "ping", "git", "make")
    fresh_demo_lab()
    clone = tmp_path / "vnet"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    done = subprocess.run(["make", "demo"], cwd=clone, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert_demo_output(done.stdout)
    probe = "import importlib.util as u; print([m for m in ('numpy', 'pytest') if u.find_spec(m)])"
    found = subprocess.run(
        [str(clone / ".venv/bin/python"), "-c", probe], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"
    assert lab_namespaces("demo") == [] and lab_namespaces("ctl") == []
    assert labmod.read_record("demo") is None and labmod.read_record("ctl") is None


def test_demo_keep_opens_the_console_on_loopback(labs: Labs) -> None:
    """--keep (with --seconds and --controller-file) prints what the demo always prints and
    leaves the manager's lab up with a listener on 127.0.0.1 that reaches its console; the
    port asked for is taken here, so the demo takes a free one and says which; `vnet lab
    down` stops the listener by PID. (The demo without --keep removing both of its labs is
    the fresh clone's test.)"""
    require_tools("fping", "iperf3", "ping")
    fresh_demo_lab()
    ctl, path = labs.file("controller.yaml")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            done = vnet(
                *("demo", "--keep", "--seconds", "1", "--controller-file", str(path)),
                *("--console-port", str(port)),
                timeout=240,
            )
        finally:
            labmod.down("demo")
    assert_demo_output(done.stdout)
    url = re.search(
        r"console, for this machine's browser: (https://127\.0\.0\.1:(\d+)/ui/)", done.stdout
    )
    assert url, done.stdout
    assert int(url[2]) != port
    forwarder = next(p for p in recorded_processes(ctl) if p.what == "console forward")
    certificate = controller_access(ctl).certificate  # the browser's trust, here httpx's
    assert certificate is not None and certificate in done.stdout
    page = httpx.get(url[1], follow_redirects=True, timeout=10, verify=certificate)
    assert page.status_code == 200 and "token" in page.text.lower(), page.text[:300]
    labmod.down(ctl)
    assert not processes.is_running(forwarder)
    assert lab_namespaces(ctl) == []


def test_an_interrupted_demo_removes_what_it_made(labs: Labs) -> None:
    """Ctrl-C while the manager's tour runs (its lab up, its first request on the way): the
    demo ends as interrupted, removes both labs, and stops every process it started (agents,
    controller). The signal is sent when the demo says it asks for the connection (its
    output unbuffered)."""
    require_tools("fping", "iperf3", "ping")
    fresh_demo_lab()
    ctl, path = labs.file("controller.yaml")
    demo = subprocess.Popen(
        [VNET, "demo", "--seconds", "1", "--controller-file", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # as a terminal's Ctrl-C finds it: a suite started in the background by a shell
        # without job control inherits SIGINT ignored, and Python then keeps ignoring it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(demo.stdout.readline, "")))
    reader.start()
    try:
        wait_until(
            lambda: any("asking the manager for" in line for line in list(lines)),
            180,
            "the manager's tour under way",
            give_up=lambda: "the demo ended first" if demo.poll() is not None else None,
        )
        started = recorded_processes(ctl)
        demo.send_signal(signal.SIGINT)
        demo.wait(timeout=90)
    finally:
        processes.stop_child(demo)
        reader.join(30)
    output = "".join(lines)
    assert demo.returncode != 0, output
    assert lab_namespaces(ctl) == [] and lab_namespaces("demo") == [], output
    assert started and not any(processes.is_running(p) for p in started), output


def test_bench_build_writes_the_shared_results_schema_with_its_floor(tmp_path: Path) -> None:
    out = tmp_path / "build.json"
    report = tmp_path / "report"  # every bench writes a report; keep it out of the cwd
    args = ["--vrs", "20", "--hosts", "2", "--json", str(out), "--out", str(report)]
    vnet("bench", "build", *args, timeout=180)
    data = json.loads(out.read_text())
    assert data["schema"] == "vnet.bench.result/1" and data["name"] == "build"
    assert data["parameters"]["vrs"] == 20 and data["baseline"] == "ip -batch"
    samples = {(m["metric"], m["series"]): m["samples"] for m in data["measurements"]}
    assert samples[("re-apply operations", "lab")] == [0]
    assert len(samples[("up", "lab")]) == 1 and samples[("up", "ip -batch")][0] > 0
    per_vr = samples[("per VR", "lab")]
    assert len(per_vr) == 20 and min(per_vr) > 0
    assert lab_namespaces("bench") == [] and lab_namespaces("benchfloor") == []
    assert (report / "results.json").is_file()
