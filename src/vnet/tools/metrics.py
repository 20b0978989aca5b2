"""Prometheus exposition shared by the agent's and the controller's /metrics: several
collectors (a process's event instruments, a snapshot of its state) answered as one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, exposition
from prometheus_client.core import Metric
from prometheus_client.openmetrics import exposition as openmetrics

OPENMETRICS = "application/openmetrics-text"


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
