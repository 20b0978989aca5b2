"""The operational state of hosts and links: how it is derived, kept and handed on.

A link's state follows from what the agents at its two ends say of their interface towards
it (`ul-<peer>`, utilisation.arcs_of): down as soon as either end's interface is down (a
pulled cable loses the carrier at both ends; a port set down at one), up when an end says up
and none says down, unknown while neither end's agent is heard. A host is up while its agent
answers, unreachable when it does not (health.py decides).

The state is one `element_state` row per host and link; the service's views read it there, so
controllers sharing a database show the same. `Deliveries` decides which changes reach the
hooks (`StateHook`): a real change between up and not up, once: down (or unreachable) when
the element was not already known down, up only after it was down. Unknown is no news
(an agent not heard says nothing of its links), and the first "up" after a start is none
either, unless the database last knew the element down.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal, Protocol, cast

from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller.db.models import ElementState, OperState
from vnet.controller.service.utilisation import PORT_PREFIX
from vnet.model.controller_api import ElementStatus

Kind = Literal["host", "link"]
Key = tuple[Kind, str]  # ("host" | "link", name)
CONTROLLER = "controller"  # reported_by of the controller's own liveness checks


class StateHook(Protocol):
    """Who acts on failures (rerouting): told once per real change, in order."""

    async def on_link_state(self, link: str, up: bool) -> None: ...
    async def on_host_state(self, host: str, up: bool) -> None: ...


def status(state: OperState, reason: str, by: str) -> ElementStatus:
    return ElementStatus(state=state.value, since=datetime.now(UTC), reason=reason, reported_by=by)


def link_status(
    ends: tuple[str, str], interfaces: Mapping[str, Mapping[str, bool]]
) -> tuple[OperState, str, str]:
    """(state, reason, reported_by) of the link between `ends` from what each end's agent says
    of its interface towards the other (`interfaces`: host -> interface -> up)."""
    heard = []
    for host, peer in (ends, ends[::-1]):
        up = interfaces.get(host, {}).get(PORT_PREFIX + peer)
        if up is not None:
            heard.append((host, PORT_PREFIX + peer, up))
    for host, interface, up in heard:
        if not up:
            return OperState.DOWN, f"{interface} on {host} is down", host
    if heard:
        said = " and ".join(f"{interface} on {host}" for host, interface, _ in heard)
        return OperState.UP, f"{said} up", heard[0][0]
    return OperState.UNKNOWN, "neither end's agent is heard", CONTROLLER


class Deliveries:
    """Which state changes the hooks hear (see the module's words)."""

    def __init__(self, known: Mapping[Key, str]):
        self.last: dict[Key, bool] = {}
        for key, state in known.items():
            if state != OperState.UNKNOWN:
                self.last[key] = state == OperState.UP

    def news(self, key: Key, state: OperState) -> bool | None:
        """Whether the hooks hear `key` is up (True) or down (False) now; None: no news."""
        if state == OperState.UNKNOWN:
            return None
        up = state == OperState.UP
        before = self.last.get(key)
        self.last[key] = up
        if up:
            return True if before is False else None
        return False if before is not False else None


def read_states(session: Session) -> dict[Key, ElementStatus]:
    rows = session.scalars(select(ElementState)).all()
    return {
        (cast(Kind, row.kind), row.name): ElementStatus(
            state=row.state.value,
            since=_utc(row.since),
            reason=row.reason,
            reported_by=row.reported_by,
        )
        for row in rows
    }


def _utc(at: datetime) -> datetime:
    """SQLite keeps no time zone: what was written in UTC comes back naive."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def write_state(session: Session, key: Key, now: ElementStatus) -> None:
    kind, name = key
    row = session.scalars(
        select(ElementState).where(ElementState.kind == kind, ElementState.name == name)
    ).one_or_none()
    if row is None:
        row = ElementState(kind=kind, name=name)
        session.add(row)
    row.state = OperState(now.state)
    row.since = now.since or datetime.now(UTC)
    row.reason = now.reason[:255]
    row.reported_by = now.reported_by
