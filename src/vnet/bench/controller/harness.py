"""The system under test: a lab of emulated hosts with their agents and its controller.

The lab file's `controller:` section makes `vnet lab up` start `vnet controller run` in
the lab's management namespace, wired to the lab's agents (vnet.lab.controller); the lab's
record says where it listens and where its provider token is. The bench brings the lab up
under a name of its own (so it never meets a lab someone else runs from the same file),
with the database of the series: SQLite in the controller's state directory, or a
PostgreSQL server of its own (vnet.tools.postgres: a temporary directory, stopped by PID).
Everything is taken down again, also after a failure.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path

from vnet.bench.contract import BenchError
from vnet.bench.controller.driver import Access
from vnet.client.controller import read_token
from vnet.lab import lab
from vnet.lab.access import controller_access
from vnet.lab.topology_file import load_topology
from vnet.model import Topology
from vnet.tools import postgres

DATABASE_NAME = "vnetbench"


def bench_topology(path: Path, database: str | None) -> Topology:
    """The file's topology under a fresh lab name, its controller on `database` (a URL;
    None: SQLite)."""
    topo = load_topology(path)
    if topo.controller is None:
        raise BenchError(f"{path} has no `controller:` section: nothing to benchmark")
    section = topo.controller.model_copy(update={"database": database})
    return topo.model_copy(update={"name": f"cb{secrets.token_hex(2)}", "controller": section})


def access(name: str) -> Access:
    """Where the lab `name`'s controller listens, from the lab's record."""
    c = controller_access(name)
    verify = c.certificate or True
    return Access(
        url=c.url, token=read_token(c.token_file), namespace=c.namespace, verify=verify, lab=name
    )


@contextlib.contextmanager
def _lab(path: Path, database: str | None) -> Iterator[Access]:
    topo = bench_topology(path, database)
    try:
        lab.up(path, topology=topo)
        yield access(topo.name)
    finally:
        lab.down(topo.name)


@contextlib.contextmanager
def controller_lab(path: Path, database: str) -> Iterator[Access]:
    """A lab with its controller on `database` ("sqlite" or "postgresql") for the block."""
    if database == "sqlite":
        with _lab(path, None) as found:
            yield found
        return
    with postgres.running() as server:
        url = server.create_database(DATABASE_NAME)
        with _lab(path, url) as found:
            yield found
