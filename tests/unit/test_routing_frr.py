"""FRR's configuration from the model, and the pure parts of failure injection."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path

import pytest

from vnet.agent.routing.frrconf import config_files, daemons
from vnet.agent.routing.supervisor import Instance, RoutingSupervisor
from vnet.lab.faults import link_of, parse_share
from vnet.lab.lab import LabError
from vnet.model import build_topology
from vnet.substrate import loss

from .test_routing_model import BASE

D = Path("/run/x/r1")


def _r1(ospf: dict, routing: dict | None = None):  # type: ignore[no-untyped-def]
    data = copy.deepcopy(BASE)
    data["routers"][0]["interfaces"][0]["ospf"] = ospf
    data["routers"][1]["interfaces"][0]["ospf"] = {k: v for k, v in ospf.items() if k != "cost"}
    if routing is not None:
        data["routers"][0]["routing"] = routing
    return build_topology(data).router("r1")


def test_ospfv2_and_v3_with_bfd_profiles() -> None:
    vr = _r1({"area": 1, "cost": 7, "hello": 1, "dead": 4, "bfd": {"min_rx": 100}})
    assert daemons(vr) == ["zebra", "bfdd", "ospfd", "ospf6d"]
    files = config_files(vr, D)
    assert files["ospfd.conf"] == (
        "hostname r1\n"
        "log file /run/x/r1/ospfd.log\n"
        "!\n"
        "interface eth0\n"
        " ip ospf area 0.0.0.1\n"
        " ip ospf hello-interval 1\n"
        " ip ospf dead-interval 4\n"
        " ip ospf cost 7\n"
        " ip ospf bfd\n"
        " ip ospf bfd profile eth0\n"
        "!\n"
        "router ospf\n"
        " ospf router-id 10.0.0.1\n"
        " redistribute connected\n"
        "!\n"
    )
    assert " ipv6 ospf6 area 0.0.0.1\n" in files["ospf6d.conf"]
    assert " ospf6 router-id 10.0.0.1\n" in files["ospf6d.conf"]
    assert (
        " profile eth0\n  receive-interval 100\n  transmit-interval 300\n  detect-multiplier 3\n"
        in files["bfdd.conf"]
    )
    assert "interface eth1" not in files["ospfd.conf"], "the stub network forms no adjacency"


def test_a_passive_interface_is_in_the_area_without_hellos() -> None:
    data = copy.deepcopy(BASE)
    data["routers"][0]["interfaces"][1]["ospf"] = {"passive": True}  # its network: IPv4 only
    data["routers"][0]["routing"]["families"] = ["ipv4"]
    files = config_files(build_topology(data).router("r1"), D)
    block = files["ospfd.conf"].split("interface eth1\n")[1].split("!")[0]
    assert block == " ip ospf area 0.0.0.0\n ip ospf hello-interval 10\n" + (
        " ip ospf dead-interval 40\n ip ospf passive\n"
    ), files["ospfd.conf"]


def test_only_the_families_asked_for_run() -> None:
    vr = _r1({}, {"protocol": "ospf", "families": ["ipv6"], "router_id": "9.9.9.9"})
    assert daemons(vr) == ["zebra", "ospf6d"]
    assert set(config_files(vr, D)) == {"zebra.conf", "ospf6d.conf"}
    assert " ospf6 router-id 9.9.9.9\n" in config_files(vr, D)["ospf6d.conf"]


@pytest.mark.parametrize(
    "text, share", [("2%", Fraction(1, 50)), ("0.5", Fraction(1, 200)), ("100%", 1), ("0", 0)]
)
def test_loss_shares(text: str, share: Fraction) -> None:
    assert parse_share(text) == share


@pytest.mark.parametrize("text", ["-1%", "101%", "lots", ""])
def test_bad_loss_is_refused(text: str) -> None:
    with pytest.raises(LabError, match="--loss"):
        parse_share(text)


def test_the_loss_program_draws_against_its_threshold() -> None:
    assert loss.threshold(Fraction(1, 50)) == round(2**32 / 50)
    assert loss.threshold(Fraction(1)) == 2**32  # every u32 draw is below: all dropped
    program = loss.program(Fraction(1, 50))
    assert len(program) == 8 * 8
    assert program[8] == loss.LD_IMM64  # the 64-bit threshold, so 100 % fits


def test_links_are_named_by_their_hosts_in_either_order() -> None:
    topo = build_topology(copy.deepcopy(BASE))
    assert link_of(topo, "h2-h1") == topo.links[0]
    with pytest.raises(LabError, match=r"no link 'h1-h3' in lab 't' \(its links: h1-h2\)"):
        link_of(topo, "h1-h3")


class _Recording(RoutingSupervisor):
    """Starts and stops nothing but a record (the daemons are the integration tests')."""

    def __init__(self) -> None:
        super().__init__("t", lambda name: f"ns-{name}")
        self.done: list[tuple[str, str]] = []

    def _start(self, inst: Instance) -> None:
        self.done.append(("start", inst.vr.name))

    def _stop(self, inst: Instance) -> None:
        self.done.append(("stop", inst.vr.name))


def test_a_sync_given_what_a_commit_changed_leaves_the_other_instances_alone() -> None:
    topo = build_topology(BASE)
    r1, r2 = topo.router("r1"), topo.router("r2")
    sup = _Recording()
    sup.sync([r1, r2])
    assert sup.done == [("start", "r1"), ("start", "r2")]
    sup.done.clear()
    sup.sync([], only={"r3"})  # a static VR deleted: nothing of OSPF to do
    sup.sync([r1], only={"r1"})  # r1 as it was
    assert sup.done == []
    sup.sync([], only={"r2"})  # r2 deleted
    assert sup.done == [("stop", "r2")] and set(sup.instances) == {"r1"}
    sup.done.clear()
    sup.sync([])  # everything, and no VR: r1 goes too
    assert sup.done == [("stop", "r1")] and sup.instances == {}
