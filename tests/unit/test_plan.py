"""Planning is pure: desired vs actual state in, ordered operations out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from vnet.lab.topology_file import load_topology
from vnet.model.underlay import underlay_addressing
from vnet.substrate import KernelState, lab_placement, plan, realize
from vnet.substrate.address import AddAddress, Address, DeleteAddress
from vnet.substrate.link import CreateLink, DeleteLink, ModifyLink
from vnet.substrate.namespace import CreateNamespace, DeleteNamespace
from vnet.substrate.redirect import SetRedirect
from vnet.substrate.route import AddRoute, DeleteRoute

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two-tenants.yaml"


def desired() -> KernelState:
    topo = load_topology(EXAMPLE)
    return realize(topo, lab_placement(topo.name))


def test_from_nothing_creates_top_down() -> None:
    ops = plan(desired(), KernelState())
    kinds = [type(op) for op in ops]
    # namespaces, then links (bridges before the veths enslaved to them), then addresses, routes
    assert kinds.index(CreateNamespace) < kinds.index(CreateLink) < kinds.index(AddAddress)
    assert max(i for i, k in enumerate(kinds) if k is AddAddress) < kinds.index(AddRoute)
    links = [op.link for op in ops if isinstance(op, CreateLink)]
    assert [lk.kind for lk in links] == sorted(
        (lk.kind for lk in links), key=["bridge", "vxlan", "veth"].index
    )


def test_same_state_plans_nothing() -> None:
    state = desired()
    assert plan(state, state) == []


def test_removing_everything_deletes_only_namespaces() -> None:
    """Namespace deletion takes its contents along; the plan must not repeat that work."""
    ops = plan(KernelState(), desired())
    assert ops and all(isinstance(op, DeleteNamespace) for op in ops)
    roles = [op.ns.role for op in ops]  # type: ignore[attr-defined]
    assert roles.index("host") > max(i for i, r in enumerate(roles) if r != "host")


def test_removing_one_router_deletes_its_namespace_and_waits_for_its_ports() -> None:
    want = desired()
    have = desired()
    gone = "vnet-demo-red-r1"
    want.namespaces.pop(gone)
    want.links = {k: lk for k, lk in want.links.items() if lk.peer_ns != gone}
    want.addresses = {a for a in want.addresses if a.ns != gone}
    want.routes = {r for r in want.routes if r.ns != gone}
    # its ports leave the bridge shortcuts: the members left alone lose theirs
    want.redirects = {k: r for k, r in want.redirects.items() if k in want.links}
    want.redirects = {
        k: r for k, r in want.redirects.items() if all((k[0], t) in want.links for t in r.targets)
    }
    ops = plan(want, have)
    assert isinstance(ops[-1], DeleteNamespace)
    assert set(ops[-1].vanishing) == {("vnet-demo-h1", "vr1i0"), ("vnet-demo-h1", "vr1i1")}
    # the end host left alone on red-lan1 loses its shortcut first; the router's own
    # ports' shortcuts go with the ports
    assert ops[:-1] == [SetRedirect(have.redirects[("vnet-demo-h1", "eh-red-a")], None)]


def test_given_what_a_change_touches_the_plan_compares_nothing_else() -> None:
    """The objects a change may touch are compared alone: a difference planted elsewhere,
    which the plan of everything finds, is not looked at (so a commit of one VR costs
    what it changes, whatever the host holds), and the change itself is planned whole."""
    have = desired()
    gone = "vnet-demo-red-r1"
    touched = KernelState(namespaces={gone: have.namespaces[gone]})
    touched.links = {k: lk for k, lk in have.links.items() if lk.peer_ns == gone}
    touched.addresses = {a for a in have.addresses if a.ns == gone}
    touched.routes = {r for r in have.routes if r.ns == gone}
    want = have.copy()
    want.remove(touched)
    stray = Address("vnet-demo-blue-r1", "eth0", "10.99.0.1/24")  # not part of the change
    want.addresses.add(stray)
    whole, scoped = plan(want, have), plan(want, have, touched)
    assert AddAddress(stray) in whole
    assert AddAddress(stray) not in scoped
    assert [op for op in whole if op != AddAddress(stray)] == scoped
    assert any(isinstance(op, DeleteNamespace) and op.ns.name == gone for op in scoped)


def test_admin_down_only_changes_the_port_state() -> None:
    have = desired()
    want = desired()
    key = ("vnet-demo-h1", "vr1i0")
    want.links[key] = dataclasses.replace(want.links[key], up=False)
    ops = plan(want, have)
    assert len(ops) == 1 and isinstance(ops[0], ModifyLink)
    assert "down" in ops[0].describe()


def test_replaced_link_restores_its_addresses_and_routes() -> None:
    have = desired()
    want = desired()
    key = ("vnet-demo-h1", "eh-red-a")
    # a veth whose far end changed cannot be modified in place
    want.links[key] = dataclasses.replace(want.links[key], peer_name="eth9")
    want.addresses = {
        dataclasses.replace(a, ifname="eth9")
        if (a.ns, a.ifname) == ("vnet-demo-red-a", "eth0")
        else a
        for a in want.addresses
    }
    ops = plan(want, have)
    kinds = [type(op) for op in ops]
    assert DeleteLink in kinds and CreateLink in kinds
    assert kinds.index(DeleteRoute) < kinds.index(DeleteAddress) < kinds.index(DeleteLink)
    assert kinds.index(CreateLink) < kinds.index(AddAddress) < kinds.index(AddRoute)


def test_every_operation_has_an_inverse_that_prints() -> None:
    for op in plan(desired(), KernelState()):
        assert op.inverse().inverse() == op
        assert op.describe() and op.inverse().describe()


def test_dry_run_text_reads_like_iproute2() -> None:
    text = "\n".join(op.describe() for op in plan(desired(), KernelState()))
    assert "ip netns add vnet-demo-red-r1" in text
    assert "ip -n vnet-demo-h1 link add vx102 mtu 1450 master vb102 up type vxlan id 102" in text
    assert "bridge -n vnet-demo-h1 fdb append 00:00:00:00:00:00 dev vx102 dst 10.200.0.2" in text


def test_underlay_routes_go_through_the_middle_host() -> None:
    topo = load_topology(EXAMPLE).model_copy(deep=True)
    data = topo.model_dump()
    data["hosts"].append({"name": "h3"})
    data["links"].append({"a": "h2", "b": "h3"})
    from vnet.model import build_topology

    t3 = build_topology(data)
    addressing = underlay_addressing(t3)
    h1_routes = dict(addressing.routes["h1"])
    h3_loopback = addressing.loopback["h3"] + "/32"
    # h1 reaches h3 through h2's end of the h1-h2 link
    assert h1_routes[h3_loopback] == addressing.link_addresses[0][1].split("/")[0]
