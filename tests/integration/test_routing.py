"""OSPF in VRs (FRRouting run by the agents) and failure injection in a three-host lab.

The triangle of examples/ospf-triangle.yaml: r1 (h1), r2 (h2), r3 (h3), pc1 behind
r1 and pc3 behind r3. ncclient and curl read the adjacencies and routes; fping
proves the tenant's reachability; `lab link down`, `lab host down` and a killed
daemon break things on purpose.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from lxml import etree
from ncclient import manager
from ncclient.operations import RPCError

from vnet.agent.routing.supervisor import MAX_RESTARTS
from vnet.client import Endpoint
from vnet.lab import faults, probes
from vnet.lab import lab as labmod
from vnet.lab.access import agent_endpoint
from vnet.tools import frr, processes, procfs
from vnet.tools.wait import wait_until

from .agent_support import netconf_connect
from .conftest import Labs, require_tools
from .test_restconf import curl

NS = "urn:vnet:yang:vnet-router"
N = {"vr": NS}
PC3 = "10.51.3.3"
CONVERGE = 60.0  # seconds: OSPF with hello 1 / dead 4 reaches Full in well under this
# seconds a VR's daemons may take to reach its zebra (FRR's zclient retries after 10)
ZEBRA_LATE = 4
POLL = 0.5  # each look at the state runs vtysh in the VR; no need to hammer it


@pytest.fixture(scope="module")
def lab(module_labs: Labs) -> str:
    require_tools("fping", "curl")
    if reason := frr.installed():
        pytest.skip(reason)
    name, path = module_labs.file("ospf-triangle.yaml")
    labmod.up(path)
    return name


def connect(lab: str, host: str) -> manager.Manager:
    ep = agent_endpoint(lab, host)
    return netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password)


@pytest.fixture
def h1(lab: str) -> Iterator[manager.Manager]:
    with connect(lab, "h1") as m:
        yield m


def routing_state(m: manager.Manager, vr: str) -> etree._Element:
    flt = f'<routers xmlns="{NS}"><router><name>{vr}</name><routing/></router></routers>'
    reply = m.get(filter=("subtree", flt))
    found = reply.data.find(".//vr:routing/vr:state", N)
    assert found is not None, reply.data_xml
    return found


def full_neighbors(state: etree._Element) -> set[tuple[str, str]]:
    return {
        (n.findtext("vr:family", namespaces=N), n.findtext("vr:router-id", namespaces=N))
        for n in state.iterfind("vr:neighbor", N)
        if n.findtext("vr:state", namespaces=N) == "Full"
    }


def route_via(state: etree._Element, destination: str) -> list[str]:
    for r in state.iterfind("vr:route", N):
        if r.findtext("vr:destination", namespaces=N) == destination:
            return [h.text or "" for h in r.iterfind("vr:next-hop", N)]
    return []


def reaches(lab: str, address: str = PC3) -> bool:
    return probes.fping(f"vnet-{lab}-pc1", address, count=1, timeout_ms=300).received == 1


def test_adjacencies_and_routes_over_netconf(lab: str, h1: manager.Manager) -> None:
    # r2's router id is its smallest IPv4 address, r3's 10.51.3.254 (its LAN's)
    want = {(f, rid) for f in ("ipv4", "ipv6") for rid in ("10.51.12.2", "10.51.3.254")}

    def converged() -> bool:
        s = routing_state(h1, "r1")
        # SPF runs again as each adjacency comes up: pc3's LAN may be via r2 for a moment
        direct = route_via(s, "10.51.3.0/24") == ["10.51.13.3"]
        return want <= full_neighbors(s) and direct and bool(route_via(s, "fd00:51:3::/64"))

    wait_until(converged, CONVERGE, "r1 Full with r2, r3 (v2, v3), routes to pc3", interval=POLL)
    state = routing_state(h1, "r1")
    assert state.findtext("vr:daemons", namespaces=N) == "running"
    # r3 may learn pc1's LAN a moment after r1 learned pc3's
    wait_until(lambda: reaches(lab) and reaches(lab, "fd00:51:3::3"), CONVERGE, "pc1 reaches pc3")


def zebra_clients(directory: Path) -> dict[str, int]:
    """Daemon -> seconds since it connected to the instance's zebra (its own account)."""
    argv = [frr.VTYSH, "--vty_socket", str(directory), "-c", "show zebra client summary"]
    found = {}
    for line in processes.check_output(argv, timeout=5).splitlines():
        if m := re.match(r"(\S+)\s+(\d+):(\d\d):(\d\d)\s", line):
            found[m[1]] = int(m[2]) * 3600 + int(m[3]) * 60 + int(m[4])
    return found


def zebra_age(directory: Path) -> int:
    """Seconds since the instance's zebra started (ps, by its recorded PID)."""
    records = json.loads((directory / frr.RECORDS).read_text())
    pid = next(r["pid"] for r in records if r["what"].startswith("zebra "))
    return int(processes.check_output(["ps", "-o", "etimes=", "-p", str(pid)], timeout=5))


def test_every_routing_daemon_reaches_zebra_as_it_starts(lab: str) -> None:
    """A daemon started before its zebra listened tried again only 10 s later (FRR's
    zclient), and OSPF's routes waited as long: the agent starts the others once zebra
    listens, so each is zebra's client within a few seconds of zebra's start."""
    clients = {"r1": ("h1", {"bfd", "ospf", "ospf6"}), "r2": ("h2", {"ospf", "ospf6"})}
    late = {
        vr: _late_to_zebra(frr.instance_dir(f"{lab}.{host}", vr), daemons)
        for vr, (host, daemons) in clients.items()
    }
    assert all(s <= ZEBRA_LATE for by in late.values() for s in by.values()), late


def test_a_vr_s_bfdd_has_its_control_socket_in_its_own_directory(lab: str) -> None:
    """Not at bfdd's default, one path for the whole machine that each VR's bfdd took over
    from the one before (and removed when it stopped)."""
    directory = frr.instance_dir(f"{lab}.h1", "r1")
    records = json.loads((directory / frr.RECORDS).read_text())
    pid = next(r["pid"] for r in records if r["what"].startswith("bfdd "))

    def listening() -> set[str]:
        return procfs.parse_unix_listening(Path(f"/proc/{pid}/net/unix").read_text())

    wait_until(lambda: str(directory / frr.BFDCTL) in listening(), CONVERGE, "r1's bfdd socket")
    assert "/var/run/frr/bfdd.sock" not in listening()


def _late_to_zebra(directory: Path, clients: set[str]) -> dict[str, int]:
    """Daemon -> seconds after zebra's start that it connected, once `clients` all have."""
    wait_until(lambda: clients <= zebra_clients(directory).keys(), CONVERGE, f"zebra's {clients}")
    age, connected = zebra_age(directory), zebra_clients(directory)
    return {name: age - since for name, since in connected.items()}


def restconf_of(lab: str, host: str) -> tuple[SimpleNamespace, Endpoint]:
    """What test_restconf's curl needs of an agent, and its endpoint (for the user)."""
    ep = agent_endpoint(lab, host, "restconf")
    return SimpleNamespace(address=ep.address, restconf_port=ep.port, namespace=ep.namespace), ep


WANTED_ROUTES = {"10.51.1.0/24", "fd00:51:1::/64"}  # r1's network, learned by r3


def test_routing_state_over_restconf(lab: str) -> None:
    at, ep = restconf_of(lab, "h3")

    def r3_state() -> dict | None:
        reply = curl(
            at,  # type: ignore[arg-type]
            "GET",
            "/restconf/data/vnet-router:routers/router=r3/routing",
            user=f"{ep.user}:{ep.password}",
        )
        assert reply.status == 200, reply.body
        state = reply.json()["vnet-router:routing"]["state"]
        full = [n for n in state.get("neighbor", []) if n["state"] == "Full"]
        # (routes come after the adjacencies, once SPF has run: a busy machine shows the gap)
        learned = {r["destination"] for r in state.get("route", [])}
        return state if len(full) == 4 and learned >= WANTED_ROUTES else None

    state = wait_until(
        r3_state, CONVERGE, "r3 Full with r1, r2 (v2, v3) and their routes", interval=POLL
    )
    assert state["daemons"] == "running" and state["restarts"] == 0


def _pids(lab: str, host: str, vr: str) -> set[int]:
    records = frr.instance_dir(f"{lab}.{host}", vr) / frr.RECORDS
    return {r["pid"] for r in json.loads(records.read_text())}


def test_only_a_change_frr_sees_restarts_the_daemons(lab: str, h1: manager.Manager) -> None:
    """A static route leaves r1's daemons (and adjacencies) alone; a new cost restarts them."""
    before = _pids(lab, "h1", "r1")
    route = (
        f'<config><routers xmlns="{NS}"><router><name>r1</name><route>'
        "<destination>10.99.0.0/16</destination><next-hop>10.51.12.2</next-hop>"
        "</route></router></routers></config>"
    )
    h1.edit_config(target="running", config=route)
    assert _pids(lab, "h1", "r1") == before
    cost = (
        f'<config><routers xmlns="{NS}"><router><name>r1</name><interface><name>eth0</name>'
        "<ospf><cost>11</cost></ospf></interface></router></routers></config>"
    )
    h1.edit_config(target="running", config=cost)
    assert not _pids(lab, "h1", "r1") & before, "restarted with the new cost"
    wait_until(
        lambda: len(full_neighbors(routing_state(h1, "r1"))) == 4,
        CONVERGE,
        "r1 Full again with r2 and r3",
        interval=POLL,
    )


def test_routing_rides_the_management_class_on_a_shaped_link(lab: str) -> None:
    """r1's OSPF and BFD (2 sessions at 100 ms) toward r3 leave h1 over ul-h3 in the
    guaranteed management class, not in a13's own class (VNI 513)."""
    from vnet.lab.shaping import ClassRef, sample_class
    from vnet.substrate import Kernel
    from vnet.substrate.tc import MANAGEMENT_MINOR, UNDERLAY_MAJOR, handle

    ns = f"vnet-{lab}-h1"
    mgmt = ClassRef(ns, "ul-h3", handle(UNDERLAY_MAJOR, MANAGEMENT_MINOR))
    a13 = ClassRef(ns, "ul-h3", handle(UNDERLAY_MAJOR, 513))
    with Kernel() as k:
        wait_until(lambda: reaches(lab), CONVERGE, "pc1 reaches pc3", interval=POLL)
        before = [sample_class(k, c) for c in (mgmt, a13)]
        wait_until(
            lambda: sample_class(k, mgmt).packets - before[0].packets >= 40,
            10,
            "40 packets in the management class",
            interval=POLL,
        )
        after = [sample_class(k, c) for c in (mgmt, a13)]
    management, tenant = (a.packets - b.packets for a, b in zip(after, before, strict=True))
    assert tenant <= management // 4, f"a13's class sent {tenant}, management {management}"


def test_a_routing_configuration_that_cannot_work_is_refused_at_its_path(
    lab: str, h1: manager.Manager
) -> None:
    rx = (
        f'<config><routers xmlns="{NS}"><router><name>rx</name>'
        "<routing><protocol>ospf</protocol></routing><interface><name>eth0</name>"
        "<network>a12</network><ipv4>10.51.12.9/24</ipv4><ipv6>fd00:51:12::9/64</ipv6>"
        "<ospf><area>0.0.0.7</area><hello>1</hello><dead>4</dead></ospf>"
        "</interface></router></routers></config>"
    )
    with pytest.raises(RPCError) as info:
        h1.edit_config(target="running", config=rx)
    assert info.value.path == (
        "/vr:routers/vr:router[vr:name='rx']/vr:interface[vr:name='eth0']/vr:ospf/vr:area"
    ), info.value.xml
    assert "differs from 0.0.0.0 of router 'r1' interface 'eth0'" in str(info.value)
    assert not frr.instance_dir(f"{lab}.h1", "rx").exists(), "nothing started"
    at, ep = restconf_of(lab, "h1")
    body = json.dumps({"vnet-router:ospf": {"hello": 1, "dead": 4, "bfd": {"min-rx": 5}}})
    reply = curl(
        at,  # type: ignore[arg-type]
        "PUT",
        "/restconf/data/vnet-router:routers/router=r1/interface=eth0/ospf",
        body,
        ctype="application/yang-data+json",
        user=f"{ep.user}:{ep.password}",
    )
    assert reply.status == 400, reply.body
    assert reply.error()["error-path"] == (
        "/vnet-router:routers/router[name='r1']/interface[name='eth0']/ospf/bfd/min-rx"
    ), reply.body


def test_a_link_down_restores_pings_through_the_other_path(lab: str, h1: manager.Manager) -> None:
    wait_until(lambda: reaches(lab), CONVERGE, "pc1 reaches pc3")
    faults.set_link(lab, "h1-h3", up=False)
    try:
        # BFD on a13 (3 x 100 ms) takes r3 down at once; r2 carries the traffic then
        wait_until(lambda: reaches(lab), CONVERGE, "pc1 reaches pc3 through r2")
        assert route_via(routing_state(h1, "r1"), "10.51.3.0/24") == ["10.51.12.2"]
    finally:
        faults.set_link(lab, "h3-h1", up=True)
    wait_until(
        lambda: route_via(routing_state(h1, "r1"), "10.51.3.0/24") == ["10.51.13.3"],
        CONVERGE,
        "r1 back on the direct link",
        interval=POLL,
    )


def test_lab_up_during_a_link_fault_brings_the_link_back(lab: str) -> None:
    """The file says the link is up: `lab up` heals the fault (and puts its routes back)."""
    rec = labmod.read_record(lab)
    assert rec is not None and rec.file is not None
    faults.set_link(lab, "h1-h2", up=False)
    ns, far = f"vnet-{lab}-h1", _address_on(f"vnet-{lab}-h2", "ul-h1")
    assert probes.fping(ns, far, count=1).received == 0
    labmod.up(rec.file)
    assert probes.fping(ns, far, count=3).received == 3


def test_a_killed_routing_daemon_is_detected_and_repaired(lab: str) -> None:
    """Repaired within the restart policy, and told: a router-event "routing" notification."""
    records = frr.instance_dir(f"{lab}.h2", "r2") / frr.RECORDS
    ospfd = next(r for r in json.loads(records.read_text()) if r["what"].startswith("ospfd"))
    with connect(lab, "h2") as h2, connect(lab, "h2") as listener:
        listener.create_subscription()
        os.kill(ospfd["pid"], signal.SIGKILL)
        event = listener.take_notification(timeout=10)
        assert event is not None, "no notification within 10 s"
        xml = event.notification_xml
        assert "<router>r2</router>" in xml and "<operation>routing</operation>" in xml, xml
        assert "<result>success</result>" in xml and "ospfd exited" in xml, xml

        def repaired() -> bool:
            s = routing_state(h2, "r2")
            return s.findtext("vr:restarts", namespaces=N) == "1" and len(full_neighbors(s)) == 4

        wait_until(repaired, CONVERGE, "r2 restarted and Full again", interval=POLL)
        last_error = routing_state(h2, "r2").findtext("vr:last-error", namespaces=N)
    assert last_error is not None and "ospfd" in last_error
    new = json.loads(records.read_text())
    assert ospfd["pid"] not in [r["pid"] for r in new]


def _kill_ospfd(lab: str, host: str, vr: str) -> bool:
    """SIGKILL the VR's running ospfd (by its recorded PID and start time); False if none runs."""
    records = frr.instance_dir(f"{lab}.{host}", vr) / frr.RECORDS
    for r in json.loads(records.read_text()):
        rec = processes.ProcessRecord(**r)
        if rec.what.startswith("ospfd") and processes.is_running(rec):
            os.kill(rec.pid, signal.SIGKILL)
            return True
    return False


def _router_field(m: manager.Manager, vr: str, path: str) -> str | None:
    flt = f'<routers xmlns="{NS}"><router><name>{vr}</name></router></routers>'
    return m.get(filter=("subtree", flt)).data.findtext(f".//vr:router/{path}", namespaces=N)


def _daemons(m: manager.Manager) -> tuple[str | None, str | None]:
    state = routing_state(m, "r2")
    return (state.findtext("vr:daemons", namespaces=N), state.findtext("vr:restarts", namespaces=N))


def test_a_daemon_that_keeps_dying_fails_the_vr_until_it_is_restarted(lab: str) -> None:
    """The restart policy is bounded: past MAX_RESTARTS deaths in the window the VR is failed
    with the reason, nothing of it runs; setting it down and up starts it afresh."""
    with connect(lab, "h2") as h2:
        for _ in range(MAX_RESTARTS + 2):
            state = routing_state(h2, "r2")
            if state.findtext("vr:daemons", namespaces=N) == "failed":
                break
            before = state.findtext("vr:restarts", namespaces=N)
            wait_until(lambda: _kill_ospfd(lab, "h2", "r2"), 10, "r2's ospfd running", interval=0.1)
            wait_until(
                lambda b=before: (
                    (s := routing_state(h2, "r2")).findtext("vr:restarts", namespaces=N) != b
                    or s.findtext("vr:daemons", namespaces=N) == "failed"
                ),
                CONVERGE,
                "r2's daemons restarted or failed",
                interval=POLL,
            )
        state = routing_state(h2, "r2")
        assert state.findtext("vr:daemons", namespaces=N) == "failed", etree.tostring(state)
        assert f"{MAX_RESTARTS} restarts in 60 s" in (
            state.findtext("vr:last-error", namespaces=N) or ""
        )
        assert _router_field(h2, "r2", "vr:oper-state") == "failed"
        assert not _kill_ospfd(lab, "h2", "r2"), "a failed VR's daemons are all stopped"
        for admin in ("down", "up"):
            h2.edit_config(
                target="running",
                config=f'<config><routers xmlns="{NS}"><router><name>r2</name>'
                f"<admin-state>{admin}</admin-state></router></routers></config>",
            )
        wait_until(
            lambda: len(full_neighbors(routing_state(h2, "r2"))) == 4,
            CONVERGE,
            "r2 Full again after down and up",
            interval=POLL,
        )
        assert routing_state(h2, "r2").findtext("vr:daemons", namespaces=N) == "running"


def test_loss_on_a_link_is_measured_within_tolerance(lab: str) -> None:
    """10 % each way: a round trip is lost with 1 - 0.9^2 = 19 %; 1000 probes, +-5 points
    (the binomial's standard deviation is 1.2 points)."""
    far = _address_on(f"vnet-{lab}-h2", "ul-h1")
    faults.set_link_loss(lab, "h1-h2", faults.parse_share("10%"))
    try:
        got = probes.fping(f"vnet-{lab}-h1", far, count=1000, interval_ms=2, timeout_ms=200)
    finally:
        faults.set_link_loss(lab, "h1-h2", faults.parse_share("0"))
    lost = 1 - got.received / got.sent
    assert abs(lost - 0.19) < 0.05, f"round-trip loss {lost:.1%} of {got.sent} probes"
    after = probes.fping(f"vnet-{lab}-h1", far, count=100, interval_ms=2, timeout_ms=200)
    assert after.received == 100, "0 % removes the program"


def test_host_down_and_up(lab: str, h1: manager.Manager) -> None:
    wait_until(lambda: reaches(lab), CONVERGE, "pc1 reaches pc3", interval=POLL)
    assert faults.host_down(lab, "h2") is True
    try:
        assert not labmod.status(lab).agents["h2"]["running"]
        wait_until(
            lambda: (
                not any(rid == "10.51.12.2" for _, rid in full_neighbors(routing_state(h1, "r1")))
            ),
            CONVERGE,
            "r1 loses r2",
            interval=POLL,
        )
        # r1 and r3 run their SPF again without r2: a moment without a route at most
        wait_until(lambda: reaches(lab), CONVERGE, "pc1 reaches pc3 over a13", interval=POLL)
    finally:
        faults.host_up(lab, "h2")
    assert labmod.status(lab).agents["h2"]["running"]
    wait_until(
        lambda: ("ipv4", "10.51.12.2") in full_neighbors(routing_state(h1, "r1")),
        CONVERGE,
        "r1 Full with r2 again",
        interval=POLL,
    )


def test_deleting_a_vr_stops_its_daemons(lab: str) -> None:
    d = frr.instance_dir(f"{lab}.h2", "r2")
    running = [
        rec
        for r in json.loads((d / frr.RECORDS).read_text())
        if processes.is_running(rec := processes.ProcessRecord(**r))
    ]
    assert len(running) == 3, "zebra, ospfd, ospf6d"
    with connect(lab, "h2") as h2:
        h2.edit_config(
            target="running",
            config=f'<config><routers xmlns="{NS}"><router '
            'xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="delete">'
            "<name>r2</name></router></routers></config>",
        )
    assert [r for r in running if processes.is_running(r)] == []
    assert not d.exists()


def frr_processes(lab: str) -> list[int]:
    """PIDs of FRR daemons whose directory is one of this lab's agents'."""
    marker = f"{frr.RUN_ROOT}/{lab}.".encode()
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(str(frr.FRR_LIBEXEC).encode()) and marker in cmdline:
                out.append(int(entry.name))
    return out


def test_lab_down_leaves_no_frr_process(lab: str) -> None:
    """Also when an agent was killed without a chance to stop its daemons (kill -9)."""
    assert len(frr_processes(lab)) >= 3
    rec = labmod.read_record(lab)
    assert rec is not None
    agent = next(p for p in rec.processes if p.what == "agent h3")
    os.kill(agent.pid, signal.SIGKILL)
    labmod.down(lab)
    assert frr_processes(lab) == []
    assert not (frr.RUN_ROOT / f"{lab}.h3").exists()


def _address_on(ns: str, port: str) -> str:
    from vnet.tools.processes import run

    out = run(ns, ["ip", "-4", "-o", "addr", "show", "dev", port], timeout=5).stdout
    return out.split("inet ")[1].split("/")[0]
