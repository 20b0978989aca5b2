"""Test worlds built once per session and borrowed by tests (the fixtures are in conftest.py).

A borrowed world is left as it was found: each test removes what it made, and a guard
compares the world after the test (and after its own fixtures' teardown) with the world at
borrow time, failing the test that leaked:

- a lab: every host's whole running configuration, read over NETCONF, but for the
  SRv6 locators: a VR's locator is its own address block, the same whichever connection
  puts it, and the controller never removes one (controller/agents/changes.py);
- the PostgreSQL server: no client left connected to a database the test created.

The controller's databases are copied from a template made once per session (migrated, the
lab's inventory loaded): SQLite by copying the file, PostgreSQL by CREATE DATABASE ...
TEMPLATE."""

from __future__ import annotations

import difflib
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from lxml import etree
from ncclient import manager
from ruamel.yaml import YAML
from sqlalchemy import text

from vnet.controller.db import make_engine
from vnet.lab.access import agent_endpoint
from vnet.tools import postgres
from vnet.tools.wait import WaitTimeout, wait_until

SRV6 = "{urn:vnet:yang:vnet-router}"


class SharedLab(Protocol):
    name: str
    hosts: Sequence[str]

    def connect(self, host: str) -> manager.Manager: ...


class RunningGuard:
    """What a shared lab's agents run, read over sessions of its own that it closes at once
    (a session held open would be one more for the tests that count the agents' sessions)."""

    def __init__(self, lab: SharedLab):
        self.lab = lab
        self.pristine = self.running()  # as the session built it

    def running(self) -> dict[str, str]:
        out = {}
        for host in self.lab.hosts:
            with self.lab.connect(host) as session:
                out[host] = comparable(session.get_config("running").data_xml)
        return out

    def check(self, before: dict[str, str], what: str) -> None:
        """Passes if the lab is as `before` or as the session built it: a test that finds
        another's leftovers (that test failed) may clean them, as a controller's
        reconciliation does, but must not add its own."""
        after = self.running()
        changed = [host for host in before if before[host] != after[host]]
        if changed and after != self.pristine:
            host = changed[0]
            diff = difflib.unified_diff(
                before[host].splitlines(), after[host].splitlines(), "borrowed", "returned", n=2
            )
            raise AssertionError(
                f"{what} left the shared lab {self.lab.name} changed on {', '.join(changed)} "
                f"(each test removes what it made); {host}:\n" + "\n".join(list(diff)[:80])
            )


class FileLab:
    """A lab brought up from a file (`vnet lab up`), seen by the guard: its hosts' agents."""

    def __init__(self, name: str, path: Path):
        self.name = name
        self.hosts = [h["name"] for h in YAML(typ="safe").load(path.read_text())["hosts"]]

    def connect(self, host: str) -> manager.Manager:
        from .agent_support import netconf_connect  # it imports conftest, which imports us

        ep = agent_endpoint(self.name, host)
        return netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password)


class SpendableLab:
    """A lab from a file, brought up when first borrowed; a test that cannot undo what it made
    spends it (down), and the next borrower gets a new one."""

    def __init__(self, up: Callable[[], tuple[str, Path]], down: Callable[[str], None]):
        self.up, self.down = up, down
        self.current: tuple[str, Path] | None = None
        self.guard: RunningGuard | None = None

    def borrow(self) -> tuple[str, Path]:
        """(name, file) of the lab up now."""
        if self.current is None:
            self.current = self.up()
            self.guard = RunningGuard(FileLab(*self.current))
        return self.current

    def spend(self) -> None:
        if self.current is not None:
            name, self.current, self.guard = self.current[0], None, None
            self.down(name)


def using(database: str | None) -> Callable[[str], str]:
    """An edit of examples/controller.yaml: its controller keeps its state in `database`
    (None: SQLite in its state directory, the default)."""

    def edit(text: str) -> str:
        if database is None:
            return text
        return text.replace("controller:\n", f"controller:\n  database: '{database}'\n")

    return edit


def comparable(running: str) -> str:
    """The running configuration without SRv6 locators, indented (a diff shows lines)."""
    tree = etree.fromstring(running.encode())
    for locator in tree.findall(f"{SRV6}srv6/{SRV6}locator"):
        srv6 = locator.getparent()
        srv6.remove(locator)
        if len(srv6) == 0:
            tree.remove(srv6)
    return etree.tostring(tree, pretty_print=True).decode()


def client_databases(server: postgres.Postgres) -> set[str]:
    """The databases some client other than this query is connected to."""
    engine = make_engine(server.url())
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT DISTINCT datname FROM pg_stat_activity WHERE backend_type = "
                    "'client backend' AND pid <> pg_backend_pid() AND datname IS NOT NULL"
                )
            )
            return {str(name) for (name,) in rows}
    finally:
        engine.dispose()


# seconds a closed client's server process may take to leave pg_stat_activity: it exits
# after the client hung up, late on a loaded machine, and is no leak
CLOSING = 10.0


def check_connections(
    server: postgres.Postgres, before: set[str], what: str, closing: float = CLOSING
) -> None:
    def still_connected() -> set[str]:
        return client_databases(server) - before

    try:
        wait_until(lambda: not still_connected(), closing, what, interval=0.1)
        return
    except WaitTimeout:
        leaked = still_connected()
    assert not leaked, (
        f"{what} left clients connected to PostgreSQL databases {sorted(leaked)} "
        "(dispose every engine it made, stop every controller it started)"
    )


def unique_database(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


class TemplateDatabases:
    """The controller's database for a test on a shared lab, copied from a template that was
    migrated and loaded with the lab's inventory once (`prepare` does that to a URL)."""

    def __init__(
        self,
        prepare: Callable[[str], None],
        directory: Path,
        server: Callable[[], postgres.Postgres],
    ):
        self.prepare, self.directory, self.server = prepare, directory, server
        self._sqlite: Path | None = None
        self._template: str | None = None

    def sqlite(self, directory: Path) -> str:
        if self._sqlite is None:
            template = self.directory / "template.db"
            self.prepare(f"sqlite:///{template}")
            self._sqlite = template
        copy = directory / "controller.db"
        shutil.copyfile(self._sqlite, copy)
        return f"sqlite:///{copy}"

    def postgresql(self, prefix: str = "ctl") -> str:
        server = self.server()
        if self._template is None:
            name = unique_database("template")
            self.prepare(server.create_database(name))  # disposes its engine: no client left
            self._template = name
        return server.create_database(unique_database(prefix), template=self._template)

    def make(self, kind: str, directory: Path, prefix: str = "ctl") -> str:
        """A fresh copy of the template: `kind` is "sqlite" or "postgresql"."""
        return self.sqlite(directory) if kind == "sqlite" else self.postgresql(prefix)
