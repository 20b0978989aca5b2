"""A burst of requests that needs rearrangements, through the controller's HTTP API: every
answer is 201 or a 409/422-class refusal (never 5xx), no link direction is over-admitted,
and once everything is released no reservation row is held and no agent holds a piece.

Two labs: the service tests' (one network per link; `vnet controller run` as a process of
the test's, SQLite and PostgreSQL), and examples/controller.yaml brought up with `vnet lab
up` and its own controller (one core network: a mover's old and new path leave its ingress
VR by the same interface; there every move failed and the burst got 500s).

    h1 ---- 100 Mbit/s ---- h3      8 "movers" (10 Mbit/s each, the controller's choice of
      \\                    /        path) fill h1-h3; then 100 requests at once, each pinned
       1 Gbit/s    1 Gbit/s         to h1-h3: each fits only if a mover goes round by h2, and
          \\          /              they all choose the same movers at the same time
             h2
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vnet.controller.db import Reservation, default_url, make_engine
from vnet.lab.access import controller_access
from vnet.model.controller_config import ControllerConfig
from vnet.tools.processes import stop_child

from .conftest import Labs, require_tools, vnet
from .controller_service_support import HOSTS, Lab
from .test_controller_api_process import Answer, Controller, curl, start, write_config

MOVERS, BURST = 8, 100  # 8 x 11.3 Mbit/s on the wire fill the 99 usable of h1-h3
CONNECTIONS = "/tenants/acme/connections"


@pytest.fixture
def lab(service_lab: Lab) -> Lab:
    """The session's three-host triangle (conftest.py): the burst releases all it made."""
    require_tools("curl")
    return service_lab


@pytest.fixture
def controller(
    database_kind: str, request: pytest.FixtureRequest, lab: Lab, tmp_path: Path
) -> Iterator[Controller]:
    database = None
    if database_kind == "postgresql":
        database = request.getfixturevalue("pg").create_database(f"burst_{tmp_path.name[-10:]}")
    c = start(write_config(lab, tmp_path, database), tmp_path / "controller.log")
    yield c
    stop_child(c.process)


@pytest.fixture(scope="module")
def example_lab(module_labs: Labs) -> Lab:
    require_tools("curl")
    name, path = module_labs.file("controller.yaml")
    vnet("lab", "up", str(path), timeout=180)
    return Lab(name, path, module_labs.tmp)


@dataclass(frozen=True)
class Api:
    """One controller's API (reached from `netns` if given) and its database."""

    url: str
    token: str
    netns: str | None
    config: ControllerConfig
    certificate: str  # its HTTPS certificate, which curl verifies

    def call(self, method: str, path: str, *args: str) -> Answer:
        return curl(self, method, path, self.token, *args, netns=self.netns)  # type: ignore[arg-type]

    def post(self, path: str, body: object) -> Answer:
        kind = "Content-Type: application/json"
        return self.call("POST", path, "-H", kind, "-d", json.dumps(body))

    def ask(self, name: str, port: int, **more: object) -> Answer:
        body = {"name": name, "a": "pc1", "b": "pc3", "protocol": "udp", "dst_port": port}
        return self.post(CONNECTIONS, {**body, "bandwidth": "10mbit", **more})

    def over_admitted(self) -> list[str]:
        """Every link direction holding more than its usable share (free below zero)."""
        links = self.call("GET", "/links").json()
        return [
            f"{link['name']} {d['direction']}: {d}"  # type: ignore[index]
            for link in links  # type: ignore[attr-defined]
            for d in link["directions"]
            if d["free_bps"] < 0
        ]

    def reservation_rows(self) -> tuple[int, int]:
        """(rows held, rows in all) of the controller's ledger, read from its database."""
        engine = make_engine(self.config.database or default_url(self.config.state_dir))
        try:
            with Session(engine) as session:
                held = session.scalar(select(func.count()).where(Reservation.released.is_(None)))
                rows = session.scalar(select(func.count()).select_from(Reservation))
                return int(held or 0), int(rows or 0)
        finally:
            engine.dispose()


def of_process(c: Controller) -> Api:
    token = c.config.provider_token_path.read_text().strip()
    return Api(c.url, token, None, c.config, c.certificate)


def of_lab(name: str) -> Api:
    access = controller_access(name)
    config = ControllerConfig.model_validate_json(Path(access.config).read_text())
    token = Path(access.token_file).read_text().strip()
    assert access.certificate is not None  # a lab's controller serves HTTPS
    return Api(access.url, token, access.namespace, config, access.certificate)


def burst(api: Api, lab: Lab, log: Path | None = None) -> None:
    """MOVERS fill h1-h3, then BURST pinned requests at once; every check of the module."""
    for i in range(MOVERS):
        made = api.ask(f"m{i}", 7000 + i)
        assert made.status == 201, made.body
        assert made.json()["connection"]["path"] == ["h1", "h3"], made.body  # type: ignore[index]

    def pinned(i: int) -> Answer:
        return api.ask(f"p{i}", 8000 + i, path=["h1", "h3"])

    with ThreadPoolExecutor(BURST) as pool:
        answers = list(pool.map(pinned, range(BURST)))
    statuses = Counter(a.status for a in answers)
    odd = [(a.status, a.body[:300]) for a in answers if a.status not in (201, 409, 422)]
    assert not odd, f"{statuses}: {odd[:5]}\n{log.read_text()[-3000:] if log else ''}"
    admitted = [a.json()["connection"]["name"] for a in answers if a.status == 201]  # type: ignore[index]
    refused = [a.json() for a in answers if a.status != 201]
    assert 1 <= len(admitted) <= MOVERS, statuses
    assert all(r["code"] == "no-capacity" for r in refused), refused[:3]  # type: ignore[index]
    assert not api.over_admitted()
    live = api.call("GET", "/connections?tenant=acme").json()
    paths = {v["name"]: v["path"] for v in live}  # type: ignore[attr-defined, index]
    assert sorted(paths) == sorted([f"m{i}" for i in range(MOVERS)] + admitted), paths
    around = [n for n, p in paths.items() if p == ["h1", "h2", "h3"]]
    assert len(around) >= len(admitted), paths  # each admitted one took a mover's room
    # the agents hold exactly the live connections' pieces: ingress h1, transit h2
    assert len(lab.connection_names("h1")) == len(paths)
    assert len(lab.connection_names("h2")) == len(around)

    for name in paths:
        assert api.call("DELETE", f"{CONNECTIONS}/{name}").status == 200
    assert lab.controller_pieces() == {host: set() for host in HOSTS}
    held, rows = api.reservation_rows()
    assert held == 0, f"{held} reservation rows still held after every release"
    assert rows > 0  # the history is kept (released rows), only failed attempts leave none


@pytest.mark.both_databases
def test_a_burst_that_needs_moves_answers_only_201_or_4xx(lab: Lab, controller: Controller) -> None:
    burst(of_process(controller), lab, controller.log)


def test_a_burst_on_the_example_lab_with_one_core_interface(example_lab: Lab) -> None:
    burst(of_lab(example_lab.name), example_lab)
