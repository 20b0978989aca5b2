"""Which controller owns a request in flight, and whether it is still alive.

Several controllers may share one PostgreSQL database; the one starting must settle only the
requests of controllers that died, never those another live controller is in the middle of.
Each controller names its requests "<instance>-<random>" (`Liveness.request_id`) and, on
PostgreSQL, holds a session-level advisory lock on its instance number for as long as it runs
(a connection of its own, so the lock ends with the process, whatever kills it). A request
whose owner's lock can be taken belongs to a dead controller. On SQLite (one controller per
database file) every request in flight is a dead run's.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, Engine, text

INSTANCE_HEX = 15  # 60 bits: fits PostgreSQL's signed 64-bit advisory lock key


def instance_of(request_id: str) -> str | None:
    head, dash, _ = request_id.partition("-")
    if dash and len(head) == INSTANCE_HEX and all(c in "0123456789abcdef" for c in head):
        return head
    return None


class Liveness:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.instance = uuid.uuid4().hex[:INSTANCE_HEX]
        self._held: Connection | None = None

    @property
    def shared(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def request_id(self) -> str:
        return f"{self.instance}-{uuid.uuid4().hex[:32]}"

    def hold(self) -> None:
        """Take this controller's lock, kept until `release` or the process's end."""
        if self.shared and self._held is None:
            self._held = self.engine.connect()
            self._held.execute(text("SELECT pg_advisory_lock(:k)"), {"k": int(self.instance, 16)})
            self._held.commit()

    def release(self) -> None:
        if self._held is not None:
            self._held.close()  # the session ends, and its advisory lock with it
            self._held = None

    def owner_alive(self, request_id: str) -> bool:
        """Whether the controller that made `request_id` still runs (not this one's
        concern on SQLite, or for a request id without an owner: settled)."""
        owner = instance_of(request_id)
        if not self.shared or owner is None or owner == self.instance:
            return False
        key = int(owner, 16)
        with self.engine.connect() as conn:
            taken = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
            if taken:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            conn.commit()
        return not taken
