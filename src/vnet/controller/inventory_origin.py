"""Which inventory objects the API added and deleted, so that a start with the inventory file
tells the file's objects from the API's (kept in the inventory's settings row, under `api`).

A start loads the file append-only (inventory.py): what the database holds must be the
file's first objects, in order. The API's changes are not the file's: an object the API
added is left out of that comparison (the file may name it too, unchanged, once the operator
writes it down there), and an object of the file the API deleted stays deleted (the file's
copy is skipped, not loaded again). Hosts and links removed through the API keep their rows,
so they need no record here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from vnet.controller.db.models import API_ORIGIN, SETTINGS_ID, TopologySettings


@dataclass
class Origin:
    added: dict[str, set[str]] = field(default_factory=dict)  # kind -> names
    deleted: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, session: Session) -> Origin:
        settings = session.get(TopologySettings, SETTINGS_ID)
        held = (settings.spec if settings else {}).get(API_ORIGIN, {})
        return cls(
            {k: set(v) for k, v in held.get("added", {}).items()},
            {k: set(v) for k, v in held.get("deleted", {}).items()},
        )

    def write(self, session: Session) -> None:
        settings = session.get(TopologySettings, SETTINGS_ID)
        assert settings is not None, "the API changes an inventory that was loaded"
        shown = {
            "added": {k: sorted(v) for k, v in self.added.items() if v},
            "deleted": {k: sorted(v) for k, v in self.deleted.items() if v},
        }
        settings.spec = {**settings.spec, API_ORIGIN: shown}


def note_added(session: Session, kind: str, names: Iterable[str]) -> None:
    origin = Origin.read(session)
    origin.added.setdefault(kind, set()).update(names)
    origin.write(session)


def note_deleted(session: Session, kind: str, name: str) -> None:
    """`name` deleted through the API: if the file has it, it is not loaded again."""
    origin = Origin.read(session)
    if name in origin.added.get(kind, set()):
        origin.added[kind].discard(name)  # the API's own: the file never had it
    else:
        origin.deleted.setdefault(kind, set()).add(name)
    origin.write(session)


def file_part(
    origin: Origin, kind: str, held: list[Any], wanted: list[Any], name: Any
) -> tuple[list[Any], list[Any], list[tuple[Any, Any]]]:
    """(the held objects that came from the file, the file's objects to compare with them
    and append, (file object, API object) pairs the file names as the API made them);
    `name(obj)` names an object."""
    added, deleted = origin.added.get(kind, set()), origin.deleted.get(kind, set())
    by_api = {name(o): o for o in held if name(o) in added}
    from_file = [o for o in held if name(o) not in added]
    both = [(o, by_api[name(o)]) for o in wanted if name(o) in by_api]
    rest = [o for o in wanted if name(o) not in by_api and name(o) not in deleted]
    return from_file, rest, both
