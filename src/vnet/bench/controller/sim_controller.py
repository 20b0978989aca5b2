"""The system under test of `--southbound simulated`: `vnet controller run` on simulated hosts.

The generated substrate is written as the controller's inventory file, and its configuration
asks for simulated hosts (ControllerConfig.simulated: each host an agent's datastore in the
controller's memory, every RPC answered after the configured latency), so the process is the
production one, started through its public command, on loopback. The database is SQLite in
its state directory or a PostgreSQL server of the bench's own (harness.py's). Stopped by PID.
What the bench reads besides the API: the process's resident memory and the database's size.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from vnet.bench.controller.driver import Access
from vnet.bench.controller.harness import DATABASE_NAME
from vnet.client.controller import read_token
from vnet.controller.db import default_url
from vnet.lab.controller import wait_ready
from vnet.model.controller_config import ControllerConfig, SimulatedAgents
from vnet.model.topology import Topology
from vnet.tools import postgres, processes

READY_TIMEOUT = 600.0  # seconds: the inventory of 1000 hosts is loaded before it serves


@dataclass(frozen=True)
class Running:
    access: Access
    pid: int
    database: str  # the SQLAlchemy URL


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config_for(directory: Path, database: str | None, latency_s: float) -> ControllerConfig:
    return ControllerConfig(
        state_dir=directory / "state",
        database=database,
        port=free_port(),
        inventory=directory / "inventory.yaml",
        simulated=SimulatedAgents(rpc_latency=latency_s),
        log_file=directory / "controller.log",
    )


def _start(config: ControllerConfig, directory: Path) -> subprocess.Popen[bytes]:
    path = directory / "controller.yaml"
    path.write_text(config.model_dump_json(indent=1))
    with (directory / "controller.out").open("wb") as out:
        return processes.spawn(
            None,
            [*processes.python_module("vnet"), "controller", "run", "--config", str(path)],
            stdout=out,
            stderr=out,
            start_new_session=True,
        )


@contextlib.contextmanager
def _controller(topo: Topology, database: str | None, latency_s: float) -> Iterator[Running]:
    with tempfile.TemporaryDirectory(prefix="vnet-simctl-") as tmp:
        directory = Path(tmp)
        config = config_for(directory, database, latency_s)
        # JSON is YAML: the topology file reader takes it
        (directory / "inventory.yaml").write_text(topo.model_dump_json(exclude_none=True))
        child = _start(config, directory)
        try:
            wait_ready(child, config, READY_TIMEOUT)
            access = Access(
                url=f"https://127.0.0.1:{config.port}",
                token=read_token(config.provider_token_path),
                namespace=None,
                verify=str(config.certificate_path),
            )
            yield Running(access, child.pid, database or default_url(config.state_dir))
        finally:
            processes.stop_child(child, grace=30.0)


@contextlib.contextmanager
def simulated_controller(topo: Topology, database: str, latency_s: float) -> Iterator[Running]:
    """The controller on `database` ("sqlite" or "postgresql") over `topo`'s simulated hosts."""
    if database == "sqlite":
        with _controller(topo, None, latency_s) as found:
            yield found
        return
    with postgres.running() as server:
        url = server.create_database(DATABASE_NAME)
        with _controller(topo, url, latency_s) as found:
            yield found


def resident_bytes(pid: int) -> int:
    """The process's resident set (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"process {pid} has no VmRSS")


def database_bytes(url: str) -> int:
    """The database's size on disk: SQLite's file and its write-ahead log, PostgreSQL's
    pg_database_size."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = Path(str(parsed.database))
        wal = path.with_name(path.name + "-wal")
        return sum(p.stat().st_size for p in (path, wal) if p.exists())
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
            )
    finally:
        engine.dispose()


def ledger_drift(url: str) -> dict[tuple[str, bool], tuple[int, int]]:
    """The controller's ledger checked from outside: link directions whose running total is
    not the sum of their held reservation rows (vnet.controller.db.ledger.drift)."""
    from sqlalchemy.orm import Session

    from vnet.controller.db import make_engine
    from vnet.controller.db.ledger import drift

    engine = make_engine(url)
    try:
        with Session(engine) as session:
            return drift(session)
    finally:
        engine.dispose()
