"""What one `vnet bench controller` run measures: databases, concurrencies, request counts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import vnet
from vnet.bench.contract import OptionError
from vnet.bench.options import parse_kinds, parse_list
from vnet.bench.progress import BenchOptions
from vnet.model.rate import parse_rate

DATABASES = ("sqlite", "postgresql")
# the order of one round: the paper's Figs. 2-4 (create, modify, remove), and between them
# the moves: path modifies ("move") and creates that fit only by moving another ("rearrange")
OPERATIONS = ("create", "modify", "move", "rearrange", "remove")
# paper 001 Sec. 4.1: 100 creates, 100 removes, 50 modifies at 1, 10 and 100 simultaneous
PAPER_CREATES, PAPER_MODIFIES, PAPER_CONCURRENCY = 100, 50, (1, 10, 100)
QUICK_CREATES, QUICK_MODIFIES, QUICK_CONCURRENCY = 12, 6, (1, 6)
PAPER_MOVES, PAPER_REARRANGES = 50, 10
QUICK_MOVES, QUICK_REARRANGES = 6, 2
DEFAULT_TOPOLOGY = Path("examples/controller-40.yaml")
MAX_CREATES, MAX_CONCURRENCY = 2000, 500
SOUTHBOUNDS = ("lab", "simulated")
SIM_HOSTS, SIM_CONNECTIONS, SIM_CONCURRENCY, SIM_RPC_LATENCY_MS = (100, 1000), 10_000, (10,), 1.0
QUICK_SIM_HOSTS, QUICK_SIM_CONNECTIONS = (12,), 60
MAX_SIM_CONNECTIONS = 60_000  # each a UDP flow of its own: destination ports 5001 up


@dataclass(frozen=True)
class Plan:
    topology: Path  # the lab file with a `controller:` section
    databases: tuple[str, ...]  # the series
    concurrency: tuple[int, ...]  # simultaneous requests, the x axis
    creates: int  # per round; every created connection is removed again
    modifies: int  # per round, each on a connection created in the same round
    moves: int  # path modifies per round, each on a connection created in the same round
    rearranges: int  # creates needing a move, one at a time, in the rounds at 1 request
    bandwidth_bps: int  # what each create asks for
    modified_bps: int  # what each modify changes it to
    repeat: int  # rounds per (database, concurrency)
    seed: int  # the request schedule's random pairs
    # "lab": emulated hosts with their agents; "simulated": hosts in the controller's memory
    # on a generated substrate of each size in `hosts` (simulated.py)
    southbound: str = "lab"
    hosts: tuple[int, ...] = ()
    connections: int = 0  # creates per size, simulated only (all removed after)
    rpc_latency_ms: float = 0.0  # each simulated RPC's answer time


def _default_topology() -> Path:
    """examples/controller-40.yaml here, else in the source tree vnet runs from."""
    if DEFAULT_TOPOLOGY.is_file():
        return DEFAULT_TOPOLOGY
    return Path(vnet.__file__).resolve().parents[2] / DEFAULT_TOPOLOGY


def _concurrency(text: str) -> tuple[int, ...]:
    values = parse_list(text, int, "whole numbers", "--concurrency")
    bad = [v for v in values if not 1 <= v <= MAX_CONCURRENCY]
    if bad:
        raise OptionError("--concurrency", f"{bad} outside 1..{MAX_CONCURRENCY}")
    return tuple(sorted(set(values)))


def _rate(text: str, flag: str) -> int:
    try:
        bps = int(parse_rate(text))
    except ValueError as err:
        raise OptionError(flag, f"not a rate such as 1mbit: {text!r}") from err
    if bps <= 0:
        raise OptionError(flag, f"must be above zero, got {text!r}")
    return bps


def make_plan(
    common: BenchOptions,
    topology: str | None = None,
    databases: str | None = None,
    concurrency: str | None = None,
    creates: int | None = None,
    modifies: int | None = None,
    bandwidth: str = "1mbit",
    modified: str = "2mbit",
    seed: int = 1,
    moves: int | None = None,
    rearranges: int | None = None,
    southbound: str = "lab",
    hosts: str | None = None,
    connections: int | None = None,
    rpc_latency: float | None = None,
) -> Plan:
    if southbound == "simulated":
        return _simulated(
            common, databases, concurrency, bandwidth, seed, hosts, connections, rpc_latency
        )
    if hosts or connections or rpc_latency is not None:
        raise OptionError(
            "--southbound",
            "--hosts, --connections and --rpc-latency are for --southbound simulated",
        )
    quick = common.quick
    chosen = parse_kinds(databases, DATABASES, "--databases") if databases else None
    if chosen is None:
        chosen = ["sqlite"] if quick else list(DATABASES)
    creates = creates or (QUICK_CREATES if quick else PAPER_CREATES)
    modifies = modifies if modifies is not None else (QUICK_MODIFIES if quick else PAPER_MODIFIES)
    if modifies > creates:
        raise OptionError("--modifies", f"at most --creates ({creates}), got {modifies}")
    moves = moves if moves is not None else (QUICK_MOVES if quick else PAPER_MOVES)
    if moves > creates:
        raise OptionError("--moves", f"at most --creates ({creates}), got {moves}")
    if rearranges is None:
        rearranges = QUICK_REARRANGES if quick else PAPER_REARRANGES
    default_concurrency = QUICK_CONCURRENCY if quick else PAPER_CONCURRENCY
    return Plan(
        topology=Path(topology) if topology else _default_topology(),
        databases=tuple(d for d in DATABASES if d in chosen),
        concurrency=_concurrency(concurrency) if concurrency else default_concurrency,
        creates=creates,
        modifies=modifies,
        moves=moves,
        rearranges=rearranges,
        bandwidth_bps=_rate(bandwidth, "--bandwidth"),
        modified_bps=_rate(modified, "--modified"),
        repeat=common.repeat,
        seed=seed,
    )


def _simulated(
    common: BenchOptions,
    databases: str | None,
    concurrency: str | None,
    bandwidth: str,
    seed: int,
    hosts: str | None,
    connections: int | None,
    rpc_latency: float | None,
) -> Plan:
    """The plan of `--southbound simulated`: sizes, connections, the RPCs' latency."""
    quick = common.quick
    chosen = parse_kinds(databases, DATABASES, "--databases") if databases else ["sqlite"]
    sizes = parse_list(hosts, int, "whole numbers", "--hosts") if hosts else None
    if sizes is not None and any(not 4 <= n <= 2000 for n in sizes):
        raise OptionError("--hosts", f"each from 4 to 2000, got {sizes}")
    total = connections or (QUICK_SIM_CONNECTIONS if quick else SIM_CONNECTIONS)
    if not 3 <= total <= MAX_SIM_CONNECTIONS:
        raise OptionError("--connections", f"3 to {MAX_SIM_CONNECTIONS}, got {total}")
    return Plan(
        topology=Path("-"),
        databases=tuple(d for d in DATABASES if d in chosen),
        concurrency=_concurrency(concurrency) if concurrency else SIM_CONCURRENCY,
        creates=0,
        modifies=0,
        moves=0,
        rearranges=0,
        bandwidth_bps=_rate(bandwidth, "--bandwidth"),
        modified_bps=_rate(bandwidth, "--bandwidth"),
        repeat=1,
        seed=seed,
        southbound="simulated",
        hosts=tuple(sizes or (QUICK_SIM_HOSTS if quick else SIM_HOSTS)),
        connections=total,
        rpc_latency_ms=SIM_RPC_LATENCY_MS if rpc_latency is None else rpc_latency,
    )
