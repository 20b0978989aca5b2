"""One `vnet bench mgmt` run: the sandbox, the agent and the baselines, the phases, cleanup."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable

from vnet.bench.client import agent_session
from vnet.bench.mgmt.interfaces import Interface, Netconf, Restconf, Snmp
from vnet.bench.mgmt.measure import Meter
from vnet.bench.mgmt.metrics import declare, start_result
from vnet.bench.mgmt.phases import Phases, Servers
from vnet.bench.mgmt.plan import Plan
from vnet.bench.mgmt.snmpd import SNMPD_PORT, Snmpd, snmpd_missing
from vnet.bench.netconf.config import Plan as NetconfPlan
from vnet.bench.netconf.netconfd import Netconfd, netconfd_missing
from vnet.bench.netconf.runner import Runner, Server
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult
from vnet.bench.snmp.clients import Client
from vnet.bench.snmp.workload import AUTH_KEY, COMMUNITY_RO, COMMUNITY_RW, PRIV_KEY, USER
from vnet.lab.sandbox import ADDRESS, HostSandbox, SandboxAgent
from vnet.tools import netns

PORTS = {"netconf": 8830, "restconf": 8443, "snmp": 161}
PASSWORD = "bench-" + secrets.token_hex(4)


def sandbox_agent(host: HostSandbox) -> SandboxAgent:
    """The agent with all three front-ends, SNMP open to the bench's community and user."""
    settings = {
        "ports": PORTS,
        "snmp": {
            "ro_communities": [COMMUNITY_RO],
            "rw_communities": [COMMUNITY_RW],
            "users": [{"name": USER, "auth_key": AUTH_KEY, "priv_key": PRIV_KEY}],
        },
    }
    return SandboxAgent(host, settings, user="bench", password=PASSWORD)


def agent_interfaces(agent: SandboxAgent) -> list[Interface]:
    from vnet.client import Endpoint

    ns = agent.host.namespace
    endpoint = Endpoint(ADDRESS, PORTS["restconf"], agent.user, agent.password, ns, verify=False)
    return [
        Snmp("SNMPv2c", "v2c", lambda: Client(ns, PORTS["snmp"])),
        Snmp("SNMPv3", "v3", lambda: Client(ns, PORTS["snmp"])),
        Netconf("NETCONF", lambda: agent_session(agent)),
        Restconf(endpoint),
    ]


def baseline_servers(host: HostSandbox, servers: Servers, plan: Plan, result: BenchResult) -> None:
    """netconfd and snmpd, each when installed; the reason in the notes when not."""
    if (why := netconfd_missing()) is not None:
        result.note(f"netconfd baseline skipped: {why}")
    else:
        netconfd = Netconfd(host)
        netconfd.start()
        assert netconfd.server is not None
        servers.netconfd_pid = netconfd.server.pid
        servers.netconfd = Netconf("netconfd", netconfd.connect, state=False)
    if (why := snmpd_missing()) is not None:
        result.note(f"snmpd baseline skipped: {why}")
        return
    snmpd = Snmpd(host)
    snmpd.add_interfaces(max(0, max(plan.active) - 1))  # with lo: as many rows as VRs
    snmpd.start()
    servers.snmpd_pid = snmpd.pid
    ns = host.namespace
    servers.snmpd = [Snmp(f"snmpd {v}", v, lambda: Client(ns, SNMPD_PORT)) for v in ("v2c", "v3")]


def record_memory(
    result: BenchResult, servers: Servers, meter: Meter, x: str, baselines: bool = False
) -> None:
    """VmRSS of the agent and the baselines running (only the baselines: `baselines`)."""
    for series, pid in (
        (None if baselines else "agent", servers.agent_pid),
        ("netconfd", servers.netconfd_pid),
        ("snmpd", servers.snmpd_pid),
    ):
        if series is None:
            continue
        if pid is not None and (rss := meter.rss(pid)) is not None:
            result.record("server_memory", series, rss, x=x)


def netconf_part(
    plan: Plan,
    result: BenchResult,
    progress: BenchProgress,
    s: Servers,
    vr_namespaces: Callable[[], list[str]],
) -> Runner:
    """vnet.bench.netconf's runner over the agent and netconfd, for the load phases."""
    part = NetconfPlan(ops=0, bulk=1, vrs=plan.load, chunk=100, repeat=plan.repeat, netconfd=True)
    runner = Runner(part, result, progress, vr_namespaces)
    runner.servers.append(Server("vnet", s.setup.m, s.agent_pid))
    if s.netconfd is not None and s.netconfd_pid is not None:
        runner.servers.append(Server("netconfd", s.netconfd.m, s.netconfd_pid))
    return runner


def measure(
    plan: Plan, result: BenchResult, host: HostSandbox, agent: SandboxAgent, progress: BenchProgress
) -> None:
    assert agent.proc is not None
    meter = Meter(result, host.namespace)
    setup = Netconf("setup", lambda: agent_session(agent, timeout=600))
    servers = Servers(agent.proc.pid, [], setup)
    record_memory(result, servers, meter, "idle, all front-ends, no session")
    if plan.baselines:
        progress.update("starting netconfd (behind sshd) and snmpd")
        baseline_servers(host, servers, plan, result)
        record_memory(result, servers, meter, "idle, all front-ends, no session", baselines=True)
    runner = netconf_part(plan, result, progress, servers, host.vr_namespaces)
    runner.networks()  # n1.. on the agent and on netconfd
    # Every socket the clients open from here on is in the sandbox's namespace.
    with netns.entered(host.namespace):
        servers.interfaces = agent_interfaces(agent)
        phases = Phases(plan, result, meter, servers, progress)
        progress.update(total=phases.steps())
        phases.cycles()
        if servers.snmpd:
            phases.snmp_floor()
        phases.remove_active()
        phases.sweep()
        if servers.netconfd is not None:
            phases.netconf_floor()
        batch = runner.load()
        record_memory(result, servers, meter, f"{plan.load} VRs loaded")
        runner.reads(batch)
        runner.unload(batch)
        runner.failure_notes()
        for iface in [*servers.interfaces, *servers.snmpd]:
            iface.close()
    peak = meter.rss(servers.agent_pid)
    if peak is not None:
        result.parameters["agent_vmhwm_mib"] = agent.rss_mb("VmHWM")


def run_mgmt(plan: Plan, bench: BenchOptions) -> BenchResult:
    result = start_result(plan, bench)
    declare(result, plan)
    host = HostSandbox(scope="mg" + secrets.token_hex(3))
    result.parameters["scope"] = host.scope
    agent = sandbox_agent(host)
    with BenchProgress("mgmt", total=None, quiet=bench.quiet) as progress:
        try:
            progress.update("starting the agent (NETCONF, RESTCONF, SNMP)")
            host.create()
            agent.start()
            result.parameters["agent_frontends"] = agent.frontends()
            measure(plan, result, host, agent, progress)
        finally:
            for problem in host.cleanup():
                result.note(f"cleanup: {problem}")
    result.parameters["load_average_at_end"] = list(os.getloadavg())
    return result
