"""NETCONF's global datastore locks (RFC 6241 Sec. 7.5), honoured by every front-end."""

from __future__ import annotations

from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError

RUNNING = "running"
CANDIDATE = "candidate"


class Locks:
    def __init__(self) -> None:
        self.owners: dict[str, str | None] = {RUNNING: None, CANDIDATE: None}

    def check(self, target: str, session: str) -> None:
        """Refuse a write to `target` when another session holds its lock."""
        owner = self.owners.get(target)
        if owner is not None and owner != session:
            raise RpcError(
                ErrorTag.IN_USE,
                f"the {target} datastore is locked by session {owner}",
                ErrorType.PROTOCOL,
                info={"session-id": owner},
            )

    def lock(self, target: str, session: str, candidate_dirty: bool) -> None:
        if target not in self.owners:
            raise RpcError(
                ErrorTag.INVALID_VALUE, f"cannot lock datastore {target!r}", ErrorType.PROTOCOL
            )
        owner = self.owners[target]
        if owner is not None:
            raise RpcError(
                ErrorTag.LOCK_DENIED,
                f"the {target} datastore is already locked by session {owner}",
                ErrorType.PROTOCOL,
                info={"session-id": owner},
            )
        if target == CANDIDATE and candidate_dirty:
            raise RpcError(
                ErrorTag.LOCK_DENIED,
                "the candidate has uncommitted changes; commit or discard them first",
                ErrorType.PROTOCOL,
                info={"session-id": "0"},
            )
        self.owners[target] = session

    def unlock(self, target: str, session: str) -> None:
        if self.owners.get(target) != session:
            raise RpcError(
                ErrorTag.OPERATION_FAILED,
                f"the {target} datastore is not locked by this session",
                ErrorType.PROTOCOL,
            )
        self.owners[target] = None

    def release(self, session: str) -> list[str]:
        """Drop the locks `session` held; return their targets."""
        released = [t for t, owner in self.owners.items() if owner == session]
        for target in released:
            self.owners[target] = None
        return released
