"""GET /metrics: the agent in the Prometheus text format (or OpenMetrics, if asked for).

Read at scrape time from what the agent already holds: the same operational state a
RESTCONF GET of the datastore answers (the VRs' oper-state and interface counters, the
guarantees' class and connection counters), cut to what the scraping user may read
(NACM), plus the events vnet.agent.telemetry counted (commit durations, drift repairs,
NACM denials, logins).

Every label value is bounded by the configuration, never taken from a request: a VR and
its interfaces (at most one VR per index, 1..65535), an underlay interface and the virtual
network of its class, a connection id (1..4095, the YANG range of a piece id).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from vnet.agent.telemetry import REGISTRY
from vnet.model.yang import host as codec
from vnet.model.yang.guarantees import connections_of, underlay_of
from vnet.tools.metrics import exposition_of

ROUTER_STATES = ("running", "stopped", "failed")
# interface statistics of the YANG model -> (metric, direction)
_INTERFACE = {
    "in-octets": ("bytes", "in"),
    "out-octets": ("bytes", "out"),
    "in-packets": ("packets", "in"),
    "out-packets": ("packets", "out"),
    "in-errors": ("errors", "in"),
    "out-errors": ("errors", "out"),
    "in-discards": ("discards", "in"),
    "out-discards": ("discards", "out"),
}
_SHAPED = ("bytes", "packets", "drops")


class StateCollector:
    """The metrics of one state tree (a snapshot taken for this scrape)."""

    def __init__(self, tree: dict[str, Any]):
        self.tree = tree

    def collect(self) -> Iterator[Metric]:
        routers = codec.routers_of(self.tree)
        yield self._routers_by_state(routers)
        yield from self._interfaces(routers)
        yield from self._classes()
        yield from self._connections()

    @staticmethod
    def _routers_by_state(routers: list[dict[str, Any]]) -> Metric:
        family = GaugeMetricFamily(
            "vnet_agent_routers", "Configured VRs by operational state", labels=["state"]
        )
        states = Counter(r.get("oper-state", "failed") for r in routers)
        for state in ROUTER_STATES:
            family.add_metric([state], states.get(state, 0))
        return family

    @staticmethod
    def _interfaces(routers: list[dict[str, Any]]) -> Iterator[Metric]:
        families = {
            kind: CounterMetricFamily(
                f"vnet_agent_interface_{kind}",
                f"{kind.capitalize()} of a VR interface (in: received by the VR)",
                labels=["router", "interface", "direction"],
            )
            for kind in ("bytes", "packets", "errors", "discards")
        }
        for r in routers:
            for itf in r.get("interface", []):
                for leaf, value in itf.get("statistics", {}).items():
                    if leaf in _INTERFACE:
                        kind, direction = _INTERFACE[leaf]
                        families[kind].add_metric([r["name"], itf["name"], direction], int(value))
        yield from families.values()

    def _classes(self) -> Iterator[Metric]:
        families = _shaped_families(
            "vnet_agent_class", "of an underlay HTB class", ["interface", "class", "network"]
        )
        for itf in underlay_of(self.tree):
            name = itf["name"]
            for key, kind in (
                ("reserved-statistics", "reserved"),
                ("best-effort-statistics", "best-effort"),
            ):
                _add(families, [name, kind, ""], itf.get(key))
            for cls in itf.get("class", []):
                _add(families, [name, "network", cls["network"]], cls.get("statistics"))
        yield from families.values()

    def _connections(self) -> Iterator[Metric]:
        families = _shaped_families(
            "vnet_agent_connection",
            "through a connection's shaper at its ingress VR",
            ["connection", "router", "network"],
        )
        for conn in connections_of(self.tree):
            for ing in conn.get("ingress", []):
                labels = [str(conn["id"]), ing["router"], ing["network"]]
                _add(families, labels, ing.get("statistics"))
        yield from families.values()


def _shaped_families(prefix: str, what: str, labels: list[str]) -> dict[str, CounterMetricFamily]:
    return {
        kind: CounterMetricFamily(f"{prefix}_{kind}", f"{kind.capitalize()} {what}", labels=labels)
        for kind in _SHAPED
    }


def _add(families: dict[str, CounterMetricFamily], labels: list[str], stats: Any) -> None:
    if stats:
        for kind in _SHAPED:
            families[kind].add_metric(labels, int(stats.get(kind, 0)))


def exposition(tree: dict[str, Any], accept: str | None) -> tuple[bytes, str]:
    """The body and its content type for one scrape of `tree`."""
    return exposition_of(accept, REGISTRY, StateCollector(tree))
