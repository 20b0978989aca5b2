"""Failure detection with real agents (issue 25, part 2): the lab's controller follows every
agent's notifications, so a link cut with `vnet lab link down` is `down` in GET /links, and
`up` again after `link up`; a host powered off with `vnet lab host down` is `unreachable` in
GET /hosts within 2 s, and `up` again after `host up`, and so is a host whose agent hangs
(SIGSTOP by its PID: no session ends, only the probe finds it); each change is an
`event: state` on GET /events. curl (an independent client) reads the API from the
management namespace.

The lab is the session's examples/controller.yaml (conftest.py `controller_example_labs`),
borrowed and left as found: every fault is undone in a `finally`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from vnet.lab import faults
from vnet.lab import lab as labmod
from vnet.lab.access import controller_access
from vnet.tools import processes
from vnet.tools.processes import stop_child
from vnet.tools.wait import wait_until

from .conftest import vnet
from .test_lab_controller import conn
from .test_qos import send_udp, udp_received
from .world_support import SpendableLab

DETECTED = 2.0  # seconds: the goal for a host's failure
# a hung agent is found by the probe: within liveness_interval + liveness_timeout (0.5 + 1 s
# by default), give or take a loaded machine's scheduling
PROBED = 0.5 + 1.0 + 1.0
SEEN = 10.0  # seconds a change may take to show through curl on a loaded machine
DATAGRAMS = 500


@pytest.fixture(scope="module")
def lab(controller_example_labs: SpendableLab) -> tuple[str, Path]:
    return controller_example_labs.borrow()


def _curl(name: str, path: str, *more: str) -> list[str]:
    access = controller_access(name)
    token = Path(access.token_file).read_text().strip()
    return [
        *("ip", "netns", "exec", access.namespace, "curl", "-sS", *more),
        *("--cacert", str(access.certificate)),
        *("-H", f"Authorization: Bearer {token}", f"{access.url}/api/v1{path}"),
    ]


def get(name: str, path: str) -> Any:
    done = subprocess.run(
        _curl(name, path, "--max-time", "10"), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def status(name: str, kind: str, element: str) -> dict[str, Any]:
    views = get(name, f"/{kind}s")
    return next(v["status"] for v in views if v["name"] == element)


def shows(name: str, kind: str, element: str, state: str) -> dict[str, Any] | None:
    found = status(name, kind, element)
    return found if found["state"] == state else None


class Events:
    """curl following GET /events; the lines it received so far."""

    def __init__(self, name: str):
        self.process = subprocess.Popen(_curl(name, "/events", "-N"), stdout=subprocess.PIPE)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.decode().rstrip("\n"))

    def states(self) -> list[dict[str, Any]]:
        """The `event: state` changes received so far."""
        out = []
        for kind, data in zip(self.lines, self.lines[1:], strict=False):
            if kind == "event: state":
                out.append(json.loads(data.removeprefix("data: ")))
        return out

    def saw(self, kind: str, element: str, state: str) -> bool:
        return any(
            (c["kind"], c["name"], c["status"]["state"]) == (kind, element, state)
            for c in self.states()
        )

    def stop(self) -> None:
        stop_child(self.process)
        self._reader.join(10)


def test_a_link_cut_is_down_in_links_and_up_again(lab: tuple[str, Path]) -> None:
    name, _ = lab
    wait_until(lambda: shows(name, "link", "h1-h2", "up"), SEEN, "h1-h2 up at first")
    events = Events(name)
    try:
        wait_until(lambda: events.lines, SEEN, "the stream's first event")
        vnet("lab", "link", "down", "h1-h2", "--lab", name)
        try:
            down = wait_until(lambda: shows(name, "link", "h1-h2", "down"), SEEN, "h1-h2 down")
            assert down["reported_by"] in ("h1", "h2")
            assert "ul-h" in down["reason"] and "is down" in down["reason"]
            assert status(name, "link", "h1-h3")["state"] == "up"  # the others work
            assert status(name, "host", "h1")["state"] == "up"  # a link is not its host
        finally:
            vnet("lab", "link", "up", "h1-h2", "--lab", name)
        wait_until(lambda: shows(name, "link", "h1-h2", "up"), SEEN, "h1-h2 up again")
        wait_until(lambda: events.saw("link", "h1-h2", "up"), SEEN, "the event of h1-h2 up")
        assert events.saw("link", "h1-h2", "down")
    finally:
        events.stop()


def test_a_host_powered_off_is_unreachable_within_2_s_and_up_after(
    lab: tuple[str, Path],
) -> None:
    name, _ = lab
    wait_until(lambda: shows(name, "host", "h2", "up"), SEEN, "h2 up at first")
    events = Events(name)
    try:
        wait_until(lambda: events.lines, SEEN, "the stream's first event")
        before = time.time()
        # the function `vnet lab host down` runs, timed from the moment it starts
        assert faults.host_down(name, "h2") is True
        try:
            seen = wait_until(lambda: shows(name, "host", "h2", "unreachable"), SEEN, "h2 gone")
            detected = datetime.fromisoformat(seen["since"]).timestamp() - before
            assert detected < DETECTED, f"h2 unreachable {detected:.2f} s after host down"
            assert seen["reported_by"] == "controller"
            # its links lost their carrier: the surviving ends say so
            wait_until(lambda: shows(name, "link", "h1-h2", "down"), SEEN, "h1-h2 down")
            wait_until(lambda: shows(name, "link", "h2-h3", "down"), SEEN, "h2-h3 down")
        finally:
            vnet("lab", "host", "up", "h2", "--lab", name, timeout=180)
        wait_until(lambda: shows(name, "host", "h2", "up"), SEEN, "h2 up again")
        wait_until(lambda: shows(name, "link", "h2-h3", "up"), SEEN, "h2-h3 up again")
        wait_until(lambda: events.saw("host", "h2", "up"), SEEN, "the event of h2 up")
        assert events.saw("host", "h2", "unreachable")
    finally:
        events.stop()


def test_a_hung_agent_is_unreachable_within_the_probes_bound_and_its_links_stay_up(
    lab: tuple[str, Path],
) -> None:
    name, _ = lab
    wait_until(lambda: shows(name, "host", "h3", "up"), SEEN, "h3 up at first")
    rec = labmod.read_record(name)
    assert rec is not None
    agent = next(p for p in rec.processes if p.what == "agent h3")
    assert processes.is_running(agent)
    before = time.time()
    os.kill(agent.pid, signal.SIGSTOP)
    try:
        seen = wait_until(lambda: shows(name, "host", "h3", "unreachable"), SEEN, "h3 hung")
        detected = datetime.fromisoformat(seen["since"]).timestamp() - before
        assert detected < PROBED, f"h3 unreachable {detected:.2f} s after SIGSTOP"
        assert "probe" in seen["reason"] or "no answer" in seen["reason"], seen
        # the host still forwards: its links are as their other ends say, up
        assert status(name, "link", "h1-h3")["state"] == "up"
    finally:
        os.kill(agent.pid, signal.SIGCONT)
    wait_until(lambda: shows(name, "host", "h3", "up"), SEEN, "h3 up again")


def test_a_connection_on_a_cut_link_runs_again_on_the_surviving_path(
    lab: tuple[str, Path],
) -> None:
    """voice (20 Mbit/s, h1 -> h3 directly) when h1-h3 is cut: the controller learns it from
    the agents and moves voice onto h1-h2-h3 with nobody asking, and every datagram of voice
    arrives over h2; when the link returns, voice stays where it is (no
    flapping)."""
    name, _ = lab
    wait_until(lambda: shows(name, "link", "h1-h3", "up"), SEEN, "h1-h3 up at first")
    voice = ("voice", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp", "--dport", "5060")
    made = json.loads(conn(name, "request", *voice, "--json").stdout)["connection"]
    assert made["path"] == ["h1", "h3"]
    url = "/tenants/acme/connections/voice"
    try:
        cut = time.monotonic()
        vnet("lab", "link", "down", "h1-h3", "--lab", name)
        try:
            wait_until(lambda: get(name, url)["path"] == ["h1", "h2", "h3"], SEEN, "voice moved")
            print(f"voice on its new path {time.monotonic() - cut:.2f} s after the link went down")
            assert "rerouted" in [e["kind"] for e in get(name, url + "/history")]
            # iperf3 cannot run: its control connection takes the tenant's static route,
            # over the cut link; the connection's own datagrams arrive, over h2 (in a tenant
            # routed by OSPF iperf3 runs: test_lab_controller_ospf.py)
            before = udp_received(f"vnet-{name}-pc3")
            send_udp(f"vnet-{name}-pc1", "10.50.3.1", 5060, DATAGRAMS)
            wait_until(
                lambda: udp_received(f"vnet-{name}-pc3") - before >= DATAGRAMS,
                SEEN,
                "every datagram of voice at pc3",
            )
        finally:
            vnet("lab", "link", "up", "h1-h3", "--lab", name)
        wait_until(lambda: shows(name, "link", "h1-h3", "up"), SEEN, "h1-h3 up again")
        assert get(name, url)["path"] == ["h1", "h2", "h3"], "moved back on its own"
    finally:
        conn(name, "release", "voice")


def test_a_pinned_connection_on_a_cut_link_is_degraded_and_restored_when_it_returns(
    lab: tuple[str, Path],
) -> None:
    """pinned (10 Mbit/s, asked for over h1 -> h3) cannot move when h1-h3 is cut: it is
    `degraded` with the reason, keeps its reservation, and is established again on its path
    when the link returns; each change is in its history."""
    name, _ = lab
    wait_until(lambda: shows(name, "link", "h1-h3", "up"), SEEN, "h1-h3 up at first")
    pinned = ("pinned", "pc1", "pc3", "--bandwidth", "10mbit", "--protocol", "udp")
    made = json.loads(
        conn(name, "request", *pinned, "--dport", "5070", "--path", "h1,h3", "--json").stdout
    )
    assert made["connection"]["path"] == ["h1", "h3"]
    url = "/tenants/acme/connections/pinned"
    try:
        vnet("lab", "link", "down", "h1-h3", "--lab", name)
        try:
            wait_until(lambda: get(name, url)["status"] == "degraded", SEEN, "pinned degraded")
            why = [e for e in get(name, url + "/history") if e["kind"] == "degraded"]
            assert why and "explicitly" in why[-1]["detail"], why
            assert get(name, url)["path"] == ["h1", "h3"]  # where it was: nothing else fits
            held = {x["name"]: x for x in get(name, "/links")}["h1-h3"]
            assert any(d["reserved_bps"] >= 10_000_000 for d in held["directions"])  # kept
        finally:
            vnet("lab", "link", "up", "h1-h3", "--lab", name)
        wait_until(lambda: get(name, url)["status"] == "established", SEEN, "pinned restored")
        assert "restored" in [e["kind"] for e in get(name, url + "/history")]
    finally:
        conn(name, "release", "pinned")
