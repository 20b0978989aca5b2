"""The RowStatus textual convention of RFC 2579 as a pure state machine.

States of a conceptual row: A (does not exist: None), B (notReady),
C (notInService), D (active). `transition` implements the table in
RFC 2579's RowStatus DESCRIPTION for a SET of the status column; `other`
the last row of that table (a SET of another column). `complete` says
whether the row has every required column after all variable bindings
of the same PDU are applied (footnotes 2 and 3).
"""

from __future__ import annotations

ACTIVE = 1
NOT_IN_SERVICE = 2
NOT_READY = 3
CREATE_AND_GO = 4
CREATE_AND_WAIT = 5
DESTROY = 6

NAMES = {
    ACTIVE: "active",
    NOT_IN_SERVICE: "notInService",
    NOT_READY: "notReady",
    CREATE_AND_GO: "createAndGo",
    CREATE_AND_WAIT: "createAndWait",
    DESTROY: "destroy",
}
EXISTING = (ACTIVE, NOT_IN_SERVICE, NOT_READY)


class RowStatusError(Exception):
    """An SNMP error-status (RFC 3416 names: wrongValue, inconsistentValue, ...)."""

    def __init__(self, status: str, why: str = ""):
        super().__init__(f"{status}: {why}" if why else status)
        self.status = status
        self.why = why


def check_settable(value: int) -> None:
    """Values a manager may write: all but notReady (RFC 2579), within 1..6."""
    if value not in NAMES:
        raise RowStatusError("wrongValue", f"{value} is no RowStatus value")
    if value == NOT_READY:
        raise RowStatusError("wrongValue", "notReady may not be written")


def _create(current: int | None, requested: int, complete: bool) -> int:
    """createAndGo or createAndWait: only a row that does not exist can be created."""
    if current is not None:
        raise RowStatusError("inconsistentValue", f"{NAMES[requested]} on an existing row")
    if requested == CREATE_AND_WAIT:
        return NOT_IN_SERVICE if complete else NOT_READY
    if not complete:
        raise RowStatusError("inconsistentValue", "createAndGo without every required column")
    return ACTIVE


def _require_complete(complete: bool) -> None:
    if not complete:
        raise RowStatusError("inconsistentValue", "a required column has no value")


def transition(
    current: int | None,
    requested: int,
    complete: bool,
    *,
    can_leave_active: bool = False,
) -> int | None:
    """New state after setting the status column to `requested` (None: the row is gone).

    `can_leave_active`: whether this table supports active -> notInService;
    when it does not, that SET fails with wrongValue (RFC 2579, state D).
    """
    check_settable(requested)
    if current is not None and current not in EXISTING:
        raise ValueError(f"bad current state {current}")
    if requested == DESTROY:
        return None
    if requested in (CREATE_AND_GO, CREATE_AND_WAIT):
        return _create(current, requested, complete)
    if current is None:
        raise RowStatusError("inconsistentValue", f"{NAMES[requested]}: no such row")
    if requested == ACTIVE:
        _require_complete(complete)
        return ACTIVE
    # requested == NOT_IN_SERVICE
    if current == ACTIVE:
        if not can_leave_active:
            raise RowStatusError("wrongValue", "an active row cannot be taken out of service")
        return NOT_IN_SERVICE
    _require_complete(complete)
    return NOT_IN_SERVICE


def other(current: int | None, complete: bool, creating: bool) -> int | None:
    """State after setting another column of the row (no status SET in the PDU).

    `creating`: the same PDU creates the row; otherwise setting a column of a
    row that does not exist fails with inconsistentName (footnote 4: this agent
    does not create rows implicitly).
    """
    if current is None:
        if not creating:
            raise RowStatusError(
                "inconsistentName", "the row does not exist; create it with its RowStatus"
            )
        return None
    if current == ACTIVE:
        return ACTIVE
    return NOT_IN_SERVICE if complete else NOT_READY
