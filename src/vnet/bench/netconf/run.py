"""One NETCONF benchmark run: the sandbox, both servers, every measurement, the notes."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from typing import Any

from vnet.bench.client import agent_session
from vnet.bench.netconf import NetconfBenchError
from vnet.bench.netconf.config import Plan
from vnet.bench.netconf.goals import context_notes, declare_metrics, goal_notes
from vnet.bench.netconf.netconfd import Netconfd
from vnet.bench.netconf.runner import Runner, Server
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.results import BenchResult, tool_version
from vnet.lab.sandbox import (
    HostSandbox,
    SandboxAgent,
    SandboxError,
)
from vnet.tools.procfs import children_of

NETCONF_PORT = 8830  # the agent, on the namespace's loopback
RESTCONF_PORT = 8443
USER, PASSWORD = "bench", "bench-" + secrets.token_hex(4)


def start_result(plan: Plan, bench: BenchOptions) -> BenchResult:
    tools = {
        "ncclient": _module_version("ncclient"),
        "netconfd": _dpkg_version("netconfd"),
        "sshd": tool_version(["/usr/sbin/sshd", "-V"]),
    }
    parameters = {
        "quick": bench.quick,
        "repeat": plan.repeat,
        "ops": plan.ops,
        "bulk": plan.bulk,
        "vrs": plan.vrs,
        "chunk": plan.chunk,
        "networks": plan.networks,
        "netconfd": plan.netconfd,
        "ncclient_tick_s": 0.001,
        "load_average_at_start": list(os.getloadavg()),
    }
    result = BenchResult.start(
        "netconf",
        parameters=parameters,
        tools=tools,
        baseline="netconfd" if plan.netconfd else None,
        description="NETCONF over SSH: the vnet agent (all default front-ends running) and "
        "yuma123 netconfd, one ncclient session each, in one namespace on loopback.",
    )
    declare_metrics(result, plan)
    return result


def run_netconf_bench(plan: Plan, bench: BenchOptions) -> BenchResult:
    result = start_result(plan, bench)
    host = HostSandbox(scope="nb" + secrets.token_hex(3))
    result.parameters["scope"] = host.scope
    agent = SandboxAgent(
        host,
        {"ports": {"netconf": NETCONF_PORT, "restconf": RESTCONF_PORT}},
        user=USER,
        password=PASSWORD,
    )
    netconfd = Netconfd(host)
    progress = BenchProgress("netconf", total=None, quiet=bench.quiet)
    runner = Runner(plan, result, progress, host.vr_namespaces)
    with progress:
        progress.update(total=runner.steps())
        try:
            host.create()
            start_servers(runner, agent, netconfd, progress)
            runner.memory("idle, no VRs")
            progress.advance()
            runner.networks()
            runner.single_ops()
            runner.bulk()
            batch = runner.load()
            runner.memory(f"{plan.vrs} VRs loaded")
            runner.reads(batch)
            runner.unload(batch)
            runner.peak_memory()
        finally:
            runner.failure_notes()
            for s in runner.servers:
                with contextlib.suppress(Exception):
                    s.session.close_session()
            try:
                netconfd.stop()
                agent.stop()
            finally:  # whatever failed above, everything started here is stopped by PID
                for problem in host.cleanup():
                    runner.note(f"cleanup: {problem}")
    result.parameters["load_average_at_end"] = list(os.getloadavg())
    for line in goal_notes(result, plan):
        result.note(line)
    for line in context_notes(result, plan, netconfd):
        result.note(line)
    return result


def start_servers(
    runner: Runner, agent: SandboxAgent, netconfd: Netconfd, progress: BenchProgress
) -> None:
    """The agent (default front-ends, else NETCONF only) and, if planned, netconfd."""
    result = runner.result
    progress.update("starting the agent")
    try:
        agent.start()
    except (NetconfBenchError, SandboxError) as err:
        runner.note(
            f"the agent did not start with its default front-ends ({err}); "
            "retrying with --frontends netconf"
        )
        agent.stop()
        agent.start("netconf")
    assert agent.proc is not None
    running = agent.frontends()
    result.parameters["agent_frontends"] = running
    runner.note(f"agent front-ends running: {', '.join(running) or 'unknown'}")
    kids = children_of(agent.proc.pid)
    if kids:
        runner.note(f"the agent has child processes {kids}; memory is the main process's")
    runner.servers.append(Server("vnet", agent_session(agent, timeout=30), agent.proc.pid))
    if runner.plan.netconfd:
        progress.update("starting sshd and netconfd")
        netconfd.start()
        assert netconfd.server is not None
        runner.servers.append(Server("netconfd", netconfd.connect(), netconfd.server.pid))
        for line in netconfd.log_warnings():
            runner.note(f"netconfd log: {line}")


def _module_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _dpkg_version(package: str) -> str | None:
    try:
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
