"""Read-modify-commit against the datastore without losing a concurrent change.

The datastore's `commit_tree` takes its write lock itself, so a front-end
that reads `running`, computes a new tree and commits it could overwrite a
change another writer committed in between. Here the new tree is computed
from a snapshot and committed only when the write lock can be taken without
waiting (so nothing can commit between the snapshot and our commit: there
is no await in between); otherwise we wait for the current writer and
compute again from the fresh snapshot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from vnet.agent.datastore import RUNNING, Datastore
from vnet.agent.errors import RpcError

T = TypeVar("T")
MAX_ATTEMPTS = 100


def _free(lock: asyncio.Lock) -> bool:
    """True if acquiring `lock` now would not suspend (asyncio.Lock's own rule)."""
    if lock.locked():
        return False
    waiters = getattr(lock, "_waiters", None) or ()
    return all(w.cancelled() for w in waiters)


async def update(
    ds: Datastore,
    compute: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
    session: str,
) -> T:
    """compute(snapshot of running) -> (new tree, result); commit the tree; return result."""
    for _ in range(MAX_ATTEMPTS):
        new, result = compute(ds.tree(RUNNING))
        if _free(ds.write_lock):
            await ds.commit_tree(new, session)
            return result
        async with ds.write_lock:
            pass  # let the current writer finish, then start over from its result
    raise RpcError(
        "resource-denied",
        f"the datastore stayed busy for {MAX_ATTEMPTS} attempts; try again",
        "application",
    )
