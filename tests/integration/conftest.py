"""Fixtures for tests on real namespaces. Every lab a test makes is registered
and torn down by name; nothing else on the machine is touched."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vnet.lab import lab as labmod
from vnet.substrate import nsfs
from vnet.tools import postgres

from .world_support import (
    RunningGuard,
    SpendableLab,
    TemplateDatabases,
    check_connections,
    client_databases,
    unique_database,
    using,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
VNET = str(Path(sys.executable).parent / "vnet")
# `vnet` processes the tests start take their fault hooks from here (see faulty_vnet.py)
HOOKS = str(Path(__file__).resolve().parent / "hooks")
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HOOKS, os.environ.get("PYTHONPATH")) if p)


# modules that take minutes even on a quiet machine (many labs of their own, long generation)
SLOW = {
    "test_transactions",
    "test_openapi_conformance",
    "test_perfbench",
    "test_hypervisor",
    "test_lab_controller",
    "test_lab_controller_placement",
    "test_bench_failover_reroute",  # a controller lab, a host powered off and on again
}


# tests whose verdict is a measured rate, loss or time bound: they run alone (`make test`
# runs them after the rest, without parallel workers), on a machine as quiet as it gets
SERIAL = {
    "test_lab_controller_moves",  # no datagram lost while a live UDP flow is moved
    "test_bench_dataplane",  # udp throughput above 90 Mbit/s, forwarding above 1000 pps
    "test_perfbench",  # latencies and rates of the native tools
    "test_hypervisor::test_flooding_tenant_is_limited",  # echo replies per second, latency
    "test_hypervisor::test_flooding_packet_ins_are_limited_per_slice",  # packet-ins per second
    "test_two_tenants::test_tcp_transfer_across_hosts",
    "test_qos::test_isolation_keeps_b_at_its_guarantee_while_a_floods",
    "test_qos::test_connection_rate_within_3_percent",  # failed at 110 % beside 3 workers
    "test_qos::test_network_rate_within_3_percent",
    "test_qos::test_path_switch_at_low_rate_loses_nothing",
    "test_managed_connections::test_iperf3_through_the_connection_within_3_percent",
    "test_controller_service::test_a_connection_carries_its_rate_and_only_its_5_tuple",
    # no datagram lost in a planned move: lost 66 of 8113 beside three workers at load 18
    "test_controller_service::test_rearrangement_moves_a_connection_without_losing_a_datagram",
    "test_lab_controller::test_a_requested_connection_shapes_its_flow_and_only_it",
    "test_deployment::test_a_deployment_without_the_lab",
    "test_routing::test_loss_on_a_link_is_measured_within_tolerance",
    "test_transactions::test_em_testbed_reaches_end_to_end_in_both_tenants",
    "test_netconf_large_message::test_other_sessions_are_served_during_a_50_mb_edit",
    "test_bench_failover",  # an outage of OSPF with BFD shorter than the link was down
    # detection within 2 s (2.59 s beside three workers at load 13)
    "test_lab_controller_failures::test_a_host_powered_off_is_unreachable_within_2_s_and_up_after",
    "test_lab_controller_failures::test_a_hung_agent_is_unreachable_within_the_probes_bound_and_its_links_stay_up",
    # iperf3 at a rerouted connection's rate (its shaper within 5 %)
    "test_lab_controller_ospf::test_a_connection_on_a_cut_link_carries_iperf3_at_its_rate_on_the_surviving_path",
    "test_controller_agent_timeouts::test_a_stopped_agent_is_given_up_within_the_timeout_and_others_answer",
    "test_bench_resources",  # a sender limited to 0.3 core measured at most 0.33
    "test_bench_failover_reroute",  # the controller's reroute, timed
    "test_cli_end_to_end::test_demo_keep_opens_the_console_on_loopback",  # a connection's rate
    "test_cli_end_to_end::test_make_demo_on_a_fresh_clone_installs_only_what_it_runs",  # too
    "test_cli_end_to_end::test_an_interrupted_demo_removes_what_it_made",  # a signal's moment
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers for choosing what to run (`pytest -m "not slow and not bench"`): every test
    here needs root (agents), and each is marked by what it brings up."""
    skip = pytest.mark.skip(reason="needs root: creates network namespaces")
    for item in items:
        if "integration" not in str(item.fspath):
            continue
        for marker in markers_of(item):
            item.add_marker(marker)
        if os.geteuid() != 0:
            item.add_marker(skip)


def markers_of(item: pytest.Item) -> list[str]:
    module = Path(str(item.fspath)).stem
    callspec = getattr(item, "callspec", None)
    params = [str(value) for value in callspec.params.values()] if callspec else []
    fixtures = getattr(item, "fixturenames", ())
    found = ["agents"]
    if "postgres" in module or "pg" in fixtures or "postgresql" in params:
        found.append("postgres")
    if "browser" in module:
        found.append("browser")
    if module.startswith(("test_bench_", "test_perfbench")):
        found.append("bench")
    if module in SLOW:
        found.append("slow")
    if module in SERIAL or f"{module}::{getattr(item, 'originalname', item.name)}" in SERIAL:
        found.append("serial")
    return found


def require_tools(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/bootstrap.sh installs them)")


def unique_lab() -> str:
    return "t" + secrets.token_hex(3)


def lab_namespaces(name: str) -> list[str]:
    return nsfs.list_names(f"vnet-{name}-")


class Labs:
    """Makes labs from example files under unique names and removes exactly those."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.names: list[str] = []

    def file(self, example: str, edit: Callable[[str], str] = lambda s: s) -> tuple[str, Path]:
        text = (EXAMPLES / example).read_text()
        original = next(line for line in text.splitlines() if line.startswith("name: "))
        name = unique_lab()
        path = self.tmp / f"{name}.yaml"
        path.write_text(edit(text.replace(original, f"name: {name}")))
        self.names.append(name)
        return name, path

    def rewrite(self, path: Path, edit: Callable[[str], str]) -> None:
        path.write_text(edit(path.read_text()))

    def cleanup(self) -> None:
        for name in self.names:
            labmod.down(name)
            leaked = lab_namespaces(name)
            assert not leaked, f"lab {name} left namespaces behind: {leaked}"


@pytest.fixture
def labs(tmp_path: Path) -> Iterator[Labs]:
    made = Labs(tmp_path)
    yield made
    made.cleanup()


@pytest.fixture(scope="module")
def module_labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Labs]:
    made = Labs(tmp_path_factory.mktemp("labs"))
    yield made
    made.cleanup()


def vnet(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run the real `vnet` command line, as a user would."""
    done = subprocess.run(
        [VNET, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"vnet {' '.join(args)} exited {done.returncode}\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    return done


# -- worlds built once per session, borrowed by tests (see world_support.py) -------------------
@pytest.fixture(scope="session")
def session_labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Labs]:
    made = Labs(tmp_path_factory.mktemp("session-labs"))
    yield made
    made.cleanup()


@pytest.fixture(scope="session")
def pg() -> Iterator[postgres.Postgres]:
    """One PostgreSQL server for the session; each test makes its own databases in it."""
    with postgres.running() as server:
        yield server


@pytest.fixture(scope="session")
def service_lab(session_labs: Labs) -> Iterator[Any]:
    """The controller's three-host triangle (controller_service_support.py), agents up."""
    from .controller_service_support import start_lab

    yield from _guarded(start_lab(session_labs))


@pytest.fixture(scope="session")
def agents_lab(session_labs: Labs) -> Iterator[Any]:
    """The controller agents layer's three hosts in a line (controller_agents_support.py)."""
    from .controller_agents_support import start_lab

    yield from _guarded(start_lab(session_labs))


DATABASES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A controller's test runs on SQLite, and on PostgreSQL too where the database is what
    it tests (marked `both_databases`: locking, concurrency, rollback, recovery). A test
    takes the kind as `database_kind`, or a lab's database maker as `controller_databases`
    (of session scope: the tests on one database share its lab)."""
    both = metafunc.definition.get_closest_marker("both_databases") is not None
    kinds = DATABASES if both else DATABASES[:1]
    if "database_kind" in metafunc.fixturenames:
        metafunc.parametrize("database_kind", kinds)
    if "controller_databases" in metafunc.fixturenames:
        metafunc.parametrize("controller_databases", kinds, indirect=True, scope="session")


@pytest.fixture(scope="session")
def controller_databases(request: pytest.FixtureRequest) -> Callable[[str], str | None]:
    """A new database's URL for a lab's controller (None: SQLite, the default), on the
    database the test is parametrized with (pytest groups the tests by it)."""
    if request.param == "sqlite":
        return lambda _name: None
    server: postgres.Postgres = request.getfixturevalue("pg")  # outlives the labs using it
    return lambda name: server.create_database(unique_database(name))


@pytest.fixture(scope="session")
def controller_example_labs(
    controller_databases: Callable[[str], str | None], session_labs: Labs
) -> Iterator[SpendableLab]:
    """examples/controller.yaml up (`vnet lab up`) with its own controller, on each database
    in turn; taken down when the tests move on to the next database, or when a test that
    cannot undo what it made (no API removes a VR) spends it."""

    def up() -> tuple[str, Path]:
        require_tools("curl")
        name, path = session_labs.file("controller.yaml", using(controller_databases("labctl")))
        vnet("lab", "up", str(path), timeout=180)
        return name, path

    def down(name: str) -> None:
        session_labs.names.remove(name)
        labmod.down(name)
        assert not lab_namespaces(name), f"lab {name} left namespaces behind"

    labs = SpendableLab(up, down)
    yield labs
    labs.spend()


def _guarded(started: Iterator[Any]) -> Iterator[Any]:
    lab = next(started)
    lab.guard = RunningGuard(lab)  # each borrowing test is checked (worlds_left_as_found)
    yield lab


@pytest.fixture(scope="session")
def service_databases(
    service_lab: Any, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> TemplateDatabases:
    """The controller's databases on `service_lab`, each a copy of a migrated template."""
    from .controller_service_support import prepare_database

    return TemplateDatabases(
        lambda url: prepare_database(service_lab, url),
        tmp_path_factory.mktemp("templates"),
        lambda: request.getfixturevalue("pg"),
    )


@pytest.fixture(autouse=True)
def worlds_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that leaves a shared world other than it found it (runs around the test's
    other fixtures: their teardown is part of the test's cleaning)."""
    checks: list[Callable[[], None]] = []
    what = f"test {request.node.name}"
    for name in ("service_lab", "agents_lab"):
        if name in request.fixturenames:
            guard = request.getfixturevalue(name).guard
            before = guard.running()
            checks.append(lambda guard=guard, before=before: guard.check(before, what))
    if "controller_example_labs" in request.fixturenames:
        labs = request.getfixturevalue("controller_example_labs")
        if labs.guard is not None:  # a lab is up: unless the test spends it, it stays as is
            guard, before = labs.guard, labs.guard.running()
            checks.append(lambda: labs.guard is not guard or guard.check(before, what))
    if "pg" in request.fixturenames:
        server = request.getfixturevalue("pg")
        connected = client_databases(server)
        checks.append(lambda: check_connections(server, connected, what))
    yield
    for check in checks:
        check()
