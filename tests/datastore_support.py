"""Committing to an agent's datastore in tests as a user would: an edit of running by a
principal, through the store's one commit path (NACM, validation, kernel, journal)."""

from __future__ import annotations

from typing import Any

from vnet.agent.datastore import RUNNING, Datastore

USER = "admin"  # the tests' agents list it first: the recovery user


async def commit_as(
    ds: Datastore, tree: dict[str, Any], user: str = USER, session: str = ""
) -> None:
    """Make `tree` the running configuration, as `user` replacing running would."""

    def replace(_current: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return tree, None

    await ds.update(RUNNING, replace, session=session, user=user, in_place=False)
