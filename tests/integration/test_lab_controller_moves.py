"""Moves on a lab made from examples/controller.yaml as a new user runs it (`vnet lab up`, then
`vnet conn ...`): a `vnet conn modify --path` and a rearrangement each move a connection
while iperf3 sends UDP on its 5-tuple, and not one datagram is lost; a modify that changes
nothing is a 400 that leaves the generation as it was.

In this file every VR has one core interface, so a connection's old and new path leave its
ingress VR by the same interface and its shaper's old and new u32 filter share one slot:
the case the service tests' lab (one network per link) never made, where every move failed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from vnet.lab.probes import fping
from vnet.lab.shaping import FlowResult, run_flow

from .conftest import Labs, require_tools, vnet

PC3 = "10.50.3.1"
FLOW_SECONDS = 8.0  # room for the move on a loaded machine: it starts 1 s in


@pytest.fixture(scope="module")
def lab(module_labs: Labs) -> str:
    require_tools("iperf3", "fping")
    name, path = module_labs.file("controller.yaml")
    vnet("lab", "up", str(path), timeout=180)
    return name


def conn(name: str, *args: str, check: bool = True):  # type: ignore[no-untyped-def]
    return vnet("conn", *args, "--lab", name, check=check, timeout=90)


def shown(name: str, connection: str) -> dict:  # type: ignore[type-arg]
    return json.loads(conn(name, "show", connection, "--json").stdout)


def ns(lab: str, node: str) -> str:
    return f"vnet-{lab}-{node}"


def moved_during_udp(lab: str, port: int, move: Callable[[], None]) -> FlowResult:
    """10 Mbit/s of UDP from pc1 to pc3:port for FLOW_SECONDS, `move()` run 1 s in; the move
    must have finished while the flow still ran."""
    fping(ns(lab, "pc1"), PC3, count=3)  # neighbours resolved before the count starts
    finished: list[float] = []

    def timed_move() -> None:
        move()
        finished.append(time.monotonic())

    started = time.monotonic()
    flow = run_flow(
        ns(lab, "pc1"),
        ns(lab, "pc3"),
        PC3,
        seconds=FLOW_SECONDS,
        protocol="udp",
        rate_bps=10e6,
        length=1200,
        port=port,
        at=(1.0, timed_move),
    )
    assert finished, "the move did not finish"
    assert finished[0] - started < FLOW_SECONDS, "the move finished after the flow"
    return flow


def test_modify_path_moves_live_udp_without_a_lost_datagram(lab: str) -> None:
    args = ("voice", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp", "--dport", "5060")
    made = json.loads(conn(lab, "request", *args, "--json").stdout)["connection"]
    assert made["path"] == ["h1", "h3"], made
    answers: list[dict] = []  # type: ignore[type-arg]

    def modify() -> None:
        done = conn(lab, "modify", "voice", "--path", "h1,h2,h3", "--json")
        answers.append(json.loads(done.stdout))

    try:
        flow = moved_during_udp(lab, 5060, modify)
        assert answers and answers[0]["connection"]["path"] == ["h1", "h2", "h3"], answers
        assert flow.packets and flow.lost_packets == 0, (
            f"{flow.lost_packets} of {flow.packets} datagrams lost during the move"
        )
        after = shown(lab, "voice")
        assert (after["generation"], after["path"]) == (2, ["h1", "h2", "h3"]), after
        # the same bandwidth on the same path changes nothing: a precise 400, generation kept
        same = conn(lab, "modify", "voice", "--bandwidth", "20mbit", check=False)
        assert same.returncode == 1, same
        assert "no-change (HTTP 400)" in same.stderr and "bandwidth" in same.stderr, same.stderr
        assert shown(lab, "voice")["generation"] == 2
    finally:
        conn(lab, "release", "voice")


def test_a_rearrangement_moves_live_udp_without_a_lost_datagram(lab: str) -> None:
    """ "mover" (20 Mbit/s, the controller's path h1 -> h3) carries UDP; "pinned" asks for
    70 Mbit/s on h1-h3 explicitly: it fits only once mover goes round by h2."""
    args = ("mover", "pc1", "pc3", "--bandwidth", "20mbit", "--protocol", "udp", "--dport", "5070")
    assert json.loads(conn(lab, "request", *args, "--json").stdout)["connection"]["path"] == [
        "h1",
        "h3",
    ]
    answers: list[dict] = []  # type: ignore[type-arg]

    def pin() -> None:
        pinned = ("pinned", "pc1", "pc3", "--bandwidth", "70mbit", "--protocol", "tcp")
        done = conn(lab, "request", *pinned, "--path", "h1,h3", "--json")
        answers.append(json.loads(done.stdout))

    try:
        flow = moved_during_udp(lab, 5070, pin)
        assert answers, "the pinned request did not finish"
        moved = [(m["connection"], m["new_path"]) for m in answers[0]["moved"]]
        assert moved == [("mover", ["h1", "h2", "h3"])], answers[0]
        assert flow.packets and flow.lost_packets == 0, (
            f"{flow.lost_packets} of {flow.packets} datagrams lost during the rearrangement"
        )
        assert [e["kind"] for e in shown(lab, "mover")["history"]] == ["created", "moved"]
    finally:
        for name in ("pinned", "mover"):
            conn(lab, "release", name, check=False)
    assert json.loads(conn(lab, "list", "--json").stdout) == []
