"""Planning a connection: from a tenant's request to the path, the reservations and the
pieces each host's agent must carry (issue 12, parts 4-5). Pure: no database, no agent.

1. The ends: two end hosts of the tenant on different hosts (else NotFound / BadRequest,
   naming the field).
2. The path of physical hosts: the explicit one, checked (starts at a's host, ends at b's,
   adjacent), or the fewest hops then widest over the residual capacity of the links
   where the tenant's VRs on both ends share a network (`admission.paths.find_route`).
3. The tenant's VR on each host of the path: the first is a's gateway towards b, the last
   delivers to b (and is b's gateway for a two-way connection), consecutive ones share a
   network over IPv6 (SRv6 needs it).
4. The demands: the cost on each link direction (`admission.cost.link_cost`: SRv6 and VXLAN
   headers at the packet size, the shaper margin), both directions for a two-way connection;
   a direction without room is a `Rejected` naming it and the missing bit/s.
5. The pieces, derived by the model's own code (`vnet.model.host_pieces`) from a Topology
   holding this one connection with its VR path, named "vc<connection id>" with the number
   as piece id: exactly the pieces a lab would make, so forwarding is already tested.

`held` is what every link direction carries now ({(link, forward): bit/s}, from
`db.ledger.held_by_direction`). The SQL ledger re-checks under its row locks; this is the
plan it is asked to hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vnet.controller.admission.admit import Policy, Request
from vnet.controller.admission.ledger import Demand, Ledger, Reservation
from vnet.controller.admission.network import Arc as ArcOf
from vnet.controller.admission.network import NetworkView
from vnet.controller.admission.paths import Rejection, Route, check_explicit, find_route
from vnet.controller.admission.rearrange import Limits
from vnet.controller.admission.rearrange import rearrange as search_moves
from vnet.controller.agents.realise import HostChange
from vnet.controller.errors import BadRequest, Conflict, NotFound, Rejected, ServiceError
from vnet.controller.held import Held
from vnet.controller.inventory import Arc, Inventory
from vnet.controller.routers import choose_routers
from vnet.model import controller_api as api
from vnet.model.connection import Connection
from vnet.model.topology import EndHost

PIECE_PREFIX = "vc"  # the controller touches only agent pieces named so


def piece_name(connection_id: int) -> str:
    return f"{PIECE_PREFIX}{connection_id}"


@dataclass(frozen=True)
class Plan:
    path: tuple[str, ...]  # physical hosts, a's host -> b's host
    routers: tuple[str, ...]  # the tenant's VR on each host of the path
    demands: dict[Arc, int]  # bit/s per link direction, headers and margin included
    changes: tuple[HostChange, ...]  # per host of the path: the pieces and their locators
    hops: list[api.Hop]  # for ConnectionView
    segments: list[str]  # the ingress's segment list, a -> b


@dataclass(frozen=True)
class Moved:
    """An existing connection moved (make-before-break) to let a new one in."""

    held: Held
    plan: Plan

    def view(self) -> api.Move:
        return api.Move(
            connection=self.held.request.name,
            tenant=self.held.tenant,
            old_path=list(self.held.path),
            new_path=list(self.plan.path),
        )


@dataclass(frozen=True)
class Rearrangement:
    plan: Plan  # the new connection, planned on the books after the moves
    moves: tuple[Moved, ...] = ()  # in order: each made before it is broken


def plan_connection(
    inv: Inventory,
    held: Mapping[Arc, int],
    tenant: str,
    request: api.ConnectionRequest,
    connection_id: int,
    number: int,
    policy: Policy,
    exclude_self: Mapping[Arc, int] | None = None,
    *,
    admitted: bool = False,
) -> Plan:
    """Where `request` goes and what it takes, or a ServiceError saying why not.
    `exclude_self`: the connection's own current demands when it moves (a modify): on the
    link directions both paths use it runs on one or the other, never both. `admitted`:
    the plan of a connection admitted on its stored path (what its hosts hold), derived
    again without checking capacity or the model's rules (they held when it was)."""
    a, b = _ends(inv, tenant, request)
    usage = _usage(held, exclude_self)
    cost_at = _cost(inv, request, a, b, policy)
    if request.path is not None:
        route = _explicit(inv, request.path, a, b, cost_at)
    else:
        route = _search(inv, tenant, usage, a, b, cost_at, request.bidirectional)
    routers = choose_routers(  # before capacity: a path that cannot be is a bad request
        inv.topology, inv.routers_of(tenant), a, b, route.path, request.bidirectional
    )
    demands = _demands(route, request.bidirectional)
    if not admitted:
        _check_fits(inv.view, usage, demands, request.path is not None)
    return _pieces(inv, request, connection_id, number, route.path, routers, demands, admitted)


def plan_move(
    inv: Inventory,
    held: Mapping[Arc, int],
    current: Held,
    change: api.ModifyRequest,
    policy: Policy,
) -> Plan:
    """The next generation of `current` with a new bandwidth and/or path, planned while its
    current one still counts (make-before-break). A connection whose path the controller
    chose keeps its path when the new bandwidth fits there, and moves otherwise."""
    if change.bandwidth is None and change.path is None:
        raise BadRequest("a modify changes the bandwidth, the path or both; it gave neither")
    _require_a_change(current, change)
    if current.state != "established":
        raise Conflict(
            f"connection {current.request.name!r} is {current.state}: only an established"
            " connection can be modified",
            field="name",
        )
    update: dict[str, object] = {"bandwidth": change.bandwidth or current.request.bandwidth}
    if change.path is not None:
        update["path"] = change.path
    request = current.request.model_copy(update=update)

    def plan(asked: api.ConnectionRequest) -> Plan:
        return plan_connection(
            inv, held, current.tenant, asked, current.connection_id, current.number, policy,
            exclude_self=current.demands,
        )  # fmt: skip

    if request.path is None and current.path:
        try:
            return plan(request.model_copy(update={"path": list(current.path)}))
        except Rejected:
            pass  # it no longer fits where it runs: look for another path
    return plan(request)


def _require_a_change(current: Held, change: api.ModifyRequest) -> None:
    """A modify whose bandwidth is the connection's and whose path (if given) is its explicit
    path already changes nothing: a BadRequest, before anything is planned or reserved."""
    asked = current.request
    if change.bandwidth is not None and change.bandwidth != asked.bandwidth:
        return
    if change.path is not None and list(change.path) != list(asked.path or []):
        return
    what = f"bandwidth {asked.bandwidth} bit/s"
    if change.path is not None:
        what += f" and path {' -> '.join(change.path)}"
    raise BadRequest(
        f"connection {asked.name!r} already has {what}: a modify must change the bandwidth,"
        " the path or both",
        field="bandwidth" if change.bandwidth is not None else "path",
        code="no-change",
    )


def rearrange(
    inv: Inventory,
    connections: Sequence[Held],
    tenant: str,
    request: api.ConnectionRequest,
    connection_id: int,
    number: int,
    policy: Policy,
    limits: Limits | None = None,
) -> Rearrangement:
    """A plan for `request`, after moving existing connections if that is what lets it in
    (`admission.rearrange`: bounded search, largest blockers first); Rejected if nothing
    does. Only connections whose path the controller chose, one-way and established, move."""
    usage = _total(connections)
    try:
        plan = plan_connection(inv, usage, tenant, request, connection_id, number, policy)
        return Rearrangement(plan)
    except Rejected as refused:
        first = refused
    a, b = _ends(inv, tenant, request)
    ledger, movable = _books(inv.view, connections)
    path = tuple(request.path) if request.path is not None else None
    wanted = Request("", Demand(a.host, b.host, request.bandwidth, request.packet_size), path)
    found = search_moves(ledger, wanted, policy, limits or Limits(), movable=movable.__contains__)
    if isinstance(found, Rejection):
        raise _still(first, found.message.rpartition("; ")[2])
    by_id = {str(h.connection_id): h for h in connections}
    moves = []
    try:
        for move in found.moves:
            mover = by_id[move.connection]
            asked = mover.request.model_copy(update={"path": list(move.new.path)})
            moved = plan_connection(
                inv, usage, mover.tenant, asked, mover.connection_id, mover.number, policy,
                exclude_self=mover.demands,
            )  # fmt: skip
            usage = books_after(usage, mover.demands, moved.demands)
            moves.append(Moved(mover, moved))
        asked = request.model_copy(update={"path": list(found.reservation.path)})
        plan = plan_connection(inv, usage, tenant, asked, connection_id, number, policy)
    except ServiceError as failed:  # the moves fit the links but not the VRs
        raise _still(first, f"rearrangement: {failed.reason}") from None
    return Rearrangement(plan, tuple(moves))


def _still(first: Rejected, why: str) -> Rejected:
    """The first refusal, with what rearrangement found."""
    return Rejected(f"{first.reason}; {why}", first.shortfalls, field=first.field, code=first.code)  # type: ignore[arg-type]


# -- the steps -------------------------------------------------------------------------------


def _ends(inv: Inventory, tenant: str, request: api.ConnectionRequest) -> tuple[EndHost, EndHost]:
    ends = []
    for field in ("a", "b"):
        name = getattr(request, field)
        found = inv.endhosts.get(name)
        if found is None or inv.tenant_of(found) != tenant:  # another tenant's: not shown
            raise NotFound(
                f"{field}: tenant {tenant!r} has no end host {name!r}",
                field=field,
                code="unknown-endhost",
            )
        ends.append(found)
    a, b = ends
    if a.name == b.name:
        raise BadRequest(f"b: {b.name!r} is a too; a connection joins two end hosts", field="b")
    if a.host == b.host:
        raise BadRequest(
            f"b: {a.name!r} and {b.name!r} are both on host {a.host!r}; a connection crosses"
            " the underlay between two hosts",
            field="b",
        )
    return a, b


def _cost(
    inv: Inventory, request: api.ConnectionRequest, a: EndHost, b: EndHost, policy: Policy
) -> Callable[[int], int]:
    """hops -> bit/s per link direction; refuses a bandwidth no link could carry."""
    if request.bandwidth <= 0:
        raise BadRequest(
            f"bandwidth {request.bandwidth} bit/s: must be positive", field="bandwidth"
        )
    cost_at = policy.cost_of(Demand(a.host, b.host, request.bandwidth, request.packet_size))
    largest = max((x.capacity for x in inv.links.values()), default=0)
    if cost_at(1) > largest:
        raise BadRequest(
            f"bandwidth {request.bandwidth} bit/s ({cost_at(1)} on the wire with headers and"
            f" margin) is more than any link can carry (the largest carries {largest})",
            field="bandwidth",
        )
    return cost_at


def _explicit(
    inv: Inventory, path: list[str], a: EndHost, b: EndHost, cost_at: Callable[[int], int]
) -> Route:
    """The asked path's shape: known hosts, from a's host to b's, adjacent, no repeats."""
    for end, host, k in ((a, path[0] if path else None, 0), (b, path[-1] if path else None, -1)):
        if host != end.host:
            raise BadRequest(
                f"path[{k}] is {host!r}, but {end.name!r} is on host {end.host!r}: the path"
                f" runs from a's host {a.host!r} to b's host {b.host!r}",
                field="path",
            )
    shape = check_explicit(Ledger(inv.view), path, lambda _: 0)  # capacity: _check_fits
    if isinstance(shape, Rejection):
        kind = NotFound if shape.reason == "unknown-host" else BadRequest
        raise kind(shape.message, field="path", code=shape.reason)
    return Route(shape.path, shape.arcs, cost_at(len(shape.arcs)))


def _search(
    inv: Inventory,
    tenant: str,
    usage: Mapping[Arc, int],
    a: EndHost,
    b: EndHost,
    cost_at: Callable[[int], int],
    both_ways: bool,
) -> Route:
    """Fewest hops, then widest, over the links the tenant's VRs can use."""
    view = inv.tenant_view(tenant)
    books = _symmetric(usage) if both_ways else usage
    found = find_route(_ledger(view, books), a.host, b.host, cost_at)
    if isinstance(found, Route):
        return found
    empty = find_route(Ledger(view), a.host, b.host, cost_at)
    if isinstance(empty, Rejection) and empty.reason == "no-route":
        raise Rejected(
            f"tenant {tenant!r} has no chain of VRs sharing networks from {a.host!r} ({a.name})"
            f" to {b.host!r} ({b.name})",
            code="no-route",
        )
    if isinstance(empty, Rejection):  # a chain exists, but even empty it lacks room
        raise _lacking(view, found)
    _check_fits(inv.view, usage, _demands(empty, both_ways), False)  # raises, naming links
    raise AssertionError("a path that fits when searched for was not found")


def _lacking(view: NetworkView, refused: Rejection) -> Rejected:
    """The search's refusal over what is held, naming each link direction that lacks room."""
    short = [
        api.Shortfall(
            link=s.link,
            direction=" -> ".join(view.ends(ArcOf(s.link, s.forward))),
            requested_bps=s.needed,
            free_bps=max(s.available, 0),
            missing_bps=s.missing,
        )
        for s in refused.shortfalls
    ]
    return Rejected(refused.message, short, field="bandwidth")


def _demands(route: Route, both_ways: bool) -> dict[Arc, int]:
    out = {(arc.link, arc.forward): route.cost for arc in route.arcs}
    if both_ways:
        out.update({(arc.link, not arc.forward): route.cost for arc in route.arcs})
    return out


def _check_fits(
    view: NetworkView, usage: Mapping[Arc, int], demands: Mapping[Arc, int], explicit: bool
) -> None:
    """Rejected naming every link direction without room for its demand, and by how much."""
    short = []
    for (link, forward), bps in sorted(demands.items()):
        arc = ArcOf(link, forward)
        free = view.capacity(arc) - usage.get((link, forward), 0)
        if bps > free:
            u, v = view.ends(arc)
            short.append(
                api.Shortfall(
                    link=link,
                    direction=f"{u} -> {v}",
                    requested_bps=bps,
                    free_bps=max(free, 0),
                    missing_bps=bps - max(free, 0),
                )
            )
    if short:
        named = "; ".join(
            f"link {s.link} ({s.direction}) lacks {s.missing_bps} bit/s"
            f" (requested {s.requested_bps}, free {s.free_bps})"
            for s in short
        )
        where = "the path asked for" if explicit else "no path has room; the shortest"
        raise Rejected(f"{where}: {named}", short, field="path" if explicit else "bandwidth")


def _pieces(
    inv: Inventory,
    request: api.ConnectionRequest,
    connection_id: int,
    number: int,
    path: tuple[str, ...],
    routers: tuple[str, ...],
    demands: dict[Arc, int],
    admitted: bool = False,
) -> Plan:
    """The model's own pieces for a Topology holding just this connection (checked by the
    model's rules unless `admitted`)."""
    conn = Connection(
        name=piece_name(connection_id),
        id=number,
        a=request.a,
        b=request.b,
        protocol=request.protocol,
        src_port=request.src_port,
        dst_port=request.dst_port,
        bandwidth=request.bandwidth,
        path=list(routers),
        bidirectional=request.bidirectional,
    )
    problems = [] if admitted else inv.pieces.problems(conn)
    if problems:
        raise BadRequest("; ".join(p.message for p in problems), field=_field(problems[0].loc))
    on_host = inv.pieces.pieces(conn)
    changes = tuple(
        HostChange(
            host, put=tuple(on_host[host].connections), locators=tuple(on_host[host].locators)
        )
        for host in path
    )
    # a's tunnel starts at the first VR (its first family's list; the other differs only in
    # the last SID, End.DX4 or End.DX6); hop k's SID is segment k - 1
    first = next(i for i in on_host[path[0]].connections[0].ingress if i.router == routers[0])
    segments = [str(sid) for sid in first.segments]
    sids = [None, *segments]
    hops = [api.Hop(host=h, router=r, sid=s) for h, r, s in zip(path, routers, sids, strict=True)]
    return Plan(path, routers, demands, changes, hops, segments)


def _field(loc: tuple[Any, ...]) -> str:
    """The request's field a model problem at ("connections", 0, field, ...) is about."""
    named = {"path": "path", "a": "a", "b": "b", "protocol": "protocol", "bandwidth": "bandwidth"}
    return next((named[x] for x in loc if x in named), "path")


# -- books -----------------------------------------------------------------------------------


def _usage(held: Mapping[Arc, int], exclude: Mapping[Arc, int] | None) -> dict[Arc, int]:
    return _add(dict(held), exclude or {}, -1)


def _add(usage: Mapping[Arc, int], more: Mapping[Arc, int], sign: int) -> dict[Arc, int]:
    out = dict(usage)
    for arc, bps in more.items():
        out[arc] = out.get(arc, 0) + sign * bps
    return out


def books_after(
    usage: Mapping[Arc, int], old: Mapping[Arc, int], new: Mapping[Arc, int]
) -> dict[Arc, int]:
    """The books once a connection left `old` for `new` (after make-before-break it holds
    only the new)."""
    return _add(_add(usage, old, -1), new, 1)


def _total(connections: Iterable[Held]) -> dict[Arc, int]:
    usage: dict[Arc, int] = {}
    for h in connections:
        usage = _add(usage, h.demands, 1)
    return usage


def _symmetric(usage: Mapping[Arc, int]) -> dict[Arc, int]:
    """Each direction as full as the fuller of the two: a two-way path needs room in both."""
    out: dict[Arc, int] = {}
    for (link, forward), bps in usage.items():
        for arc in ((link, forward), (link, not forward)):
            out[arc] = max(out.get(arc, 0), bps)
    return out


def _ledger(view: NetworkView, usage: Mapping[Arc, int]) -> Ledger:
    """A planning ledger holding `usage` (one entry per link direction)."""
    held = [
        _entry(f"~{link}:{int(forward)}", (ArcOf(link, forward),), bps)
        for (link, forward), bps in usage.items()
        if link in view.links and bps > 0
    ]
    return Ledger.of_books(view, held)


def _entry(
    name: str, arcs: tuple[ArcOf, ...], bps: int, demand: Demand | None = None
) -> Reservation:
    return Reservation(name, 1, demand or Demand("", "", 1), (), arcs, bps)


def _books(view: NetworkView, connections: Sequence[Held]) -> tuple[Ledger, set[str]]:
    """The ledger of every live connection: the movable ones as themselves (named by id, so
    rearrangement can move them), the others as what they hold on each link direction."""
    held, movable, fixed = [], set(), []
    for h in connections:
        costs = set(h.demands.values())
        if h.movable and len(costs) == 1 and len(h.path) > 1:
            demand = Demand(h.path[0], h.path[-1], h.request.bandwidth, h.request.packet_size)
            arcs = tuple(ArcOf(link, fwd) for link, fwd in h.demands)
            held.append(
                Reservation(str(h.connection_id), h.generation, demand, h.path, arcs, costs.pop())
            )
            movable.add(str(h.connection_id))
        else:
            fixed.append(h)
    pinned = _ledger(view, _total(fixed))
    return Ledger.of_books(view, [*pinned.reservations(), *held]), movable
