"""What a host's connections hold that another may not take, by key: their ids, their
SIDs, and the packets their ingress pieces steer. A change of some connections is checked
against it (`clashes`) in time that follows the change: `guarantee_problems` goes over
every connection, a fifth of a commit adding one connection to 2000.

The index describes connections that passed the full checks, so no two of them clash; a
changed connection clashes with the others exactly when it holds a key that one of them
holds (id, router and SID) or claims packets that one of them claims (the claims are
indexed as `_Claims` indexes them, each entry with every connection that put it there).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from ipaddress import IPv6Address
from typing import Any

from vnet.model.host import HostConfig
from vnet.model.host_guarantees import ConnectionPieces
from vnet.model.host_guarantees_check import (
    ClaimKey,
    claim_keys,
    connection_problems,
    open_fields,
    overlap_key,
    steer_of,
)

_Where = tuple[object, ...]  # router, family, source, destination
_Open = tuple[str | int | None, ...]
_Entry = tuple[_Where, ClaimKey, _Open]


def _claims(conn: ConnectionPieces) -> list[tuple[_Where, _Open]]:
    """(where, the open-or-fixed protocol and ports) of each of a connection's ingresses."""
    out: list[tuple[_Where, _Open]] = []
    for ing in conn.ingress:
        mine = steer_of(ing)
        out.append((mine[:4], mine[4:]))
    return out


def _sids(conn: ConnectionPieces) -> list[tuple[str, IPv6Address]]:
    return [(p.router, p.sid) for p in conn.transit] + [(p.router, p.sid) for p in conn.egress]


@dataclass
class ConnectionIndex:
    ids: dict[int, str] = field(default_factory=dict)
    sids: dict[tuple[str, IPv6Address], str] = field(default_factory=dict)
    # entry -> the connections that put it there (how many times: ingresses of one may share)
    claims: dict[_Entry, Counter[str]] = field(default_factory=dict)
    kinds: dict[_Where, Counter[tuple[int, ...]]] = field(default_factory=dict)
    held: dict[str, ConnectionPieces] = field(default_factory=dict)

    @classmethod
    def of(cls, connections: Iterable[ConnectionPieces]) -> ConnectionIndex:
        index = cls()
        index.update((), connections)
        return index

    def update(self, gone: Iterable[str], made: Iterable[ConnectionPieces]) -> None:
        """The connections named `gone` leave (those not held are ignored); `made` come."""
        for name in gone:
            conn = self.held.pop(name, None)
            if conn is not None:
                self._withdraw(conn)
        for conn in made:
            self.held[conn.name] = conn
            self.ids[conn.id] = conn.name
            for sid in _sids(conn):
                self.sids[sid] = conn.name
            for where, fields in _claims(conn):
                self.kinds.setdefault(where, Counter())[open_fields(fields)] += 1
                for key, values in claim_keys(fields):
                    self.claims.setdefault((where, key, values), Counter())[conn.name] += 1

    def _withdraw(self, conn: ConnectionPieces) -> None:
        if self.ids.get(conn.id) == conn.name:
            del self.ids[conn.id]
        for sid in _sids(conn):
            if self.sids.get(sid) == conn.name:
                del self.sids[sid]
        for where, fields in _claims(conn):
            _take(self.kinds, where, open_fields(fields))
            for key, values in claim_keys(fields):
                _take(self.claims, (where, key, values), conn.name)

    def clashes(self, hc: HostConfig, changed: list[ConnectionPieces], gone: set[str]) -> bool:
        """Whether `hc` has a problem that `guarantee_problems` would find, when it holds
        the indexed connections but those in `gone` (deleted or replaced), plus `changed`
        (new or replacing), and nothing else of it changed: the changed ones' own problems,
        between them, or with one that stays."""
        if connection_problems(hc, changed):
            return True
        for conn in changed:
            if self._stays(self.ids.get(conn.id), gone):
                return True
            if any(self._stays(self.sids.get(key), gone) for key in _sids(conn)):
                return True
            if any(self._overlaps(where, fields, gone) for where, fields in _claims(conn)):
                return True
        return False

    def _overlaps(self, where: _Where, fields: _Open, gone: set[str]) -> bool:
        """A connection that stays claims some of the packets `fields` claims at `where`."""
        for kind in self.kinds.get(where, ()):
            key, values = overlap_key(kind, fields)
            owners = self.claims.get((where, key, values), ())
            if any(name not in gone for name in owners):  # stops at the first: gone is small
                return True
        return False

    @staticmethod
    def _stays(owner: str | None, gone: set[str]) -> bool:
        return owner is not None and owner not in gone


def _take(counts: dict[Any, Counter[Any]], where: Any, item: Any) -> None:
    """One `item` less at `where`; what is left empty goes (so the index equals the one
    built afresh)."""
    counter = counts[where]
    counter[item] -= 1
    if counter[item] <= 0:
        del counter[item]
    if not counter:
        del counts[where]
