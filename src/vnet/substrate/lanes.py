"""Runs of a plan's operations that may go in parallel, and their lanes.

A plan is ordered (plan.py): namespaces, then bridges, vxlans, veth pairs, then
addresses, shapers, fdb, routes, redirects. Within a run of consecutive creations of
one kind the operations do not depend on each other: each names an object of its
own, and what it refers to (a namespace, a bridge, an interface) was made by an
earlier run. Such a run is split over lanes, each with a netlink socket of its own
per namespace (`Kernel.helper`), so the kernel works on two objects at once: it
creates links and loads programs outside the GIL, and while one lane waits for an
answer, the other encodes its next request. Routes of one namespace stay in one
lane, in plan order. Everything else (deletions, changes, connections) runs alone,
as it always did; so do namespaces: two threads making namespaces at once took ten
times as long here as one (measured with 300 VRs), the kernel serialises them anyway.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator, Sequence

from vnet.substrate.address import AddAddress
from vnet.substrate.link import CreateLink
from vnet.substrate.op import Op
from vnet.substrate.redirect import SetRedirect
from vnet.substrate.route import AddRoute

MIN_RUN = 16  # below this a run is not worth a second lane's sockets and threads
MAX_LANES = 4


def lane_count() -> int:
    """One lane per usable core (at most MAX_LANES); 1 means no parallel runs."""
    return max(1, min(MAX_LANES, len(os.sched_getaffinity(0))))


def _kind(op: Op) -> Hashable | None:
    """The run an operation may share lanes in (None: it runs alone)."""
    if isinstance(op, CreateLink):
        return ("link", op.link.kind)
    if isinstance(op, SetRedirect):
        return "redirect" if op.new is not None else None
    if isinstance(op, AddAddress | AddRoute):
        return type(op).__name__
    return None


def _together(op: Op) -> Hashable:
    """Operations with the same key keep their order in one lane."""
    if isinstance(op, AddRoute):
        return op.route.ns  # a route's next hop may need one made before it
    return id(op)


Step = tuple[int, Op]  # an operation and its place in the plan


def runs(ops: Sequence[Op]) -> Iterator[list[Step]]:
    """The plan cut into runs: consecutive operations of one parallel kind, or one alone."""
    current: list[Step] = []
    kind: Hashable | None = None
    for i, op in enumerate(ops):
        k = _kind(op)
        if current and (k is None or k != kind):
            yield current
            current = []
        current.append((i, op))
        kind = k
        if k is None:
            yield current
            current = []
    if current:
        yield current


def split(run: list[Step], lanes: int) -> list[list[Step]]:
    """`run` over at most `lanes` lanes, as even as its groups allow (one lane if short)."""
    if lanes < 2 or len(run) < MIN_RUN:
        return [run]
    groups: dict[Hashable, list[Step]] = {}
    for step in run:
        groups.setdefault(_together(step[1]), []).append(step)
    out: list[list[Step]] = [[] for _ in range(lanes)]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(out, key=len).extend(group)
    return [lane for lane in out if lane]
