"""What one `vnet bench agent` run measures: the parts and their sizes, from the options."""

from __future__ import annotations

from dataclasses import dataclass

from vnet.bench.contract import OptionError
from vnet.bench.options import parse_kinds
from vnet.bench.progress import BenchOptions

# every part, in the order a run measures them
MAX_REPEAT = 250
PARTS = ("connection", "confirmed", "nacm", "restart", "large-message", "topology")


@dataclass(frozen=True)
class Plan:
    parts: tuple[str, ...]
    repeat: int  # samples per operation: connection edits, confirmed cycles, NACM rounds
    rounds: int  # samples of the slow parts: restarts, large edits, topology checks
    nacm_vrs: int  # VRs in the datastore NACM filters
    shallow: bool  # NACM rules that never reach inside a VR
    restart_vrs: int  # VRs the restarted agent reconciles
    megabytes: int  # size of the large edit-config
    hosts: int  # physical hosts in the generated topology


def make_plan(
    common: BenchOptions,
    parts: str | None = None,
    rounds: int | None = None,
    nacm_vrs: int | None = None,
    shallow: bool = False,
    restart_vrs: int | None = None,
    megabytes: int | None = None,
    hosts: int | None = None,
) -> Plan:
    quick = common.quick
    chosen = parse_kinds(parts, PARTS, "--parts") if parts else list(PARTS)
    if len(set(chosen)) != len(chosen):
        raise OptionError("--parts", f"a part is named twice: {parts}")
    if common.repeat > MAX_REPEAT:  # connection k and VR k take addresses of one /24
        raise OptionError("--repeat", f"at most {MAX_REPEAT} here, got {common.repeat}")
    return Plan(
        parts=tuple(p for p in PARTS if p in chosen),
        repeat=common.repeat,
        rounds=rounds or (1 if quick else 3),
        nacm_vrs=nacm_vrs or (50 if quick else 1000),
        shallow=shallow,
        restart_vrs=restart_vrs or (50 if quick else 1000),
        megabytes=megabytes if megabytes is not None else (5 if quick else 50),
        hosts=hosts or (300 if quick else 10000),
    )
