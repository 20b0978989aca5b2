"""Planning connections and bandwidth classes: make before break, pure and idempotent."""

from __future__ import annotations

import dataclasses
from typing import Any

from vnet.model import build_topology
from vnet.substrate import KernelState, lab_placement, plan, realize
from vnet.substrate.mbb import DRAIN_MIN, Drain, queued_bytes
from vnet.substrate.namespace import DeleteNamespace
from vnet.substrate.seg6 import (
    AddRule,
    AddSid,
    AddSteer,
    DeleteRule,
    DeleteSid,
    DeleteSteer,
    SwitchPath,
)
from vnet.substrate.tc import (
    LINK_MAJOR,
    PRIO_ANY_VXLAN,
    PRIO_NETWORK,
    PRIO_REST,
    PRIO_TENANT_ROUTING,
    VNET_MAJOR,
    AddTcClass,
    AddTcFilter,
    AddTcRoot,
    ChangeTcClass,
    DeleteTcClass,
    DeleteTcFilter,
    DeleteTcRoot,
    SetShaper,
    handle,
)

from .test_qos_model import PATH_A, PATH_B, VIDEO, load_testbed, with_connections


def state_of(data: dict[str, Any]) -> KernelState:
    topo = build_topology(data)
    return realize(topo, lab_placement(topo.name))


def kinds(ops: list[Any]) -> list[type]:
    return [type(op) for op in ops]


def with_handles(state: KernelState) -> KernelState:
    """What observe() would read back: the kernel numbers u32 filters 800::1, 800::2, ..."""
    out = dataclasses.replace(state)
    numbered = set()
    per_slot: dict[tuple[Any, ...], int] = {}
    for f in sorted(state.tc_filters, key=lambda f: (str(f.slot), f.match)):
        per_slot[f.slot] = per_slot.get(f.slot, 0) + 1
        numbered.add(dataclasses.replace(f, handle=0x80000000 | per_slot[f.slot], label=""))
    out.tc_filters = numbered
    return out


def test_connection_objects_come_after_the_base_plan_in_dependency_order() -> None:
    ops = plan(state_of(with_connections({**VIDEO, "bidirectional": True})), KernelState())
    k = kinds(ops)
    assert not any(issubclass(t, (DeleteRule, DeleteSteer, Drain, SwitchPath)) for t in k)
    base_kinds = (".namespace", ".link", ".address", ".route", ".fdb")
    last_base = max(
        i for i, t in enumerate(k) if t.__module__.endswith(base_kinds) or t is SetShaper
    )
    first_new = min(k.index(t) for t in (AddTcRoot, AddTcClass, AddSid, AddSteer, AddRule))
    assert last_base < first_new
    # roots, classes, filters; SIDs before the routes that use them; rules last
    assert k.index(AddTcRoot) < k.index(AddTcClass) < k.index(AddTcFilter)
    assert max(i for i, t in enumerate(k) if t is AddSid) < k.index(AddSteer)
    assert max(i for i, t in enumerate(k) if t is AddSteer) < k.index(AddRule)
    assert k.count(AddRule) == 4  # two directions, two families
    text = "\n".join(op.describe() for op in ops)
    assert (
        "ip -n vnet-emtest-R1 -4 rule add pref 1001 from 10.10.0.1/32 to 10.10.255.1/32 "
        "ipproto 17 dport 5201 iif eth0 lookup 65537 protocol 118" in text
    )
    assert (
        "ip -n vnet-emtest-R2 -6 route add fc00:1:2::1:6/128 encap seg6local action End.DX6 "
        "nh6 fd00:10:ff::1 dev eth0 proto 118" in text
    )
    assert "tc -n vnet-emtest-R1 qdisc add dev eth1 root handle 76: htb default 0" in text
    assert "match ip6 dst fc00:1:3::1:0/112 flowid 76:1" in text


def test_applying_the_same_state_plans_nothing() -> None:
    state = state_of(with_connections(VIDEO))
    assert plan(state, with_handles(state)) == []


def test_path_change_is_make_before_break_with_one_replace_per_route() -> None:
    old = with_handles(state_of(with_connections(VIDEO)))
    new = state_of(with_connections({**VIDEO, "path": PATH_B}))
    ops = plan(new, old)
    k = kinds(ops)
    switches = [op for op in ops if isinstance(op, SwitchPath)]
    assert len(switches) == 2  # IPv4 and IPv6 encap routes: one `ip route replace` each
    assert AddSteer not in k and DeleteSteer not in k and AddRule not in k
    first_switch, last_switch = k.index(SwitchPath), len(k) - 1 - k[::-1].index(SwitchPath)
    made = [i for i, t in enumerate(k) if t in (AddSid, AddTcRoot, AddTcClass, AddTcFilter)]
    broken = [i for i, t in enumerate(k) if t in (DeleteSid, DeleteTcRoot, DeleteTcClass)]
    assert made and broken
    assert max(made) < first_switch and last_switch < min(broken)
    drain = ops[last_switch + 1]
    assert isinstance(drain, Drain)
    # it waits for the old shaper's queue (eth1's classes go with its root), and for the
    # packets past it: the old transit SIDs go in this plan
    assert {dev for _, dev, _ in drain.classes} == {"eth1"} and drain.floor == DRAIN_MIN
    # the new transit SIDs are the ones of the new path, the old ones go
    added = {op.sid.ns.rsplit("-", 1)[1] for op in ops if isinstance(op, AddSid)}
    removed = {op.sid.ns.rsplit("-", 1)[1] for op in ops if isinstance(op, DeleteSid)}
    assert added == set(PATH_B[1:-1]) and removed == set(PATH_A[1:-1])
    # the shaper moves to R1's interface towards MR3 (eth2); eth1's root goes
    assert [op.cls.dev for op in ops if isinstance(op, AddTcClass)] == ["eth2"]
    assert [op.root.dev for op in ops if isinstance(op, DeleteTcRoot)] == ["eth1"]
    text = "\n".join(op.describe() for op in switches)
    assert (
        "route replace 10.10.255.1/32 table 65537 encap seg6 mode encap segs fc00:1:5::1:0" in text
    )


def test_a_host_without_sids_of_the_old_path_waits_for_its_own_queues_only() -> None:
    """An agent's plan holds one host: at an ingress that holds no SID of the old path,
    the break waits for the old shaper's queue to empty and no more (the old path's SIDs
    elsewhere go in a later transaction, which waits for what is in flight)."""

    def ingress_only(state: KernelState) -> KernelState:
        return dataclasses.replace(state, sids={})

    old = ingress_only(with_handles(state_of(with_connections(VIDEO))))
    new = ingress_only(state_of(with_connections({**VIDEO, "path": PATH_B})))
    ops = plan(new, old)
    [drain] = [op for op in ops if isinstance(op, Drain)]
    assert drain.classes and drain.floor == 0.0
    assert not any(isinstance(op, DeleteSid) for op in ops)


class Queues:
    """A kernel whose HTB classes hold `backlog` bytes, read after read (then empty)."""

    def __init__(self, backlog: list[int]):
        self.backlog = backlog
        self.reads = 0

    def index(self, ns: str | None, dev: str) -> int:
        return 7

    def classes(self, ns: str | None, index: int) -> list[Any]:
        self.reads += 1
        held = self.backlog.pop(0) if self.backlog else 0
        return [_Class(handle(VNET_MAJOR, 1), held), _Class(handle(VNET_MAJOR, 2), 10**6)]


@dataclasses.dataclass
class _Class:
    """The two things `queued_bytes` reads of a class message (pyroute2's tcmsg)."""

    handle: int
    backlog: int

    def __getitem__(self, key: str) -> int:
        assert key == "handle"
        return self.handle

    def get_nested(self, *path: str) -> dict[str, int]:
        assert path == ("TCA_STATS2", "TCA_STATS_QUEUE")
        return {"backlog": self.backlog}


def test_a_drain_ends_when_the_old_queues_are_empty() -> None:
    """Read after read until the classes that go hold nothing (another class's queue on the
    same interface does not count), or the old queue's time at its rate has passed."""
    gone = (("vnet-x-r1", "eth1", handle(VNET_MAJOR, 1)),)
    kernel = Queues([3000, 1500, 0])
    Drain(seconds=5.0, classes=gone).run(kernel)
    assert kernel.reads == 3
    assert queued_bytes(Queues([900]), gone) == 900
    stuck = Queues([3000] * 10**6)
    Drain(seconds=0.05, classes=gone).run(stuck)
    assert 1 < stuck.reads < 10**6  # gave up at its bound, without an error


def test_bandwidth_change_is_one_class_change_in_place() -> None:
    old = with_handles(state_of(with_connections(VIDEO)))
    ops = plan(state_of(with_connections({**VIDEO, "bandwidth": "300mbit"})), old)
    assert kinds(ops) == [ChangeTcClass]
    assert "class change dev eth1 parent 76: classid 76:1 htb rate 300mbit" in ops[0].describe()


def test_removal_deletes_rules_before_routes_and_filters_before_classes() -> None:
    old = with_handles(state_of(with_connections(VIDEO)))
    ops = plan(state_of(with_connections()), old)
    k = kinds(ops)
    assert Drain not in k and SwitchPath not in k
    assert max(i for i, t in enumerate(k) if t is DeleteRule) < k.index(DeleteSteer)
    assert k.index(DeleteSteer) < k.index(DeleteTcRoot) < k.index(DeleteSid)
    # the root takes its class and filter along
    assert DeleteTcClass not in k and DeleteTcFilter not in k


def test_network_bandwidth_adds_a_class_and_a_vni_filter_on_both_link_ends() -> None:
    data = load_testbed()
    old = with_handles(state_of(data))
    data["networks"][2]["bandwidth"] = "200mbit"  # r1-mr1, VNI 102
    ops = plan(state_of(data), old)
    adds = [op for op in ops if isinstance(op, AddTcClass)]
    assert {(op.cls.ns, op.cls.classid) for op in adds} == {
        ("vnet-emtest-esxi", handle(LINK_MAJOR, 102)),
        ("vnet-emtest-mininet", handle(LINK_MAJOR, 102)),
    }
    filters = [op for op in ops if isinstance(op, AddTcFilter)]
    assert len(filters) == 2 and all(op.filter.prio == PRIO_NETWORK for op in filters)
    # the best-effort class gives up what the network now has guaranteed
    changes = [op for op in ops if isinstance(op, ChangeTcClass)]
    assert {op.new.rate for op in changes} == {1_000_000_000 - 10_000_000 - 200_000_000}
    assert "u32 match vxlan vni 102 flowid 1:66" in filters[0].describe()


def test_a_new_link_rate_rebuilds_the_classes_below_it() -> None:
    data = load_testbed()
    old = with_handles(state_of(data))
    data["links"][0]["rate"] = "10gbit"
    ops = plan(state_of(data), old)
    k = kinds(ops)
    assert k.count(SetShaper) == 2
    # the reset root lost its classes: they are added again, not changed, not deleted
    # per end: any VXLAN, the rest, and the tenants' OSPFv2, OSPFv3, BFD, BFD6
    assert k.count(AddTcClass) == 4 and k.count(AddTcFilter) == 12
    assert ChangeTcClass not in k and DeleteTcClass not in k


def test_deleting_the_lab_deletes_only_namespaces() -> None:
    ops = plan(KernelState(), with_handles(state_of(with_connections(VIDEO))))
    assert ops and all(isinstance(op, DeleteNamespace) for op in ops)


def test_new_filters_leave_their_numbers_to_the_kernel() -> None:
    old = with_handles(state_of(with_connections(VIDEO)))
    new = state_of(with_connections(VIDEO, {**VIDEO, "name": "two", "dst_port": 5202}))
    filters = [op.filter for op in plan(new, old) if isinstance(op, AddTcFilter)]
    assert len(filters) == 1 and filters[0].classid == handle(VNET_MAJOR, 2)
    assert " handle " not in filters[0].describe()


def test_a_path_change_from_a_trusted_state_adds_the_new_filter_before_the_old_goes() -> None:
    """An agent plans from what its last commit left (realize's output: no kernel numbers).
    The new generation's filter sits in the old one's slot; its add names no node, so the
    kernel gives it a free one while the old filter still holds its own."""
    old = state_of(with_connections(VIDEO))
    new = state_of(with_connections({**VIDEO, "path": PATH_B}))
    ops = plan(new, old)
    adds = [op for op in ops if isinstance(op, AddTcFilter)]
    deletes = [op for op in ops if isinstance(op, DeleteTcFilter)]
    assert adds and all(op.filter.handle == 0 for op in adds)  # no number of the planner's
    if deletes:
        assert ops.index(adds[-1]) < ops.index(deletes[0])


def test_every_new_operation_has_an_inverse_that_prints() -> None:
    old = with_handles(state_of(with_connections(VIDEO)))
    for new in (
        state_of(with_connections({**VIDEO, "path": PATH_B, "bandwidth": "50mbit"})),
        state_of(with_connections()),
        state_of(with_connections(VIDEO)),
    ):
        for op in plan(new, KernelState()) + plan(new, old):
            assert op.inverse().inverse() == op
            assert op.describe() and op.inverse().describe()


def test_tenant_routing_inside_vxlan_rides_the_management_class() -> None:
    """OSPF and BFD of the tenants' VRs come first (their own prio), ahead of the networks'
    classes."""
    from vnet.substrate.tc import MANAGEMENT_MINOR
    from vnet.substrate.u32 import vxlan_routing_match

    state = state_of(load_testbed())
    ns, dev = next((f.ns, f.dev) for f in state.tc_filters)
    mine = sorted(
        (f for f in state.tc_filters if (f.ns, f.dev) == (ns, dev)), key=lambda f: (f.prio, f.label)
    )
    routing = [f for f in mine if f.label.startswith("match vxlan ospf") or "bfd" in f.label]
    assert sorted(f.label for f in routing) == [
        "match vxlan bfd",
        "match vxlan bfd6",
        "match vxlan ospfv2",
        "match vxlan ospfv3",
    ]
    assert all(
        f.prio == PRIO_TENANT_ROUTING and f.classid == handle(LINK_MAJOR, MANAGEMENT_MINOR)
        for f in routing
    )
    assert mine[: len(routing)] == routing, "before any network's class"
    assert PRIO_TENANT_ROUTING < PRIO_NETWORK < PRIO_ANY_VXLAN < PRIO_REST
    # IPv4 underlay: outer IP 20 + UDP 8 + VXLAN 8 = the inner frame at 36; its ethertype at
    # 48, the inner IPv4 protocol at 36 + 14 + 9 = 59, a BFD port at 36 + 14 + 20 + 2 = 72
    assert (59, 89, 0xFF) in vxlan_routing_match(0x0800, 89, None, False)
    assert {(48, 0x86, 0xFF), (56, 89, 0xFF)} <= set(vxlan_routing_match(0x86DD, 89, None, False))
    assert {(72, 0x0E, 0xFF), (73, 0xC8, 0xFF)} <= set(vxlan_routing_match(0x0800, 17, 3784, False))
