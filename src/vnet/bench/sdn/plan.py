"""What `vnet bench sdn` measures: the paper's Table 1 and the hypervisor's own experiments.

Rates are messages/s. Every Table 1 setup runs switch-only ("ovs"), through the
pass-through proxy ("proxy") and through the slicing hypervisor ("hv"). Then,
for the hypervisor only against the switch alone:

- "packet-out-rate": PACKET_OUT over the most tenants at rising total rates
  (TCP_NODELAY on), to find the highest rate at which the switch alone keeps
  up, and the hypervisor's added latency and fairness there;
- "noisy": PACKET_OUT through a hypervisor that limits every slice to
  RATE_LIMIT/s, all tenants at NORMAL_RATE, once without and once with tenant
  0 at NOISY_FACTOR times the limit;
- "flow-mod": FLOW_MOD + BARRIER for one tenant.
"""

from __future__ import annotations

from vnet.bench.sdn.perfbench import Setup

PACKET_IN_RATES = [10_000, 20_000, 30_000, 40_000]
PORT_STATS_RATES = [5_000, 6_000, 7_000, 8_000]
PACKET_OUT_TOTAL = 60_000
LADDER_RATES = [10_000, 20_000, 30_000, 40_000, 50_000]  # plus PACKET_OUT_TOTAL from Table 1
QUICK_LADDER_RATES = [10_000]
NOISY_TENANTS, QUICK_NOISY_TENANTS = 10, 4
NORMAL_RATE = 1_000  # each tenant's PACKET_OUT/s in the noisy-tenant runs
RATE_LIMIT = 2_000  # the hypervisor's per-slice limit there (twice the normal rate)
NOISY_FACTOR = 10
FLOW_MOD_RATE = 2_000
VIAS = ("ovs", "proxy", "hv")


def table1(via: str, quick: bool, tenants: list[int]) -> list[Setup]:
    """The paper's Table 1 for one series."""
    setups = [
        Setup("packet-in", via, False, 1, r) for r in ([40_000] if quick else PACKET_IN_RATES)
    ]
    if not quick:
        setups.append(Setup("packet-in", via, True, 1, 40_000))
    setups += [
        Setup("port-stats", via, False, 1, r) for r in ([8_000] if quick else PORT_STATS_RATES)
    ]
    setups += [
        Setup("packet-out", via, nd, n, PACKET_OUT_TOTAL) for n in tenants for nd in (False, True)
    ]
    return setups


def ladder(quick: bool, tenants: list[int]) -> list[Setup]:
    """PACKET_OUT over the most tenants at rising rates, switch alone and hypervisor."""
    n = max(tenants)
    rates = QUICK_LADDER_RATES if quick else LADDER_RATES
    return [Setup("packet-out-rate", via, True, n, r) for r in rates for via in ("ovs", "hv")]


def noisy_rates(tenants: int, noisy: bool) -> tuple[int, ...]:
    """Per-tenant rates: everyone at NORMAL_RATE, tenant 0 at NOISY_FACTOR x RATE_LIMIT if noisy."""
    first = NOISY_FACTOR * RATE_LIMIT if noisy else NORMAL_RATE
    return (first,) + (NORMAL_RATE,) * (tenants - 1)


def noisy(quick: bool) -> list[Setup]:
    """The noisy-tenant pair: the same rate-limited hypervisor without and with the noisy one."""
    n = QUICK_NOISY_TENANTS if quick else NOISY_TENANTS
    return [
        Setup(
            "noisy",
            "hv",
            True,
            n,
            sum(rates := noisy_rates(n, loud)),
            rates=rates,
            rate_limit=RATE_LIMIT,
        )
        for loud in (False, True)
    ]


def is_noisy(setup: Setup) -> bool:
    return setup.experiment == "noisy" and bool(setup.rates) and setup.rates[0] > NORMAL_RATE


def flow_mod(quick: bool) -> list[Setup]:
    rate = FLOW_MOD_RATE // 2 if quick else FLOW_MOD_RATE
    return [Setup("flow-mod", via, True, 1, rate) for via in ("ovs", "hv")]


def plan(quick: bool, tenants: list[int]) -> list[Setup]:
    """Everything, in run order."""
    setups: list[Setup] = []
    for via in VIAS:
        setups += table1(via, quick, tenants)
    return setups + ladder(quick, tenants) + noisy(quick) + flow_mod(quick)


def x_of(setup: Setup) -> float | str:
    """The point's x in the results: tenants for Table 1's PACKET_OUT, else the rate."""
    if setup.experiment == "packet-out":
        return setup.tenants
    if setup.experiment == "noisy":
        return "with noisy tenant" if is_noisy(setup) else "without"
    return setup.rate
