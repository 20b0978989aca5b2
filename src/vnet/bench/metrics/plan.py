"""What one `vnet bench metrics` run measures."""

from __future__ import annotations

from dataclasses import dataclass

from vnet.bench.options import parse_kinds
from vnet.bench.progress import BenchOptions

WARMUPS = 2  # scrapes per endpoint before the counted ones (first use of every code path)
PARTS = ("agent", "controller")
VRS, QUICK_VRS = 1000, 20
CONNECTIONS, QUICK_CONNECTIONS = 1000, 20


@dataclass(frozen=True)
class Plan:
    vrs: int
    connections: int
    hosts: int  # the controller's simulated hosts
    parts: tuple[str, ...]


def make_plan(
    common: BenchOptions,
    vrs: int | None = None,
    connections: int | None = None,
    parts: str = "agent,controller",
) -> Plan:
    """The sizes asked for, or the defaults (the quick ones with --quick)."""
    from vnet.bench.metrics.controller_side import HOSTS, QUICK_HOSTS

    quick = common.quick
    return Plan(
        vrs=vrs or (QUICK_VRS if quick else VRS),
        connections=connections or (QUICK_CONNECTIONS if quick else CONNECTIONS),
        hosts=QUICK_HOSTS if quick else HOSTS,
        parts=tuple(parse_kinds(parts, PARTS, "--parts")),
    )
