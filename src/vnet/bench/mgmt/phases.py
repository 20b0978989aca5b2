"""The phases of one run: cycles over active VRs, the bytes sweep, the two floors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from vnet.bench.client import NS
from vnet.bench.mgmt.interfaces import Interface, Netconf, Snmp, Vr, _config, _router
from vnet.bench.mgmt.measure import SETTLE, Meter
from vnet.bench.mgmt.plan import OPERATIONS, Plan
from vnet.bench.netconf.config import NC
from vnet.bench.progress import BenchProgress
from vnet.bench.results import BenchResult

ACTIVE_FIRST = 30001  # indexes of the VRs active before the cycles
CYCLE_FIRST = 40001  # indexes of the VRs the warm-up and the sweep create
FRESH_FIRST = 41001  # and of those the measured cycles create (`fresh`)


# a Linux bridge takes at most 1024 ports: the first ACTIVE_PER_NETWORK active VRs share
# the cycles' network (as they always did), each further ACTIVE_PER_NETWORK one of their own
ACTIVE_PER_NETWORK = 1000


def active_vr(i: int) -> Vr:
    """The i-th VR active before the cycles (0, 1, ...)."""
    net, slot = divmod(i, ACTIVE_PER_NETWORK)
    if net == 0:
        return Vr(ACTIVE_FIRST + i)
    third, fourth = divmod(slot, 250)
    return Vr(ACTIVE_FIRST + i, f"a{net}", f"172.{15 + net}.{third}.{fourth + 1}/16")


def active_networks(count: int, operation: str = "") -> str:
    """The networks of the active VRs past the first ACTIVE_PER_NETWORK, for `count` of them
    (172.16.0.0/16 and up: clear of the cycles' and vnet.bench.netconf.config's)."""
    attr = f' nc:operation="{operation}"' if operation else ""
    nets = "".join(
        f"<network{attr}><name>a{k}</name><tenant>bench</tenant><vni>{6000 + k}</vni>"
        f"<ipv4-prefix>172.{15 + k}.0.0/16</ipv4-prefix></network>"
        for k in range(1, (count - 1) // ACTIVE_PER_NETWORK + 1)
    )
    body = f'<virtual-networks xmlns="{NS}">{nets}</virtual-networks>'
    return f'<config xmlns:nc="{NC}">{body}</config>'


def fresh(cycle: int, lane: int, lanes: int) -> Vr:
    """The VR of one measured cycle over interface `lane` of `lanes`: a name of its own.

    The kernel frees the host-side end of a VR's veth when it cleans a deleted namespace
    up, one RCU grace period later (30-50 ms on this machine kind): a create of the name
    just removed waits for that, so one VR reused by every cycle timed the kernel's
    clean-up of the last cycle, not the create (22 ms of which 7 ms CPU, against 6 ms
    with a fresh name, empty agent)."""
    return Vr(FRESH_FIRST + cycle * lanes + lane)


@dataclass
class Servers:
    """Who answers: the agent and, when planned, the two baselines."""

    agent_pid: int
    interfaces: list[Interface]
    setup: Netconf  # the agent's NETCONF session that makes the active VRs
    netconfd: Netconf | None = None
    netconfd_pid: int | None = None
    snmpd: list[Snmp] = field(default_factory=list)  # v2c, v3
    snmpd_pid: int | None = None


class Phases:
    def __init__(
        self,
        plan: Plan,
        result: BenchResult,
        meter: Meter,
        servers: Servers,
        progress: BenchProgress,
    ):
        self.plan, self.result, self.meter, self.s = plan, result, meter, servers
        self.progress = progress
        self.active = 0

    def steps(self) -> int:
        p = self.plan
        return len(p.active) * p.cycles + len(p.per_op) * p.repeat + p.cycles + 2

    # -- one operation -------------------------------------------------------------------

    def timed(self, iface: Interface, op: str, vrs: list[Vr], x: Any) -> None:
        """One operation of the cycles: time, CPU (ns and ticks) and, after retrieve, RSS."""
        took, c = self.meter.run(self.s.agent_pid, lambda: iface.operation(op)(vrs))
        self.result.record(f"time_{op}", iface.name, took * 1000, x=x)
        if c.cpu_ms is not None:
            self.result.record(f"cpu_{op}", iface.name, c.cpu_ms, x=x)
        self.result.record(f"bytes_{op}_kept", iface.name, c.wire_bytes, x=len(vrs))
        self.meter.charge(iface.name, op, c)
        if op == "retrieve" and (rss := self.meter.rss(self.s.agent_pid)) is not None:
            self.result.record("memory", iface.name, rss, x=x)

    def cycle(self, iface: Interface, vr: Vr, x: Any) -> None:
        for op in OPERATIONS:
            self.timed(iface, op, [vr], x)

    # -- phase 1: cycles with 0..N VRs active ------------------------------------------------

    def make_active(self, count: int) -> None:
        """Bring the active VRs (admin up, running) to `count`, in NETCONF edit-configs of
        ACTIVE_PER_NETWORK (their networks first)."""
        edit = self.s.setup.m.edit_config
        if count > ACTIVE_PER_NETWORK:
            edit(target="running", config=active_networks(count))
        for first in range(self.active, count, ACTIVE_PER_NETWORK):
            vrs = [active_vr(i) for i in range(first, min(count, first + ACTIVE_PER_NETWORK))]
            edit(target="running", config=_config([_router(v, "create", "up") for v in vrs]))
        self.active = max(self.active, count)

    def remove_active(self) -> None:
        for first in range(0, self.active, ACTIVE_PER_NETWORK):
            last = min(self.active, first + ACTIVE_PER_NETWORK)
            self.s.setup.remove([active_vr(i) for i in range(first, last)])
        if self.active > ACTIVE_PER_NETWORK:
            config = active_networks(self.active, "delete")
            self.s.setup.m.edit_config(target="running", config=config)
        self.active = 0

    def cycles(self) -> None:
        vr = Vr(CYCLE_FIRST)
        for iface in self.s.interfaces:  # warm-up: first use of every code path
            self.progress.update(f"warm-up: one cycle over {iface.name}")
            for op in OPERATIONS:
                iface.operation(op)([vr])
        for count in self.plan.active:
            self.progress.update(f"making {count} VRs active")
            self.make_active(count)
            for k in range(self.plan.cycles):
                self.progress.update(f"{count} VRs active: cycle {k + 1}/{self.plan.cycles}")
                lanes = self.s.interfaces
                for i, iface in enumerate(lanes):  # interleaved: load hits all alike
                    self.cycle(iface, fresh(k, i, len(lanes)), count)
                self.progress.advance()
        self.meter.record_batches()

    # -- phase 2: bytes per operation, 1..30 VRs per operation --------------------------------

    def sweep(self) -> None:
        for n in self.plan.per_op:
            vrs = [Vr(CYCLE_FIRST + 1 + j) for j in range(n)]
            for r in range(self.plan.repeat):
                self.progress.update(f"bytes sweep: {n} VRs per operation, {r + 1}")
                for iface in self.s.interfaces:
                    for op in ("create", "retrieve", "remove"):
                        self.with_session(iface, op, vrs)
                    for op in ("create", "retrieve", "remove"):
                        call = partial(iface.operation(op), vrs)
                        _, c = self.meter.run(self.s.agent_pid, call)
                        self.result.record(f"bytes_{op}_kept", iface.name, c.wire_bytes, x=n)
                self.progress.advance()

    def with_session(self, iface: Interface, op: str, vrs: list[Vr]) -> None:
        def call() -> None:
            fresh = iface.fresh()
            try:
                fresh.operation(op)(vrs)
            finally:
                fresh.close()

        _, c = self.meter.run(self.s.agent_pid, call, settle=SETTLE)
        self.result.record(f"bytes_{op}", iface.name, c.wire_bytes, x=len(vrs))

    # -- phase 3: the floors ---------------------------------------------------------------

    def snmp_floor(self) -> None:
        """GETBULK of one row's 13 objects and a one-column walk, agent against snmpd."""
        from vnet.bench.mgmt.snmpd import IF_ENTRY, getbulk_oids
        from vnet.bench.snmp.workload import vr_config_table
        from vnet.model.mib import oids

        rows, vr = self.active, Vr(ACTIVE_FIRST)
        agent = [i for i in self.s.interfaces if isinstance(i, Snmp)]
        name_column = vr_config_table() + f".1.{oids.VR_NAME}"
        walk = f"walk {rows} rows"
        for r in range(self.plan.cycles):
            self.progress.update(f"SNMP floor against snmpd, {r + 1}/{self.plan.cycles}")
            for ours, theirs in zip(agent, self.s.snmpd, strict=True):
                mine, other = f"agent {ours.version}", f"snmpd {theirs.version}"
                bulk = "GETBULK 13 objects"
                self.floor("snmp", mine, self.s.agent_pid, bulk, partial(ours.retrieve, [vr]))
                their_bulk = partial(theirs.client.bulk, theirs.version, getbulk_oids(), 1)
                self.floor("snmp", other, self.s.snmpd_pid, bulk, their_bulk)
                if rows and r < self.plan.repeat:
                    ours_walk = partial(ours.client.walk, ours.version, name_column, 50)
                    self.floor("snmp", mine, self.s.agent_pid, walk, ours_walk)
                    their_walk = partial(theirs.client.walk, theirs.version, f"{IF_ENTRY}.2", 50)
                    self.floor("snmp", other, self.s.snmpd_pid, walk, their_walk)
            self.progress.advance()

    def floor(
        self,
        kind: str,
        series: str,
        pid: int | None,
        x: str,
        call: Callable[[], Any],
    ) -> None:
        assert pid is not None
        took, c = self.meter.run(pid, call)
        self.result.record(f"{kind}_floor_ms", series, took * 1000, x=x)
        if c.cpu_ms is not None:
            self.result.record(f"{kind}_floor_cpu_ms", series, c.cpu_ms, x=x)

    def netconf_floor(self) -> None:
        """The same one-VR cycle over NETCONF, against the agent and against netconfd."""
        ours = next(i for i in self.s.interfaces if isinstance(i, Netconf))
        theirs = self.s.netconfd
        assert theirs is not None
        vr = Vr(CYCLE_FIRST)
        for op in OPERATIONS:  # warm-up of netconfd
            theirs.operation(op)([vr])
        for k in range(self.plan.cycles):
            self.progress.update(f"NETCONF floor against netconfd, {k + 1}/{self.plan.cycles}")
            for series, iface, pid in (
                ("vnet", ours, self.s.agent_pid),
                ("netconfd", theirs, self.s.netconfd_pid),
            ):
                mine = fresh(k, 0, 1)
                for op in OPERATIONS:
                    self.floor("netconf", series, pid, op, partial(iface.operation(op), [mine]))
            self.progress.advance()
