"""Prometheus exposition shared by the agent's and the controller's /metrics: several
collectors (a process's event instruments, a snapshot of its state) answered as one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, exposition
from prometheus_client.core import Metric
from prometheus_client.openmetrics import exposition as openmetrics

OPENMETRICS = "application/openmetrics-text"
# seconds: a commit or an API read takes ~1 ms, a connection through three agents or a
# commit of hundreds of VRs seconds, on the machines vnet was measured on
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Combined(CollectorRegistry):
    """The metrics of every part, in order; built for one scrape."""

    def __init__(self, *parts: Any):
        super().__init__(auto_describe=False)
        self.parts = parts

    def collect(self) -> Iterator[Metric]:
        for part in self.parts:
            yield from part.collect()


def exposition_of(accept: str | None, *parts: Any) -> tuple[bytes, str]:
    """The body and its content type: OpenMetrics when the scraper asks for it, else the
    Prometheus text format 0.0.4."""
    scrape = Combined(*parts)
    if accept and OPENMETRICS in accept:
        return openmetrics.generate_latest(scrape), openmetrics.CONTENT_TYPE_LATEST
    return exposition.generate_latest(scrape), exposition.CONTENT_TYPE_LATEST
