"""A start with the inventory file after the API changed the inventory: what the API added is
kept (and may be written into the file unchanged), what it deleted from the file's objects
stays deleted, the file's new objects come after both; an API object the file names
otherwise is a conflict that writes nothing. (Before, any API addition made the next start
with the file refuse: "is in the database but not in the file".)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tests.controller_topology_support import agents, data, topology
from vnet.controller.db import make_engine
from vnet.controller.inventory import InventoryConflict, append, load, read
from vnet.controller.service.removal import delete_endhost
from vnet.model.topology import Topology


@pytest.fixture
def engine(tmp_path: Path, migrated: Callable[[Path], str]) -> Iterator[Engine]:
    engine = make_engine(migrated(tmp_path / "state"))
    yield engine
    engine.dispose()


def names(engine: Engine, kind: str) -> list[str]:
    with Session(engine) as session:
        objects = getattr(read(session).topology, kind)
    return [getattr(o, "name", None) or f"{o.a}-{o.b}" for o in objects]


def through_the_api(engine: Engine, kind: str, added: dict[str, Any]) -> None:
    """`added` appended to the held `kind` as the API appends (inventory.append)."""
    with Session(engine) as session, session.begin():
        held = read(session).topology
        more = Topology.model_validate(
            {**held.model_dump(mode="json"), kind: [*held.model_dump(mode="json")[kind], added]}
        )
        append(session, more)


def load_file(engine: Engine, file: dict[str, Any]) -> int:
    with Session(engine) as session, session.begin():
        return load(session, topology(file), agents())


def test_a_start_with_the_file_keeps_what_the_api_added_and_deleted(engine: Engine) -> None:
    load_file(engine, data())
    through_the_api(engine, "hosts", {"name": "h4"})
    link = {"a": "h3", "b": "h4", "rate": "1gbit"}
    through_the_api(engine, "links", link)
    gone = names(engine, "endhosts")[0]
    with Session(engine) as session, session.begin():
        delete_endhost(session, gone)

    assert load_file(engine, data()) == 0  # the same file: nothing to add, nothing refused
    assert names(engine, "hosts")[-1] == "h4" and names(engine, "links")[-1] == "h3-h4"
    assert gone not in names(engine, "endhosts")  # not loaded again from the file

    written_down = data()  # the operator writes the API's host and link into the file
    written_down["hosts"].append({"name": "h4"})
    written_down["links"].append(link)
    written_down["hosts"].append({"name": "h5"})  # and a new one
    assert load_file(engine, written_down) == 1
    assert names(engine, "hosts")[-2:] == ["h4", "h5"]


def test_a_file_that_names_an_api_object_otherwise_is_refused(engine: Engine) -> None:
    load_file(engine, data())
    through_the_api(engine, "hosts", {"name": "h4"})
    through_the_api(engine, "links", {"a": "h3", "b": "h4", "rate": "1gbit"})
    other = data()
    other["hosts"].append({"name": "h4"})
    other["links"].append({"a": "h3", "b": "h4", "rate": "2gbit"})
    with pytest.raises(InventoryConflict, match="links 'h3-h4' was added through the API"):
        load_file(engine, other)
    assert names(engine, "links")[-1] == "h3-h4"
