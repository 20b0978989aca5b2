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
    `user`'s change, authorised by NACM. `compute` gets running itself, not a copy: the
    methods of resource.py never change the tree they are given (they copy the nodes on
    the way to their target), and a deep copy of running cost what the host holds and
    made every entry look changed to the commit, which knows unchanged ones by identity."""
    return await ds.update(RUNNING, compute, session, user=user, in_place=False)
