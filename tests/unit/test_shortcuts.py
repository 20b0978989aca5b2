"""Bridge shortcuts (eBPF redirects between members of one network): realised and planned
without root."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from vnet.lab.topology_file import load_topology
from vnet.model import build_topology
from vnet.substrate import KernelState, lab_placement, plan, realize
from vnet.substrate.link import CreateLink, DeleteLink
from vnet.substrate.namespace import CreateNamespace
from vnet.substrate.redirect import MAX_TARGETS, Redirect, SetRedirect, _parse, program
from vnet.substrate.tc import Shaper

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two-tenants.yaml"
H1 = "vnet-grow-h1"


def lan(members: int, **vr: Any) -> dict[str, Any]:
    """One network on one host: a VR and `members - 1` end hosts."""
    return {
        "name": "grow",
        "hosts": [{"name": "h1"}],
        "tenants": [{"name": "t"}],
        "networks": [{"name": "n0", "tenant": "t", "vni": 100, "ipv4": "10.9.1.0/24"}],
        "routers": [
            {
                "name": "r1",
                "host": "h1",
                "interfaces": [{"network": "n0", "ipv4": "10.9.1.1/24"}],
                **vr,
            }
        ],
        "endhosts": [
            {"name": f"e{i}", "host": "h1", "network": "n0", "ipv4": f"10.9.1.{10 + i}/24"}
            for i in range(members - 1)
        ],
    }


def state_of(data: dict[str, Any]) -> KernelState:
    topo = build_topology(data)
    return realize(topo, lab_placement(topo.name))


def test_shortcuts_join_only_members_of_one_bridge() -> None:
    topo = load_topology(EXAMPLE)
    state = realize(topo, lab_placement(topo.name))
    assert state.redirects
    for (ns, port), shortcut in state.redirects.items():
        bridge = state.links[(ns, port)].master
        assert bridge is not None
        for target in shortcut.targets:
            assert state.links[(ns, target)].master == bridge, (port, shortcut)
    # red-a and blue-a have the same addresses; their ports never point at each other
    assert state.redirects[("vnet-demo-h1", "eh-red-a")].targets == ("vr1i0",)
    assert state.redirects[("vnet-demo-h1", "eh-blue-a")].targets == ("vr2i0",)


def test_every_member_points_at_all_the_others() -> None:
    state = state_of(lan(3))
    assert state.redirects == {
        (H1, "vr1i0"): Redirect(H1, "vr1i0", "grow", ("eh-e0", "eh-e1")),
        (H1, "eh-e0"): Redirect(H1, "eh-e0", "grow", ("eh-e1", "vr1i0")),
        (H1, "eh-e1"): Redirect(H1, "eh-e1", "grow", ("eh-e0", "vr1i0")),
    }


def test_a_lone_member_or_a_crowd_stays_on_the_bridge() -> None:
    assert state_of(lan(1)).redirects == {}
    assert state_of(lan(MAX_TARGETS + 2)).redirects == {}
    assert len(state_of(lan(MAX_TARGETS + 1)).redirects) == MAX_TARGETS + 1


def test_a_router_that_is_down_is_no_shortcut_target() -> None:
    state = state_of(lan(3, admin_state="down"))
    assert set(state.redirects) == {(H1, "eh-e0"), (H1, "eh-e1")}
    assert state.redirects[(H1, "eh-e0")].targets == ("eh-e1",)


def test_growing_from_two_to_three_members_replaces_shortcuts_after_the_new_port() -> None:
    """Make before break: nothing is deleted, the bridge carries the new member until
    the programs that know its MAC are in."""
    ops = plan(state_of(lan(3)), state_of(lan(2)))
    kinds = [type(op) for op in ops]
    assert DeleteLink not in kinds
    assert kinds.index(CreateNamespace) < kinds.index(CreateLink)
    shortcuts = [op for op in ops if isinstance(op, SetRedirect)]
    assert {op.new.port for op in shortcuts if op.new} == {"vr1i0", "eh-e0", "eh-e1"}
    assert max(i for i, k in enumerate(kinds) if k is CreateLink) < kinds.index(SetRedirect)
    # the two existing ones are replaced in place, the new port's is loaded fresh
    assert [op.old is None for op in shortcuts] == [False, True, False]


def test_shrinking_changes_shortcuts_before_the_member_goes() -> None:
    ops = plan(state_of(lan(2)), state_of(lan(3)))
    first_removal = next(i for i, op in enumerate(ops) if not isinstance(op, SetRedirect))
    assert all(isinstance(op, SetRedirect) for op in ops[:first_removal])
    assert {op.new.targets for op in ops[:first_removal] if op.new} == {("eh-e0",), ("vr1i0",)}


def test_a_recreated_target_reloads_the_programs_that_point_at_it() -> None:
    have = state_of(lan(2))
    want = state_of(lan(2))
    key = (H1, "eh-e0")
    want.links[key] = dataclasses.replace(want.links[key], peer_name="eth9")  # replaced
    ops = plan(want, have)
    reloads = [op for op in ops if isinstance(op, SetRedirect)]
    assert {op.new.port for op in reloads if op.new} == {"vr1i0", "eh-e0"}
    last_link = max(i for i, op in enumerate(ops) if isinstance(op, CreateLink))
    assert all(ops.index(op) > last_link for op in reloads)


def test_a_shaped_port_keeps_the_bridge_path() -> None:
    """A redirect to the far end would skip the port's egress qdisc."""
    state = state_of(lan(3))
    state.shapers[(H1, "eh-e1")] = Shaper(H1, "eh-e1", 10**8)
    state.redirects.clear()
    from vnet.substrate.realize import add_shortcuts

    add_shortcuts(state, "grow")
    assert (H1, "eh-e1") not in state.redirects
    assert all("eh-e1" not in r.targets for r in state.redirects.values())


def test_same_state_plans_no_shortcut_change_and_inverses_print() -> None:
    state = state_of(lan(3))
    assert plan(state, state) == []
    for op in plan(state, KernelState()):
        if isinstance(op, SetRedirect):
            assert op.inverse().inverse() == op
            assert "redirect-peer" in op.describe() and "filter del" in op.inverse().describe()


def test_read_back_marks_a_target_recreated_since_as_stale() -> None:
    names = {5: "vr1i0", 9: "eh-e0"}
    assert _parse("vnet:grow redirect vr1i0@5,eh-e0@9", "grow", names) == ("vr1i0", "eh-e0")
    assert _parse("vnet:grow redirect vr1i0@4", "grow", names) == ("vr1i0@stale",)
    assert _parse("vnet:other redirect vr1i0@5", "grow", names) is None
    assert _parse("vnet_drop", "grow", names) is None


def test_program_compares_the_destination_mac_then_passes() -> None:
    mac = bytes.fromhex("0a1b2c3d4e5f")
    code = program([(mac, 7), (mac, 8)])
    insns = [code[i : i + 8] for i in range(0, len(code), 8)]
    assert len(insns) == 7 + 2 * 6 + 2
    assert int.from_bytes(insns[7][4:], "little") == int.from_bytes(mac[:4], "little")
    assert int.from_bytes(insns[8][4:], "little") == 0x5F4E
    assert insns[4][0] == 0x2D and int.from_bytes(insns[4][2:4], "little") == 2 + 12
    assert insns[-1][0] == 0x95 and insns[-2][4:] == b"\0\0\0\0"  # pass: TC_ACT_OK
