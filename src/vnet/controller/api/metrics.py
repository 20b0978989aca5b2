"""GET /metrics: the controller in the Prometheus text format (or OpenMetrics, if asked for).

Events are counted where they happen, in instruments each app owns (`ApiMetrics`, in
`app.state.metrics`): every request by route template, method and status, its duration split
into the phases of its Server-Timing header (db, path, devices, api) and in total, and every
connection request that reached admission, admitted or rejected with its error code. What the
service holds is read at scrape time, through the same calls the API answers with: per link
direction what connections reserve, what is free and the measured rate (GET /links), each
agent's liveness (GET /hosts), each link's and host's operational state (failure detection)
and what recovery did at start.

Label values are bounded: route templates (never the path a client sent; "unmatched" for the
rest), HTTP methods and statuses, error codes (fixed in the code), links and hosts of the
inventory, the phases. Tenants and connection names are not labels.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector

from vnet.controller.principal import Principal
from vnet.controller.service import ControllerService
from vnet.model.controller_api import HostView, LinkView
from vnet.tools.metrics import LATENCY_BUCKETS, exposition_of

METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
PROVIDER = Principal("provider", None)


class ApiMetrics:
    """The instruments of one app: requests, their phases, admissions."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)  # the controller's CPU, memory, open files
        self.requests = Counter(
            "vnet_controller_requests",
            "API requests by route template, method and HTTP status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.seconds = Histogram(
            "vnet_controller_request_duration_seconds",
            "Request duration: phase total, and the Server-Timing phases (db, path, devices, "
            "api) of the requests that change connections",
            ["route", "method", "phase"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.admissions = Counter(
            "vnet_controller_admissions",
            "Connection requests (create, modify) that reached the service: admitted, or "
            "rejected with the error code of the answer",
            ["operation", "outcome", "reason"],
            registry=self.registry,
        )

    def admitted(self, operation: str) -> None:
        self.admissions.labels(operation, "admitted", "").inc()

    def rejected(self, operation: str, code: str) -> None:
        self.admissions.labels(operation, "rejected", code).inc()

    def observe(self, scope: dict[str, Any], status: int, seconds: float) -> None:
        route = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        method = scope.get("method", "GET")
        method = method if method in METHODS else "other"
        self.requests.labels(template, method, str(status)).inc()
        self.seconds.labels(template, method, "total").observe(seconds)
        for phase, spent in scope.get("vnet.phases", {}).items():
            self.seconds.labels(template, method, phase).observe(spent)


class Measured:
    """Pure ASGI middleware (outermost): counts and times every HTTP request once it is
    answered, whatever answered it (a route, an error handler, the 500 of `Unexpected`)."""

    def __init__(self, app: Any, metrics: ApiMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.observe(scope, status, time.perf_counter() - started)


class ServiceCollector:
    """What the service holds, read for one scrape (the answers of /links and /hosts)."""

    def __init__(self, links: list[LinkView], hosts: list[HostView], service: Any):
        self.links, self.hosts, self.service = links, hosts, service

    def collect(self) -> Iterator[Metric]:
        yield from self._links()
        yield self._liveness()
        yield from self._states()
        yield from self._recovery()

    def _states(self) -> Iterator[Metric]:
        """Failure detection's word: 1 up, 0 down (a link) or unreachable (a host); absent
        while unknown."""
        links = GaugeMetricFamily(
            "vnet_controller_link_up",
            "1 if the link's ends say it is up, 0 if either says it is down (absent: unknown)",
            labels=["link"],
        )
        for link in self.links:
            if link.status.state != "unknown":
                links.add_metric([link.name], int(link.status.state == "up"))
        hosts = GaugeMetricFamily(
            "vnet_controller_host_up",
            "1 while the host's agent answers the controller's subscription, 0 when it is "
            "unreachable (absent: unknown)",
            labels=["host"],
        )
        for host in self.hosts:
            if host.status.state != "unknown":
                hosts.add_metric([host.name], int(host.status.state == "up"))
        yield from (links, hosts)

    def _links(self) -> Iterator[Metric]:
        labels = ["link", "source", "target"]
        capacity = GaugeMetricFamily(
            "vnet_controller_link_capacity_bps",
            "What connections may hold in all, per link direction",
            labels=labels,
        )
        reserved = GaugeMetricFamily(
            "vnet_controller_link_reserved_bps", "Held by connections", labels=labels
        )
        free = GaugeMetricFamily(
            "vnet_controller_link_free_bps", "What admission may still hand out", labels=labels
        )
        used = GaugeMetricFamily(
            "vnet_controller_link_utilisation_bps",
            "Rate measured from the agents' class counters (absent until measured)",
            labels=labels,
        )
        for link in self.links:
            for d in link.directions:
                src, _, dst = d.direction.partition(" -> ")
                key = [link.name, src, dst]
                capacity.add_metric(key, link.capacity_bps)
                reserved.add_metric(key, d.reserved_bps)
                free.add_metric(key, d.free_bps)
                if d.utilisation_bps is not None:
                    used.add_metric(key, d.utilisation_bps)
        yield from (capacity, reserved, free, used)

    def _liveness(self) -> Metric:
        up = GaugeMetricFamily(
            "vnet_controller_agent_up",
            "1 if the host's agent answered the controller's last check, 0 if not "
            "(absent before the first check)",
            labels=["host"],
        )
        for host in self.hosts:
            if host.reachable is not None:
                up.add_metric([host.name], int(host.reachable))
        return up

    def _recovery(self) -> Iterator[Metric]:
        settled = GaugeMetricFamily(
            "vnet_controller_recovered_requests",
            "Requests a previous run left in flight, settled at this controller's start",
            labels=["operation", "outcome"],
        )
        tally = Tally((s.operation, s.outcome) for s in getattr(self.service, "recovered", []))
        for (operation, outcome), count in sorted(tally.items()):
            settled.add_metric([operation, outcome], count)
        restored = GaugeMetricFamily(
            "vnet_controller_restored_routers",
            "VRs put back on a host at this controller's start",
            labels=["host"],
        )
        for host, names in sorted(getattr(self.service, "restored", {}).items()):
            restored.add_metric([host], len(names))
        yield from (settled, restored)


async def exposition(
    metrics: ApiMetrics, service: ControllerService, accept: str | None
) -> tuple[bytes, str]:
    """The body and its content type for one scrape."""
    links = await service.links(PROVIDER)
    hosts = await service.hosts(PROVIDER)
    return exposition_of(accept, metrics.registry, ServiceCollector(links, hosts, service))
