"""Planning for connections and bandwidth: make before break.

The base plan (plan.py) deletes first and creates after. Tunnels need the other
order, so their operations come after the base plan, in three phases:

1. make: new tc roots, classes (parents first) and filters; new SIDs; new
   encap routes; new rules. Rate changes are applied in place (`tc class change`).
2. switch: every encap route whose path changed is replaced, one atomic
   `ip route replace` each; packets move from the old path to the new one.
3. break: after a drain (until the old path's queues are empty), old rules,
   encap routes, filters, classes, roots and SIDs are removed.

Objects that vanish with a deleted namespace, a recreated interface or a reset
HTB root (the base plan's doing) are not deleted again; those that should stay
are created anew. Pure: no kernel access.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from ipaddress import ip_network
from typing import Any, TypeVar

from vnet.model.srv6 import LOCATOR_LEN
from vnet.substrate.kernel import Kernel, KernelError
from vnet.substrate.marks import NsName, ns_label
from vnet.substrate.neigh import resolve_neighbours
from vnet.substrate.op import Op
from vnet.substrate.seg6 import (
    AddRule,
    AddSid,
    AddSteer,
    DeleteRule,
    DeleteSid,
    DeleteSteer,
    ReplaceSid,
    SidRoute,
    SteerRoute,
    SteerRule,
    SwitchPath,
)
from vnet.substrate.state import KernelState
from vnet.substrate.tc import (
    AddTcClass,
    AddTcFilter,
    AddTcRoot,
    ChangeTcClass,
    DeleteTcClass,
    DeleteTcFilter,
    DeleteTcRoot,
    FilterHandles,
    TcClass,
    TcFilter,
    TcRoot,
    class_backlogs,
)
from vnet.tools.wait import WaitTimeout, wait_until

_ClassKey = tuple[NsName, str, int]
DRAIN_MIN = 0.1  # for packets past the old queues on their way to SIDs that go
DRAIN_MAX = 1.0
POLL = 0.005  # seconds between two reads of the old queues' backlog


@dataclass(frozen=True)
class WarmPath:
    """Resolve the next hops along new paths, so that the first packets are not lost."""

    hops: tuple[tuple[NsName, str], ...]  # (router namespace, next hop's IPv6 address)

    def run(self, k: Kernel) -> None:
        resolve_neighbours(k, self.hops)

    def inverse(self) -> Op:
        return self  # changes nothing vnet owns; neighbour entries age out by themselves

    def describe(self) -> str:
        return (
            " && ".join(
                f"ip netns exec {ns} ping -6 -c 1 -W 1 {addr} >/dev/null" for ns, addr in self.hops
            )
            + "  # resolve the new path's next hops"
        )


@dataclass(frozen=True)
class Drain:
    """Wait for packets still on an old path before its queues and SIDs go: until the
    classes that go have sent what they hold (their queues' backlog, read from the kernel
    every POLL seconds), at most `seconds` (the fullest of them emptying at its rate); and
    at least `floor` seconds when SIDs of the old path go in the same plan, for packets past
    the queues on their way to them. An agent's plan holds one host: the SIDs of the old
    path elsewhere go in a later transaction, which waits for what is in flight itself."""

    seconds: float
    classes: tuple[_ClassKey, ...] = ()
    floor: float = 0.0

    def run(self, k: Kernel) -> None:
        started = time.monotonic()
        with contextlib.suppress(WaitTimeout):  # a queue that will not empty: its rate's time
            wait_until(lambda: not queued_bytes(k, self.classes), self.seconds, "drain", POLL)
        time.sleep(max(0.0, self.floor - (time.monotonic() - started)))

    def inverse(self) -> Op:
        return self  # undoing a switch deserves the same pause

    def describe(self) -> str:
        most = max(self.floor, self.seconds if self.classes else 0.0)
        least = f", at least {self.floor:g} s" if self.floor else ""
        return f"sleep {most:g}  # at most: until the old path's queues are empty{least}"


def queued_bytes(k: Kernel, classes: Iterable[_ClassKey]) -> int:
    """Bytes the HTB classes (namespace, device, classid) hold in their leaf queues now;
    those of a device that is gone count for nothing."""
    wanted: dict[tuple[NsName, str], set[int]] = {}
    for ns, dev, classid in classes:
        wanted.setdefault((ns, dev), set()).add(classid)
    total = 0
    for (ns, dev), ids in wanted.items():
        with contextlib.suppress(KernelError, OSError):
            held = class_backlogs(k, ns, dev)
            total += sum(held.get(classid, 0) for classid in ids)
    return total


T = TypeVar("T")


def _sort(items: Iterable[T], key: Callable[[T], Any] | None = None) -> list[T]:
    def default(x: object) -> tuple[str, ...]:
        return tuple(ns_label(v) if v is None else str(v) for v in vars(x).values())

    return sorted(items, key=key or default)


def _depth(cls: TcClass, classes: dict[tuple[NsName, str, int], TcClass]) -> int:
    depth, parent = 0, cls.parent
    while (cls.ns, cls.dev, parent) in classes and depth < 8:
        parent = classes[(cls.ns, cls.dev, parent)].parent
        depth += 1
    return depth


@dataclass(frozen=True)
class _Surviving:
    """What the kernel has that outlives the base plan (not in a deleted namespace,
    a recreated interface or a reset HTB root)."""

    sids: dict[tuple[NsName, str], SidRoute]
    steers: dict[tuple[NsName, int, str], SteerRoute]
    rules: set[SteerRule]
    roots: set[TcRoot]
    classes: dict[_ClassKey, TcClass]
    filters: set[TcFilter]

    @classmethod
    def of(
        cls,
        actual: KernelState,
        ns_gone: set[str],
        ifs_gone: set[tuple[NsName, str]],
        tc_reset: set[tuple[NsName, str]],
    ) -> _Surviving:
        def survives(obj: object) -> bool:
            ns = getattr(obj, "ns", None)
            if ns in ns_gone:
                return False
            dev = getattr(obj, "dev", None)
            return dev is None or (ns, dev) not in ifs_gone

        def tc_survives(obj: object) -> bool:
            return survives(obj) and (obj.ns, obj.dev) not in tc_reset  # type: ignore[attr-defined]

        return cls(
            sids={k: v for k, v in actual.sids.items() if survives(v)},
            steers={k: v for k, v in actual.steers.items() if survives(v)},
            rules={r for r in actual.rules if survives(r)},
            roots={r for r in actual.tc_roots if tc_survives(r)},
            classes={k: v for k, v in actual.tc_classes.items() if tc_survives(v)},
            filters={f for f in actual.tc_filters if tc_survives(f)},
        )


def plan_tunnels(
    desired: KernelState,
    actual: KernelState,
    ns_gone: set[str],
    ifs_gone: set[tuple[NsName, str]],
    tc_reset: set[tuple[NsName, str]],
    touched: KernelState | None = None,
) -> list[Op]:
    """`touched`: the tunnel objects that may differ between `desired` and `actual` (all
    others are the same in both); only those are compared, so a change of one connection
    costs what it changes, not what the host holds. Ignored when the base plan recreates
    namespaces, interfaces or HTB roots (what survives them is worked out in full)."""
    full = desired  # the next hops of new paths are looked up in all of it
    if touched is not None and not (ns_gone or ifs_gone or tc_reset):
        desired, actual = desired.only(touched), actual.only(touched)
    have = _Surviving.of(actual, ns_gone, ifs_gone, tc_reset)

    # -- make --------------------------------------------------------------
    make: list[Op] = [AddTcRoot(r) for r in _sort(desired.tc_roots - have.roots)]
    class_ops, recreate = _class_changes(desired, have)
    make += class_ops
    new_filters = [
        f
        for f in desired.tc_filters
        if f not in have.filters and (f.ns, f.dev, f.classid) not in recreate
    ]  # those of a recreated class are added after their class is back
    make += _add_filters(new_filters)
    make += _sid_changes(desired, have)
    # (each list is chosen, then sorted: sorting every object of the host took a tenth of a
    # commit with 2000 connections)
    added = [(key, want) for key, want in desired.steers.items() if key not in have.steers]
    make += [AddSteer(want) for _, want in _sort(added, key=lambda kv: _steer_key(kv[0]))]

    # -- switch ------------------------------------------------------------
    switched = [
        (key, want)
        for key, want in desired.steers.items()
        if key in have.steers and have.steers[key] != want
    ]
    switch: list[SwitchPath] = [
        SwitchPath(have.steers[key], want)
        for key, want in _sort(switched, key=lambda kv: _steer_key(kv[0]))
    ]
    # the new paths answer before any traffic is steered onto them
    fresh = [op.new for op in switch] + [op.route for op in make if isinstance(op, AddSteer)]
    hops = tuple(dict.fromkeys(h for route in fresh for h in _next_hops(full, route)))
    if hops:
        make.append(WarmPath(hops))
    make += [AddRule(r) for r in _sort(desired.rules - have.rules)]  # only once they answer

    # -- break -------------------------------------------------------------
    classes_gone = {
        key: cls
        for key, cls in have.classes.items()
        if key not in desired.tc_classes or key in recreate
    }
    brk = _break(desired, have, classes_gone, recreate)
    if recreate:
        brk += [AddTcClass(desired.tc_classes[key]) for key in _sort(recreate, key=_class_key)]
        again = [f for f in desired.tc_filters if (f.ns, f.dev, f.classid) in recreate]
        brk += _add_filters(again)

    ops = make + switch
    if switch and brk:
        floor = DRAIN_MIN if any(isinstance(op, DeleteSid) for op in brk) else 0.0
        gone = tuple(_sort(classes_gone, key=_class_key))
        ops.append(Drain(_drain_seconds(classes_gone.values()), gone, floor))
    return ops + brk


def _class_changes(desired: KernelState, have: _Surviving) -> tuple[list[Op], set[_ClassKey]]:
    """Classes to add or change in place (parents first), and those that must be recreated."""
    ops: list[Op] = []
    recreate: set[_ClassKey] = set()
    differing = [(k, v) for k, v in desired.tc_classes.items() if have.classes.get(k) != v]
    for key, want in _sort(
        differing,
        key=lambda kv: (
            _depth(kv[1], desired.tc_classes),
            ns_label(kv[1].ns),
            kv[1].dev,
            kv[1].classid,
        ),
    ):
        cls = have.classes.get(key)
        if cls is None:
            ops.append(AddTcClass(want))
        elif cls != want and cls.parent != want.parent:
            recreate.add(key)  # a class cannot move; it goes (in "break") and comes back
        elif cls != want:
            ops.append(ChangeTcClass(cls, want))
    return ops, recreate


def _add_filters(filters: list[TcFilter]) -> list[Op]:
    """Add filters in a stable order; the kernel numbers each (see TcFilter)."""
    order = _sort(filters, key=lambda f: (ns_label(f.ns), f.dev, f.prio, f.match, f.classid))
    return [AddTcFilter(f) for f in order]


def _sid_changes(desired: KernelState, have: _Surviving) -> list[Op]:
    ops: list[Op] = []
    differing = [(k, v) for k, v in desired.sids.items() if have.sids.get(k) != v]
    for key, want in _sort(differing, key=lambda kv: (ns_label(kv[0][0]), kv[0][1])):
        sid = have.sids.get(key)
        if sid is None:
            ops.append(AddSid(want))
        elif sid != want:
            ops.append(ReplaceSid(sid, want))
    return ops


def _break(
    desired: KernelState,
    have: _Surviving,
    classes_gone: dict[_ClassKey, TcClass],
    recreate: set[_ClassKey],
) -> list[Op]:
    """Delete the old: rules, steering routes, filters, classes, roots, then SIDs."""
    roots_gone = have.roots - desired.tc_roots
    gone_devs = {(r.ns, r.dev) for r in roots_gone}  # their root's deletion takes the rest
    brk: list[Op] = [DeleteRule(r) for r in _sort(have.rules - desired.rules)]
    gone = [(key, steer) for key, steer in have.steers.items() if key not in desired.steers]
    brk += [DeleteSteer(steer) for _, steer in _sort(gone, key=lambda kv: _steer_key(kv[0]))]

    def filter_order(f: TcFilter) -> tuple[str, str, int, int]:
        return (ns_label(f.ns), f.dev, f.prio, f.handle)

    handles = FilterHandles()  # one read of an interface's filters for all its deletions
    brk += [
        DeleteTcFilter(f, handles)
        for f in _sort(have.filters - desired.tc_filters, key=filter_order)
        if (f.ns, f.dev) not in gone_devs
    ]
    # filters that point at a class being recreated must go before it
    repointed = [
        f for f in have.filters & desired.tc_filters if (f.ns, f.dev, f.classid) in recreate
    ]
    brk += [DeleteTcFilter(f, handles) for f in _sort(repointed, key=filter_order)]
    brk += [
        DeleteTcClass(cls)
        for cls in sorted(
            classes_gone.values(),
            key=lambda c: (-_depth(c, have.classes), ns_label(c.ns), c.dev, c.classid),
        )
        if (cls.ns, cls.dev) not in gone_devs
    ]
    brk += [DeleteTcRoot(r) for r in _sort(roots_gone)]
    sids_gone = [(key, sid) for key, sid in have.sids.items() if key not in desired.sids]
    brk += [
        DeleteSid(sid) for _, sid in _sort(sids_gone, key=lambda kv: (ns_label(kv[0][0]), kv[0][1]))
    ]
    return brk


def _next_hops(state: KernelState, route: SteerRoute) -> list[tuple[NsName, str]]:
    """(router, next hop) along a steering route's segments, from the locator routes."""
    owner = {sid: ns for ns, sid in state.sids}
    via = {(r.ns, r.dst): r.via for r in state.routes}
    hops = []
    ns = route.ns
    for seg in route.segs:
        locator = str(ip_network(f"{seg}/{LOCATOR_LEN}", strict=False))
        nxt = via.get((ns, locator))
        if nxt is None:
            break
        hops.append((ns, nxt))
        if seg not in owner:
            break
        ns = owner[seg]
    return hops


def _class_key(key: tuple[NsName, str, int]) -> tuple[str, str, int]:
    return (ns_label(key[0]), key[1], key[2])


def _steer_key(key: tuple[NsName, int, str]) -> tuple[str, int, str]:
    return (ns_label(key[0]), key[1], key[2])


def _drain_seconds(classes: Iterable[TcClass]) -> float:
    """Long enough for the fullest old queue to empty at its rate."""
    longest = max((c.queue * 8 / c.rate for c in classes if c.rate), default=0.0)
    return round(min(DRAIN_MAX, max(DRAIN_MIN, longest + 0.05)), 3)
