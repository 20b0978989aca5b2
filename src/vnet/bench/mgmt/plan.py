"""What one `vnet bench mgmt` run measures: the plan, from the options."""

from __future__ import annotations

from dataclasses import dataclass

from vnet.bench.contract import OptionError
from vnet.bench.options import parse_list
from vnet.bench.progress import BenchOptions

INTERFACES = ("SNMPv2c", "SNMPv3", "NETCONF", "RESTCONF")
OPERATIONS = ("create", "start", "retrieve", "remove")
MAX_ACTIVE, MAX_PER_OP = 10000, 100


@dataclass(frozen=True)
class Plan:
    cycles: int  # create/start/retrieve/remove cycles per active-VR point and interface
    active: tuple[int, ...]  # VRs active before the cycles
    per_op: tuple[int, ...]  # VRs per operation, bytes sweep
    load: int  # VRs loaded for get-config against netconfd
    repeat: int  # samples per point of the bytes sweep
    baselines: bool


def _counts(text: str, flag: str, low: int, high: int) -> tuple[int, ...]:
    values = parse_list(text, int, "whole numbers", flag)
    bad = [v for v in values if not low <= v <= high]
    if bad:
        raise OptionError(flag, f"{bad} outside {low}..{high}")
    return tuple(sorted(set(values)))


def make_plan(
    common: BenchOptions,
    cycles: int | None = None,
    active: str | None = None,
    per_op: str | None = None,
    load: int | None = None,
    no_baselines: bool = False,
) -> Plan:
    quick = common.quick
    return Plan(
        cycles=cycles or (4 if quick else 30),
        active=_counts(active or ("0,5" if quick else "0,2,6,30,100"), "--active", 0, MAX_ACTIVE),
        per_op=_counts(per_op or ("1,3" if quick else "1,2,5,10,20,30"), "--per-op", 1, MAX_PER_OP),
        load=load or (30 if quick else 1000),
        repeat=common.repeat,
        baselines=not no_baselines,
    )
