"""Make-before-break as host changes: from a connection's pieces on its old path and on its
new one, the three transactions that move its traffic without a gap (paper 001, Sec. 3:
new tunnel, redirect, remove the old).

1. make:   every host of the new path gets the new transit and egress pieces next to what it
           already holds (the old ingress keeps steering into the old path meanwhile);
2. switch: every ingress host gets the new ingress (the traffic takes the new path);
3. break:  every host holds exactly the new pieces; hosts only on the old path lose theirs.

A move off a path that failed (`off_failed_path`) makes and switches in one step: nothing
on the old path gets anywhere, so there is no traffic to keep while the new one is made.
Every host of the new path goes straight to its new pieces in one transaction, where three
in a row took three times as long; then the hosts only the old path crossed lose theirs (a
step of its own, since such a host may be the one that failed, found down meanwhile: the
step does not ask it, and the connection runs on its new path already).

A step that changes nothing on any host is left out. Pieces are `ConnectionPieces` of one
connection (one name) per host; a host's put replaces the connection's pieces there whole.
"""

from __future__ import annotations

from collections.abc import Mapping

from vnet.controller.agents.realise import HostChange
from vnet.model.host_guarantees import ConnectionPieces, Locator

Pieces = Mapping[str, ConnectionPieces]  # host -> the connection's pieces there


def _unique(items: list) -> list:
    out: list = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _merged(old: ConnectionPieces | None, new: ConnectionPieces, ingress: str) -> ConnectionPieces:
    """new's transit/egress with old's; the ingress from `ingress` ("old" or "new")."""
    if old is None:
        keep = new.ingress if ingress == "new" else []
        return new.model_copy(update={"ingress": keep})
    return new.model_copy(
        update={
            "ingress": new.ingress if ingress == "new" else old.ingress,
            "transit": _unique([*old.transit, *new.transit]),
            "egress": _unique([*old.egress, *new.egress]),
        }
    )


def _is_empty(pieces: ConnectionPieces) -> bool:
    return not (pieces.ingress or pieces.transit or pieces.egress)


def _put(
    host: str, pieces: ConnectionPieces, locators: Mapping[str, tuple[Locator, ...]]
) -> HostChange:
    return HostChange(host=host, put=(pieces,), locators=tuple(locators.get(host, ())))


MAKE, SWITCH, BREAK = "make", "switch", "break"


def make_before_break(
    old: Pieces, new: Pieces, locators: Mapping[str, tuple[Locator, ...]] | None = None
) -> list[list[HostChange]]:
    """The steps (each a list of host changes for one transaction) from `old` to `new`."""
    return [step for _, step in phases(old, new, locators)]


def phases(
    old: Pieces, new: Pieces, locators: Mapping[str, tuple[Locator, ...]] | None = None
) -> list[tuple[str, list[HostChange]]]:
    """The steps from `old` to `new` with their phase (MAKE, SWITCH, BREAK)."""
    locators = locators or {}
    held = dict(old)  # what each host holds after the steps so far
    steps = []
    for phase, ingress in ((MAKE, "old"), (SWITCH, "new")):
        step = []
        for host, pieces in new.items():
            target = _merged(held.get(host), pieces, ingress)
            if _is_empty(target) or target == held.get(host):
                continue
            step.append(_put(host, target, locators))
            held[host] = target
        steps.append((phase, step))
    steps.append((BREAK, replace(held, new, locators)))
    return [(phase, step) for phase, step in steps if step]


def off_failed_path(
    old: Pieces, new: Pieces, locators: Mapping[str, tuple[Locator, ...]] | None = None
) -> list[tuple[str, list[HostChange]]]:
    """The steps of a move off a path that failed (see the module): the new path's hosts
    to their new pieces (SWITCH), then the old path's last hosts without theirs (BREAK)."""
    final = replace(old, new, locators)
    puts, deletes = [c for c in final if c.put], [c for c in final if not c.put]
    return [(phase, step) for phase, step in ((SWITCH, puts), (BREAK, deletes)) if step]


def replace(
    old: Pieces, new: Pieces, locators: Mapping[str, tuple[Locator, ...]] | None = None
) -> list[HostChange]:
    """Every host of either path straight to its new pieces (the old path's last hosts
    lose theirs): make-before-break's last step."""
    locators = locators or {}
    out = []
    for host in sorted(set(old) | set(new)):
        if host not in new:
            out.append(HostChange(host=host, delete=(old[host].name,)))
        elif old.get(host) != new[host]:
            out.append(_put(host, new[host], locators))
    return out


def install(
    new: Pieces, locators: Mapping[str, tuple[Locator, ...]] | None = None
) -> list[HostChange]:
    """A new connection's pieces, one change per host."""
    locators = locators or {}
    return [_put(host, pieces, locators) for host, pieces in sorted(new.items())]


def remove(old: Pieces) -> list[HostChange]:
    """A connection's pieces gone from every host that holds them."""
    return [HostChange(host=host, delete=(pieces.name,)) for host, pieces in sorted(old.items())]
