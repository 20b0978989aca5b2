"""`vnet agent run --startup FILE`: the configuration an agent starts from.

FILE is an RFC 7951 JSON tree of vnet's module (what `<get-config>` returns
as JSON). It is decoded with the one codec and validated exactly as an edit
is (model invariants with exact paths, then YANG) before anything is stored:
a bad file stops the agent with the error, and nothing changes.

It applies when it changed since it was last applied, or when nothing is
stored yet; otherwise the stored configuration, with the changes made over
NETCONF/RESTCONF since, is kept. Whoever starts the agent (a lab) thus
hands over its share once, through this public interface, and never writes
the agent's state.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from vnet.agent.datastore import Datastore
from vnet.agent.datastore.locks import Locks
from vnet.model.yang.decode import parse_json, tree_from_json
from vnet.model.yang.errors import ErrorTag, ErrorType, RpcError
from vnet.tools.durable import replace_durably

APPLIED = "startup.applied"  # the digest of the startup file last applied


def read_startup(data: bytes) -> dict[str, Any]:
    """The file's tree, decoded against the schema (RpcError with the path if it does not fit)."""
    return tree_from_json(parse_json(data))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pending(ds: Datastore, data: bytes) -> bool:
    """True if the startup file (its bytes) must be applied at this start."""
    marker = ds.config.state_dir / APPLIED
    if not ds.has_stored() or not marker.exists():
        return True
    return marker.read_text().strip() != _digest(data)


def validated(ds: Datastore, tree: dict[str, Any]) -> dict[str, Any]:
    """The tree as an edit would commit it (indexes assigned), or RpcError.

    The check that networks stay as the lab provisioned them guards edits
    against the owner's configuration; the startup file *is* that
    configuration, so it is validated like an edit by a datastore that
    provisions its networks (and touches no kernel).
    """
    config = ds.config.model_copy(update={"provision_networks": True})
    return Datastore(config, apply_to_kernel=False).prepare(tree)


async def start_datastore(ds: Datastore, path: Path | None) -> bool:
    """Start `ds` from the startup file if it is pending, else from what it stores;
    True if the file was applied. An invalid file raises RpcError before anything
    is stored."""
    return await reconcile(ds, *startup_to_apply(ds, path))


def startup_to_apply(ds: Datastore, path: Path | None) -> tuple[dict[str, Any] | None, bytes]:
    """The startup file's validated tree if it is pending (else None), and its bytes.
    Raises RpcError, before anything is stored or served, if the file is invalid."""
    data = path.read_bytes() if path is not None else b""
    if path is None or not pending(ds, data):
        return None, data
    return validated(ds, read_startup(data)), data


async def reconcile(ds: Datastore, initial: dict[str, Any] | None, data: bytes) -> bool:
    """Load the configuration (`initial`, or the stored one) and bring the kernel in line."""
    await ds.start(initial=initial)
    if initial is None:
        return False
    # only once the datastore holds it: a failed start applies the file again next time
    replace_durably(ds.config.state_dir / APPLIED, _digest(data).encode())
    return True


class Reconciling(Locks):
    """Stands in for the datastore's locks while the kernel is reconciled at a start:
    every write path checks a lock first, so each is refused at once, and clearly,
    while reads of the configuration go on (issue 17, finding 9)."""

    def check(self, target: str, session: str) -> None:
        raise RECONCILING

    def lock(self, target: str, session: str, candidate_dirty: bool) -> None:
        raise RECONCILING


RECONCILING = RpcError(
    ErrorTag.IN_USE,
    "the agent is reconciling the kernel with its configuration after a start; "
    "reads are served, writes are not yet: retry in a few seconds",
    ErrorType.APPLICATION,
)


async def serve_while_reconciling(
    ds: Datastore,
    initial: dict[str, Any] | None,
    data: bytes,
    open_frontends: Callable[[], Awaitable[None]],
) -> bool:
    """Reconcile with the front-ends already open (writes refused until it is done).

    The configuration is loaded before the first front-end accepts a client.
    """
    locks, ds.locks = ds.locks, Reconciling()
    task = asyncio.create_task(reconcile(ds, initial, data))
    await asyncio.sleep(0)  # the task loads the configuration up to its first kernel call
    try:
        await open_frontends()
        applied = await task
    finally:
        if not task.done():
            task.cancel()
        ds.locks = locks
    return applied


__all__ = [
    "APPLIED",
    "pending",
    "read_startup",
    "serve_while_reconciling",
    "start_datastore",
    "startup_to_apply",
    "validated",
]
