"""The reservation ledger: bit/s held per link direction, admitted without ever over-admitting.

A link is full duplex: a demand names (link name, forward) with forward meaning from the
link's a to its b (`admission.network.Arc`), and each direction has the link's usable
capacity for itself.

Two controller processes may share one PostgreSQL database. `reserve` locks the rows of the
links it needs with SELECT ... FOR UPDATE (one lock per link, whichever directions it needs),
always in ascending link id (so two requests that need the same links queue instead of
deadlocking), then sums what is held on them per direction and inserts the new rows before the
caller commits. Under READ COMMITTED the sum is a new statement run after the lock was
granted, so it sees everything the previous holder committed. Requests on disjoint links never
wait for each other. On SQLite the FOR UPDATE is dropped (SQLAlchemy does not emit it) and
BEGIN IMMEDIATE (engine.py) serialises writers instead. docs/controller.md explains the choice
against SERIALIZABLE and advisory locks.

Everything here runs inside the caller's transaction: the caller commits (or rolls back, which
also releases the locks); a refusal writes nothing.

What is held per link direction is also kept as a running total on the link's row
(`Link.held_forward_bps`, `held_reverse_bps`), changed by the same statements' transaction
that inserts, releases or deletes reservation rows, so that planning (`held_by_direction`)
and the re-check in `reserve` read one row per link instead of summing every live
reservation, a cost that grew with the connections already admitted. The rows stay the
ledger: `drift` compares the totals with their sums. A release takes the rows it released
from the UPDATE's RETURNING, so two releases of the same rows racing on PostgreSQL subtract
them once; the totals are changed in ascending link id, the order `reserve` locks links in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, tuple_, update
from sqlalchemy.orm import Session

from vnet.controller.db.models import Connection, Link, Reservation, ReservationRole

Direction = tuple[str, bool]  # (link name, forward: from the link's a to its b)


@dataclass(frozen=True)
class LinkShortfall:
    link: str
    forward: bool
    direction: str  # "h1 -> h2"
    requested_bps: int
    free_bps: int
    usable_bps: int

    @property
    def missing_bps(self) -> int:
        return self.requested_bps - self.free_bps

    def __str__(self) -> str:
        return (
            f"link {self.link} ({self.direction}) lacks {self.missing_bps} bit/s "
            f"(requested {self.requested_bps}, free {self.free_bps} of {self.usable_bps})"
        )


class Refused(Exception):
    """The links named cannot carry the demand; nothing was reserved."""

    def __init__(self, shortfalls: list[LinkShortfall]):
        self.shortfalls = shortfalls
        super().__init__("; ".join(str(s) for s in shortfalls))


class UnknownLinks(LookupError):
    def __init__(self, names: list[str]):
        self.names = names
        super().__init__(f"no such link: {', '.join(names)}")


def removed(link: Link) -> bool:
    """Whether the link, or a host of it, was removed from the inventory: it carries no new
    reservation (a request planned on an inventory read before the removal is refused)."""
    return bool(link.removed or link.a_host.removed or link.b_host.removed)


def full_capacity(link: Link) -> int:
    return link.capacity_bps


def direction(link: Link, forward: bool) -> str:
    """ "a -> b" in the direction of travel, as answers name it."""
    ends = (link.a_host.name, link.b_host.name)
    return f"{ends[0]} -> {ends[1]}" if forward else f"{ends[1]} -> {ends[0]}"


def reserve(
    session: Session,
    connection: Connection,
    demands: Mapping[Direction, int],
    usable_bps: Callable[[Link], int] = full_capacity,
    *,
    generation: int | None = None,
    role: ReservationRole = ReservationRole.CURRENT,
    replacing: int | None = None,
) -> int:
    """Hold `demands` ({(link name, forward): bit/s}) for `connection` (the answer: how many
    rows), or raise Refused naming every link direction that lacks capacity and by how much.
    `usable_bps(link)` is what admission may hand out in each direction of a link (its rate
    less the management share, say). The generation defaults to the connection's current
    one; a make-before-break reserves generation + 1 as NEXT, `replacing` the current one:
    on the link directions both paths use, the connection's traffic is on one path or the
    other, never both, so the new rows are checked without the old ones there (which go on
    counting for everyone else until `switch`: no double counting of the mover,
    open-kilda#919, and never too little).
    """
    _require_positive(demands)
    session.flush()  # the connection needs its id
    book = Book.locking(session, usable_bps, sorted({name for name, _ in demands}))
    mine = {} if replacing is None else _held_by(session, book, connection.id, replacing)
    book.reserve(connection, demands, generation=generation, role=role, replacing=mine)
    return book.write()


class Book:
    """Reservations of one transaction over links it locked: each checked against the
    links' totals as read under the lock plus what the book reserved before it, the rows
    and the totals written once (`write`). `reserve` is a book of one reservation; a
    transaction that reserves for many connections (a reroute) keeps one book for all,
    instead of locking and reading the links again for each."""

    def __init__(self, session: Session, links: list[Link], usable_bps: Callable[[Link], int]):
        self.session = session
        self.links = {link.name: link for link in links}
        self.usable_bps = usable_bps
        self.held = {(link.name, fwd): link.held(fwd) for link in links for fwd in (True, False)}
        self.rows: list[dict[str, Any]] = []  # Reservation's columns

    @classmethod
    def locking(
        cls,
        session: Session,
        usable_bps: Callable[[Link], int] = full_capacity,
        names: list[str] | None = None,
    ) -> Book:
        """A book over the links named (None: every link), their rows locked in ascending
        id, the order every writer takes them in."""
        return cls(session, _lock_links(session, names), usable_bps)

    def usage(self) -> dict[Direction, int]:
        """What is held per link direction now, this book's reservations included (the
        planning view `held_by_direction` gives before the book)."""
        return {d: bps for d, bps in self.held.items() if bps}

    def reserve(
        self,
        connection: Connection,
        demands: Mapping[Direction, int],
        *,
        generation: int | None = None,
        role: ReservationRole = ReservationRole.CURRENT,
        replacing: Mapping[Direction, int] | None = None,
    ) -> None:
        """`demands` checked and booked for `connection` (Refused: nothing booked);
        `replacing`: what the connection holds now, not counted against its own new rows."""
        _require_positive(demands)
        missing = sorted({name for name, _ in demands} - self.links.keys())
        if missing:
            raise UnknownLinks(missing)
        mine = replacing or {}
        wanted = sorted(
            demands.items(), key=lambda item: (self.links[item[0][0]].id, not item[0][1])
        )
        shortfalls = []
        for (name, fwd), bps in wanted:
            link = self.links[name]
            usable = 0 if removed(link) else self.usable_bps(link)
            free = usable - self.held[name, fwd] + mine.get((name, fwd), 0)
            if bps > free:
                shortfalls.append(LinkShortfall(name, fwd, direction(link, fwd), bps, free, usable))
        if shortfalls:
            raise Refused(shortfalls)
        for (name, fwd), bps in wanted:
            self.held[name, fwd] += bps
            self.rows.append(
                {
                    "connection_id": connection.id,
                    "link_id": self.links[name].id,
                    "forward": fwd,
                    "bps": bps,
                    "generation": connection.generation if generation is None else generation,
                    "role": role,
                }
            )

    def write(self) -> int:
        """The booked rows inserted and the links' totals changed; how many rows. One
        statement for all: rows added to the session as objects would be inserted one
        statement each (the session needs each one's id back, which SQLite's RETURNING
        does not give in order for many), 200 of them for a reroute of 100."""
        rows, self.rows = self.rows, []
        _add_to_totals(self.session, [(r["link_id"], r["forward"], r["bps"]) for r in rows])
        if rows:
            self.session.execute(insert(Reservation), rows)
        return len(rows)


def _require_positive(demands: Mapping[Direction, int]) -> None:
    bad = sorted(
        f"{name} {'forward' if fwd else 'reverse'}"
        for (name, fwd), bps in demands.items()
        if bps <= 0
    )
    if bad:
        raise ValueError(f"bandwidth must be positive: {', '.join(bad)}")


def release(session: Session, connection: Connection, generation: int | None = None) -> int:
    """Free the connection's reservations (one generation, or all); the number of rows freed.

    Only rows still held are touched, so a second release of the same thing frees nothing.
    """
    session.flush()
    query = (
        update(Reservation)
        .where(Reservation.connection_id == connection.id, Reservation.released.is_(None))
        .values(released=datetime.now(UTC))
    )
    if generation is not None:
        query = query.where(Reservation.generation == generation)
    # also updates the rows this session has loaded; RETURNING: exactly the rows this
    # statement released (a concurrent release of the same rows returns none of them)
    freed = _returned(session, query)
    _add_to_totals(session, [(link, fwd, -bps) for link, fwd, bps in freed])
    return len(freed)


def discard(session: Session, connection: Connection, generation: int) -> int:
    """A make-before-break that failed: its generation's rows are deleted, not released.

    The generation never carried traffic, and the connection stays on the one before, so a
    retry reserves the same generation again (the rows' unique key); released rows kept
    that key and made the retry an IntegrityError. Rows deleted."""
    if generation <= connection.generation:
        raise ValueError(f"generation {generation} is not a next one of {connection.generation}")
    session.flush()
    query = delete(Reservation).where(
        Reservation.connection_id == connection.id, Reservation.generation == generation
    )
    gone = _returned(session, query, deleting=True)
    _add_to_totals(session, [(link, fwd, -bps) for link, fwd, bps in gone])
    return len(gone)


def switch(session: Session, connection: Connection, generation: int) -> int:
    """The break of make-before-break: `generation`'s NEXT rows become CURRENT, every older
    generation is released (once), and the connection moves to `generation`. Rows freed."""
    return switch_many(session, [(connection, generation)])


def switch_many(session: Session, moves: Sequence[tuple[Connection, int]]) -> int:
    """`switch` for many connections at once: three statements and one UPDATE per link,
    whatever their number. Rows freed."""
    session.flush()
    older = [(c.id, g) for c, new in moves for g in range(c.generation, new)]
    freed = []
    if older:
        query = (
            update(Reservation)
            .where(
                tuple_(Reservation.connection_id, Reservation.generation).in_(older),
                Reservation.released.is_(None),
            )
            .values(released=datetime.now(UTC))
        )
        freed = _returned(session, query)  # as `release`: exactly the rows this released
        _add_to_totals(session, [(link, fwd, -bps) for link, fwd, bps in freed])
    session.execute(
        update(Reservation)
        .where(
            tuple_(Reservation.connection_id, Reservation.generation).in_(
                [(c.id, new) for c, new in moves]
            )
        )
        .values(role=ReservationRole.CURRENT),
        execution_options={"synchronize_session": "fetch"},
    )
    for connection, new in moves:
        connection.generation = new
    return len(freed)


def held_bps(session: Session, link_name: str, forward: bool | None = None) -> int:
    """What is held on one link now (all generations, all roles), in one direction or both."""
    held = session.execute(
        select(Link.held_forward_bps, Link.held_reverse_bps).where(Link.name == link_name)
    ).one_or_none()
    if held is None:
        return 0
    ahead, back = held
    return {True: ahead, False: back, None: ahead + back}[forward]


def held_by_direction(session: Session) -> dict[Direction, int]:
    """Everything held now, per link direction (what the planning ledger starts from): the
    links' running totals, one row per link whatever the number of live connections."""
    query = select(Link.name, Link.held_forward_bps, Link.held_reverse_bps).where(
        (Link.held_forward_bps != 0) | (Link.held_reverse_bps != 0)
    )
    out: dict[Direction, int] = {}
    for name, ahead, back in session.execute(query):
        out.update({(name, fwd): bps for fwd, bps in ((True, ahead), (False, back)) if bps})
    return out


def summed_by_direction(session: Session) -> dict[Direction, int]:
    """The same, summed from the reservation rows themselves (the ledger; a full scan)."""
    query = (
        select(Link.name, Reservation.forward, func.sum(Reservation.bps))
        .join(Link, Link.id == Reservation.link_id)
        .where(Reservation.released.is_(None))
        .group_by(Link.name, Reservation.forward)
    )
    return {(name, fwd): int(total) for name, fwd, total in session.execute(query)}


def drift(session: Session) -> dict[Direction, tuple[int, int]]:
    """Link directions whose running total differs from its rows' sum: (total, sum). Empty
    unless something changed reservation rows behind this module's back."""
    totals, sums = held_by_direction(session), summed_by_direction(session)
    return {
        d: (totals.get(d, 0), sums.get(d, 0))
        for d in totals.keys() | sums.keys()
        if totals.get(d, 0) != sums.get(d, 0)
    }


def _returned(session: Session, query: Any, deleting: bool = False) -> list[tuple[int, bool, int]]:
    """(link id, forward, bps) of the rows a release's UPDATE (its WHERE takes held rows
    only) or a DELETE changed (RETURNING); a DELETE's released rows count for nothing."""
    query = query.returning(
        Reservation.link_id, Reservation.forward, Reservation.bps, Reservation.released
    )
    rows = session.execute(query, execution_options={"synchronize_session": "fetch"})
    return [
        (link, bool(fwd), int(bps))
        for link, fwd, bps, released in rows
        if not deleting or released is None
    ]


def _add_to_totals(session: Session, changes: list[tuple[int, bool, int]]) -> None:
    """Each (link id, forward, bps) added to the link's running total, in ascending link id
    (one UPDATE per link, as an expression: concurrent writers add, never overwrite)."""
    per_link: dict[int, dict[bool, int]] = {}
    for link, fwd, bps in changes:
        both = per_link.setdefault(link, {True: 0, False: 0})
        both[fwd] += bps
    for link in sorted(per_link):
        ahead, back = per_link[link][True], per_link[link][False]
        if ahead or back:
            session.execute(
                update(Link)
                .where(Link.id == link)
                .values(
                    held_forward_bps=Link.held_forward_bps + ahead,
                    held_reverse_bps=Link.held_reverse_bps + back,
                )
                .execution_options(synchronize_session=False)
            )


def _lock_links(session: Session, names: list[str] | None) -> list[Link]:
    """The links named (None: every link), their rows locked in ascending id."""
    query = select(Link).order_by(Link.id).with_for_update()
    if names is not None:
        query = query.where(Link.name.in_(names))
    # populate_existing: a Link already in the session is refreshed, not trusted stale
    links = list(session.scalars(query.execution_options(populate_existing=True)))
    missing = sorted(set(names or ()) - {link.name for link in links})
    if missing:
        raise UnknownLinks(missing)
    return links


def _held_by(
    session: Session, book: Book, connection_id: int, generation: int
) -> dict[Direction, int]:
    """What one (connection, generation) holds, unreleased, on the book's links."""
    ids = {link.id: link.name for link in book.links.values()}
    query = (
        select(Reservation.link_id, Reservation.forward, func.sum(Reservation.bps))
        .where(
            Reservation.connection_id == connection_id,
            Reservation.generation == generation,
            Reservation.link_id.in_(ids),
            Reservation.released.is_(None),
        )
        .group_by(Reservation.link_id, Reservation.forward)
    )
    return {(ids[link], bool(fwd)): int(bps) for link, fwd, bps in session.execute(query)}
