"""The controller's side: the real `vnet controller run` on simulated hosts, M connections.

The process is the one `vnet bench controller --southbound simulated` starts
(sim_controller.py: SQLite, a generated leaf-spine substrate of HOSTS hosts, each
host's agent simulated in the controller, every RPC answered after RPC_LATENCY_S).
M connections are created through its API (schedule.make_round, CONCURRENCY in
flight) and must all be established; then its `GET /metrics` is scraped with the
provider's token over HTTPS, its certificate pinned.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from vnet.bench.contract import BenchError
from vnet.bench.controller.driver import drive
from vnet.bench.controller.schedule import make_round
from vnet.bench.controller.sim_controller import simulated_controller
from vnet.bench.controller.substrate import leaf_spine
from vnet.bench.metrics.scrape import Target
from vnet.bench.results import BenchResult
from vnet.client.controller import tls_verify

HOSTS, QUICK_HOSTS = 100, 12
RPC_LATENCY_S = 0.001
CONCURRENCY = 10
BANDWIDTH_BPS = 1_000_000
SEED = 27
METRICS = "controller /metrics"


@contextmanager
def controller_targets(
    result: BenchResult, hosts: int, connections: int, step: Callable[[str], None]
) -> Iterator[list[Target]]:
    """The controller with `connections` established connections, and its /metrics."""
    step("starting the controller")
    with simulated_controller(leaf_spine(hosts), "sqlite", RPC_LATENCY_S) as run:
        with run.access.client() as client:
            endhosts = client.endhosts()
        creates = make_round(
            endhosts, "m", connections, 0, BANDWIDTH_BPS, BANDWIDTH_BPS, random.Random(SEED)
        ).creates
        step(f"creating {connections} connections")
        start = time.perf_counter()
        answers = drive(run.access, creates, CONCURRENCY)
        seconds = time.perf_counter() - start
        with run.access.client() as client:
            live = sum(1 for c in client.connections() if c.status == "established")
        if live != connections:
            failed = [(a.name, a.status, a.error) for a in answers if a.split is None][:3]
            raise BenchError(f"controller: {live} of {connections} established; e.g. {failed}")
        result.note(
            f"controller: {connections} connections established through its API on {hosts} "
            f"simulated hosts ({CONCURRENCY} in flight) in {seconds:.1f} s"
        )
        headers = {"Authorization": f"Bearer {run.access.token}"}
        with httpx.Client(
            base_url=run.access.url, verify=tls_verify(run.access.verify), timeout=120.0
        ) as http:
            yield [Target(METRICS, http, "/metrics", run.pid, None, headers)]
