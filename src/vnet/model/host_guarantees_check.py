"""A host's underlay classes and connection pieces that cannot be realised, each at its field.

Locations are ("underlay", i, ...) and ("srv6", "locators"|"connections", i, ...),
which the YANG codec turns into the element's path. Checks that need the whole
network (admission along a path, end-to-end MTU) are the manager's; these are
what one host can know.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from ipaddress import IPv6Address, IPv6Network
from itertools import combinations

from vnet.model.errors import Loc, Problem
from vnet.model.host import HostConfig
from vnet.model.host_guarantees import (
    ConnectionPieces,
    Egress,
    Ingress,
    Transit,
    UnderlayInterface,
)
from vnet.model.rate import format_rate
from vnet.model.srv6 import interface_in
from vnet.model.topology import VirtualRouter

_Steer = tuple[str, int, object, object, str | None, int | None, int | None]
_Open = tuple[str | int | None, ...]  # protocol, source port, destination port: None is any
_Fields = tuple[int, ...]  # positions in an _Open


def guarantee_problems(hc: HostConfig) -> list[Problem]:
    """Every problem of the host's underlay classes, locators and connection pieces."""
    checker = _Checker(hc)
    for i, itf in enumerate(hc.underlay):
        checker.underlay_interface(i, itf)
    checker.locators()
    for i, conn in enumerate(hc.srv6.connections):
        checker.connection(i, conn)
    return checker.problems


def connection_problems(hc: HostConfig, connections: list[ConnectionPieces]) -> list[Problem]:
    """The problems of `connections` alone (of `hc`'s) and between them: of each on its
    own (its VRs, interfaces, SIDs in the locators) and their ids, SIDs and steering that
    clash with one another; not with `hc`'s other connections (ConnectionIndex does that)."""
    checker = _Checker(hc)
    for i, conn in enumerate(connections):
        checker.connection(i, conn)
    return checker.problems


class _Checker:
    def __init__(self, hc: HostConfig) -> None:
        self.hc = hc
        self.problems: list[Problem] = []
        self.networks = {carried.network.name for carried in hc.networks}
        self.routers = {vr.name: vr for vr in hc.routers}
        # per (router, family, source, destination): what the ingresses there steer
        self.steering: dict[tuple[object, ...], _Claims] = {}
        self.sids: dict[tuple[str, IPv6Address], str] = {}
        self.ids: dict[int, str] = {}

    def add(self, loc: Loc, message: str, subject: str = "") -> None:
        self.problems.append(Problem(loc, message, subject))

    # -- underlay ----------------------------------------------------------
    def underlay_interface(self, i: int, itf: UnderlayInterface) -> None:
        subject = f"underlay interface {itf.name!r}"
        if any(other.name == itf.name for other in self.hc.underlay[:i]):
            self.add(("underlay", i, "name"), "duplicate underlay interface", subject)
        if itf.reserved >= itf.rate:
            self.add(
                ("underlay", i, "reserved"),
                f"the reserved class ({format_rate(itf.reserved)}) leaves nothing of the "
                f"interface's {format_rate(itf.rate)}",
                subject,
            )
            return
        total = itf.reserved
        seen: set[str] = set()
        for j, cls in enumerate(itf.classes):
            loc: Loc = ("underlay", i, "classes", j)
            if cls.network not in self.networks:
                self.add(
                    (*loc, "network"), f"this host carries no network {cls.network!r}", subject
                )
            if cls.network in seen:
                self.add((*loc, "network"), f"a second class for network {cls.network!r}", subject)
            seen.add(cls.network)
            if cls.ceil is not None and not cls.rate <= cls.ceil <= itf.rate:
                self.add(
                    (*loc, "ceil"),
                    f"ceil {format_rate(cls.ceil)} must lie between the class's rate "
                    f"{format_rate(cls.rate)} and the interface's {format_rate(itf.rate)}",
                    subject,
                )
            total += cls.rate
            if total > itf.rate:
                self.add(
                    (*loc, "rate"),
                    f"oversubscribes the interface: reserved {format_rate(itf.reserved)} + "
                    f"network guarantees up to here {format_rate(total - itf.reserved)} > "
                    f"its rate {format_rate(itf.rate)}",
                    subject,
                )
                return

    # -- SRv6 --------------------------------------------------------------
    def locators(self) -> None:
        seen: list[IPv6Network] = []
        for i, loc in enumerate(self.hc.srv6.locators):
            if loc.router not in self.routers:
                self.add(
                    ("srv6", "locators", i, "router"), f"this host has no router {loc.router!r}"
                )
            clash = next((p for p in seen if p.overlaps(loc.prefix)), None)
            if clash is not None:
                self.add(("srv6", "locators", i, "prefix"), f"overlaps locator {clash}")
            seen.append(loc.prefix)

    def connection(self, i: int, conn: ConnectionPieces) -> None:
        base: Loc = ("srv6", "connections", i)
        subject = f"connection {conn.name!r}"
        if conn.id in self.ids:
            self.add((*base, "id"), f"id {conn.id} is connection {self.ids[conn.id]!r}'s", subject)
        self.ids.setdefault(conn.id, conn.name)
        for j, ing in enumerate(conn.ingress):
            self.ingress((*base, "ingress", j), ing, conn.name, subject)
        pieces_of: list[tuple[str, Sequence[Transit | Egress]]] = [
            ("transit", conn.transit),
            ("egress", conn.egress),
        ]
        for kind, pieces in pieces_of:
            for j, piece in enumerate(pieces):
                loc: Loc = (*base, kind, j)
                if self.router_interface(loc, piece.router, piece.network, subject):
                    self.sid(loc, piece.router, piece.sid, subject)
        for j, eg in enumerate(conn.egress):
            if isinstance(eg.next_hop, IPv6Address) != (eg.action == "End.DX6"):
                self.add((*base, "egress", j, "next-hop"), "wrong family", subject)

    def router_interface(self, loc: Loc, router: str, network: str, subject: str) -> bool:
        """The piece's VR is on this host and has an interface in `network`."""
        vr = self.routers.get(router)
        if vr is None:
            self.add((*loc, "router"), f"this host has no router {router!r}", subject)
            return False
        if interface_in(vr, network) is None:
            self.add(
                (*loc, "network"), f"router {router!r} has no interface in {network!r}", subject
            )
            return False
        return True

    def sid(self, loc: Loc, router: str, sid: IPv6Address, subject: str) -> None:
        owned = [lc.prefix for lc in self.hc.srv6.locators if lc.router == router]
        if not any(sid in prefix for prefix in owned):
            where = ", ".join(str(p) for p in owned) or "none"
            self.add(
                (*loc, "sid"),
                f"SID {sid} lies outside the locators of router {router!r} ({where})",
                subject,
            )
            return
        if (router, sid) in self.sids:
            self.add((*loc, "sid"), f"SID {sid} is already {self.sids[(router, sid)]}'s", subject)
        self.sids.setdefault((router, sid), subject)

    def ingress(self, loc: Loc, ing: Ingress, name: str, subject: str) -> None:
        if ing.source.version != ing.destination.version:
            self.add((*loc, "source"), "source and destination differ in IP family", subject)
            return
        if ing.protocol in (None, "icmp") and (ing.source_port or ing.destination_port):
            self.add((*loc, "protocol"), "ports need protocol tcp, udp or sctp", subject)
        vr = self.routers.get(ing.router)
        ok = self.router_interface(loc, ing.router, ing.network, subject)
        if vr is not None and interface_in(vr, ing.lan_network) is None:
            self.add(
                (*loc, "lan_network"),
                f"router {ing.router!r} has no interface in {ing.lan_network!r}",
                subject,
            )
            ok = False
        if ok:
            self.overlap(loc, ing, name, subject, vr)  # type: ignore[arg-type]

    def overlap(self, loc: Loc, ing: Ingress, name: str, subject: str, vr: VirtualRouter) -> None:
        """Two ingress pieces on one VR may not claim the same packets."""
        mine = steer_of(ing)
        owner = self.steering.setdefault(mine[:4], _Claims()).claim(mine[4:], name)
        if owner is not None:
            self.add(
                (*loc, "destination"),
                f"steers the same 5-tuple as connection {owner!r} "
                f"({_describe(ing)} on router {vr.name!r})",
                subject,
            )


class _Claims:
    """The (protocol, source port, destination port) claimed between one pair of addresses
    on one VR. Two claims overlap when each field is equal or open (None) on one side. A
    claim is indexed by the fields it leaves open and, under every choice of its fixed
    fields, their values: a new claim finds what it overlaps with one lookup per kind of
    claim (at most eight), where a scan of every earlier claim made a host holding N
    connections between the same ends cost N squared to check."""

    def __init__(self) -> None:
        # (its open fields, the fields looked at) -> their values -> (order, owner)
        self._index: dict[tuple[_Fields, _Fields], dict[_Open, tuple[int, str]]] = {}
        self._kinds: set[_Fields] = set()  # the open fields of claims made
        self._made = 0

    def claim(self, fields: _Open, name: str) -> str | None:
        """The earliest owner of a claim `fields` overlaps; else None, and `fields` is
        `name`'s from now on."""
        hits = [hit for kind in self._kinds if (hit := self._find(kind, fields)) is not None]
        if hits:
            return min(hits)[1]
        self._kinds.add(open_fields(fields))
        order, self._made = self._made, self._made + 1
        for key, values in claim_keys(fields):
            self._index.setdefault(key, {}).setdefault(values, (order, name))
        return None

    def _find(self, kind: _Fields, fields: _Open) -> tuple[int, str] | None:
        """The earliest claim of `kind` that `fields` overlaps."""
        key, values = overlap_key(kind, fields)
        return self._index.get(key, {}).get(values)


ClaimKey = tuple[_Fields, _Fields]  # a claim's open fields, the fields looked at


def claim_keys(fields: _Open) -> Iterator[tuple[ClaimKey, _Open]]:
    """Where a claim is indexed: under its open fields and every choice of its fixed
    fields, their values."""
    opened = open_fields(fields)
    fixed = [i for i in range(len(fields)) if i not in opened]
    for size in range(len(fixed) + 1):
        for looked in combinations(fixed, size):
            yield (opened, looked), tuple(fields[i] for i in looked)


def overlap_key(kind: _Fields, fields: _Open) -> tuple[ClaimKey, _Open]:
    """Where the claims of `kind` (their open fields) that `fields` overlaps are indexed:
    their fixed fields that are fixed in `fields` too are equal (the others match anything)."""
    mine = open_fields(fields)
    looked = tuple(i for i in range(len(fields)) if i not in kind and i not in mine)
    return (kind, looked), tuple(fields[i] for i in looked)


def open_fields(fields: _Open) -> _Fields:
    return tuple(i for i, value in enumerate(fields) if value is None)


def steer_of(ing: Ingress) -> _Steer:
    """(router, family, source, destination, protocol, source port, destination port)."""
    return (
        ing.router,
        ing.family,
        ing.source,
        ing.destination,
        ing.protocol,
        ing.source_port,
        ing.destination_port,
    )


def _describe(ing: Ingress) -> str:
    proto = ing.protocol or "any protocol"
    ports = "".join(
        f" {word} {port}"
        for word, port in (("sport", ing.source_port), ("dport", ing.destination_port))
        if port
    )
    return f"from {ing.source} to {ing.destination} {proto}{ports}"
