"""RESTCONF edits as read-modify-write transactions on the running datastore."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from vnet.agent.datastore import RUNNING, Datastore

T = TypeVar("T")


async def update(
    ds: Datastore,
    compute: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
    session: str,
    user: str | None = None,
) -> T:
    """compute(running) -> (new tree, result), under the datastore's write lock;
    `user`'s change, authorised by NACM."""
    return await ds.update(RUNNING, compute, session, user=user)
