"""Timing NETCONF operations against each server, and their memory."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vnet.bench.client import NS
from vnet.bench.netconf import NetconfBenchError
from vnet.bench.netconf.config import (
    BULK_INDEX,
    OPS_INDEX,
    Batch,
    Plan,
    networks_config,
    one_router_filter,
    router_xml,
    routers_config,
)
from vnet.bench.progress import BenchProgress
from vnet.bench.results import BenchResult
from vnet.tools.procfs import memory_of

# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Server:
    name: str  # the series: "vnet" or "netconfd"
    session: Any  # ncclient Manager
    pid: int


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def _routers_in(reply: Any) -> list[str]:
    return [n.text for n in reply.data.iterfind(f".//{{{NS}}}router/{{{NS}}}name")]


class Runner:
    """Drives the servers through the plan, recording samples into `result`."""

    def __init__(
        self,
        plan: Plan,
        result: BenchResult,
        progress: BenchProgress,
        vr_namespaces: Callable[[], list[str]],
    ):
        self.plan = plan
        self.result = result
        self.progress = progress
        self.servers: list[Server] = []
        self.vr_namespaces = vr_namespaces  # the agent's VRs as the kernel has them
        self.failures: dict[str, int] = {}

    def check_kernel(self, expected: int, when: str) -> None:
        found = len(self.vr_namespaces())
        if found != expected:
            self.note(f"vnet: {found} VR namespaces in the kernel {when}, expected {expected}")

    def note(self, text: str) -> None:
        self.result.note(text)
        self.progress.log(text)

    def rpc(self, server: Server, what: str, call: Callable[[], Any]) -> tuple[float | None, Any]:
        """Time one RPC; a failed one becomes a note, not a sample."""
        from ncclient.operations import RPCError

        try:
            seconds, reply = _timed(call)
        except RPCError as err:
            # One note per kind of failure, with a count added at the end (see failure_notes).
            key = f"{server.name}: {what} failed: {err.tag}: {err.message}"
            if key not in self.failures:
                self.progress.log(key)
            self.failures[key] = self.failures.get(key, 0) + 1
            return None, None
        return seconds, reply

    def failure_notes(self) -> None:
        for key, times in self.failures.items():
            self.result.note(f"{key} ({times} time{'s' if times > 1 else ''}; not counted)")

    def record(
        self,
        metric: str,
        server: Server,
        x: str | int,
        seconds: float | None,
        scale: float = 1000.0,
    ) -> None:
        if seconds is not None:
            self.result.record(metric, server.name, seconds * scale, x=x)

    def memory(self, x: str) -> None:
        for s in self.servers:
            mem = memory_of(s.pid)
            if "VmRSS" in mem:
                self.result.record("memory", s.name, mem["VmRSS"], x=f"VmRSS, {x}")

    def peak_memory(self) -> None:
        for s in self.servers:
            mem = memory_of(s.pid)
            if "VmHWM" in mem:
                self.result.record("memory", s.name, mem["VmHWM"], x="VmHWM (peak of the run)")

    def edit(self, server: Server, config: str) -> Callable[[], Any]:
        return lambda: server.session.edit_config(target="running", config=config)

    def get_one(self, server: Server, name: str) -> Callable[[], Any]:
        return lambda: server.session.get(filter=one_router_filter(name))

    def get_config(self, server: Server) -> Callable[[], Any]:
        return lambda: server.session.get_config("running")

    # -- phases ------------------------------------------------------------------------------------

    def networks(self) -> None:
        for s in self.servers:
            s.session.edit_config(target="running", config=networks_config(self.plan.networks))

    def single_ops(self, warmup: int = 3) -> None:
        nets = self.plan.networks
        for k in range(-warmup, self.plan.ops):
            if k >= 0:
                self.progress.update(f"one VR: create/retrieve/remove {k + 1}/{self.plan.ops}")
            name = f"op{k + warmup + 1}"
            index = OPS_INDEX + k + warmup
            create = routers_config([router_xml(name, index, 0, nets, op="create")])
            delete = routers_config([router_xml(name, index, 0, nets, op="delete")])
            for s in self.servers:
                took, _ = self.rpc(s, "create one VR", self.edit(s, create))
                if took is None:
                    continue
                got, reply = self.rpc(
                    s,
                    "get one VR",
                    self.get_one(s, name),
                )
                if k == 0 and reply is not None:
                    self.check_retrieved(s, name, reply)
                gone, _ = self.rpc(s, "delete one VR", self.edit(s, delete))
                if k >= 0:
                    self.record("vr_op_latency", s, "create", took)
                    self.record("vr_op_latency", s, "retrieve", got)
                    self.record("vr_op_latency", s, "remove", gone)
            if k >= 0:
                self.progress.advance()

    def check_retrieved(self, s: Server, name: str, reply: Any) -> None:
        if _routers_in(reply) != [name]:
            self.note(f"{s.name}: get of {name} returned routers {_routers_in(reply)}")
        if s.name == "vnet":
            state = reply.data.findtext(f".//{{{NS}}}oper-state")
            if state != "running":
                self.note(f"vnet: {name} has oper-state {state!r}, expected 'running'")

    def bulk(self) -> None:
        batch = Batch("bk", self.plan.bulk, BULK_INDEX, self.plan.networks)
        create, delete = batch.create(), batch.delete()
        for r in range(self.plan.repeat):
            self.progress.update(
                f"one edit-config with {self.plan.bulk} VRs, {r + 1}/{self.plan.repeat}"
            )
            for s in self.servers:
                took, _ = self.rpc(s, f"create {self.plan.bulk} VRs", self.edit(s, create))
                if took is None:
                    continue
                if r == 0 and s.name == "vnet":
                    self.check_kernel(self.plan.bulk, f"after creating {self.plan.bulk} VRs")
                gone, _ = self.rpc(s, f"delete {self.plan.bulk} VRs", self.edit(s, delete))
                if r == 0 and s.name == "vnet":
                    self.check_kernel(0, f"after deleting {self.plan.bulk} VRs")
                self.record("bulk_edit", s, f"create {self.plan.bulk} VRs", took, scale=1.0)
                self.record("bulk_edit", s, f"remove {self.plan.bulk} VRs", gone, scale=1.0)
            self.progress.advance()

    def load(self) -> Batch:
        plan = self.plan
        batch = Batch("vr", plan.vrs, 1, plan.networks)
        chunks = [(i, min(i + plan.chunk, plan.vrs)) for i in range(0, plan.vrs, plan.chunk)]
        self.progress.update(f"loading {plan.vrs} VRs in {len(chunks)} edit-config(s)")
        for s in self.servers:
            total = 0.0
            for a, b in chunks:
                took, _ = self.rpc(s, f"create VRs {a + 1}..{b}", self.edit(s, batch.create(a, b)))
                if took is None:
                    raise NetconfBenchError(f"{s.name} refused VRs {a + 1}..{b}; see the notes")
                total += took
            self.record(
                "load", s, f"create {plan.vrs} VRs ({len(chunks)} edit-configs)", total, scale=1.0
            )
            reply = s.session.get_config(source="running")
            found = _routers_in(reply)
            self.result.parameters.setdefault("get_config_reply_bytes", {})[s.name] = len(
                reply.data_xml.encode()
            )
            if len(found) != plan.vrs:
                self.note(f"{s.name}: get-config shows {len(found)} VRs, expected {plan.vrs}")
            if s.name == "vnet":
                self.check_kernel(plan.vrs, f"after loading {plan.vrs} VRs")
        self.progress.advance()
        return batch

    def reads(self, batch: Batch) -> None:
        """get-config of everything and get of one VR, alternating servers per sample."""
        middle = batch.names()[batch.count // 2]
        for r in range(self.plan.repeat):
            self.progress.update(f"get-config of {self.plan.vrs} VRs, {r + 1}/{self.plan.repeat}")
            for s in self.servers:
                took, _ = self.rpc(s, "get-config", self.get_config(s))
                self.record("get_config", s, self.plan.vrs, took)
            for s in self.servers:
                took, _ = self.rpc(
                    s,
                    f"get one VR ({middle}) with {self.plan.vrs} VRs loaded",
                    self.get_one(s, middle),
                )
                self.record("vr_op_latency", s, f"retrieve, {self.plan.vrs} VRs loaded", took)
            self.progress.advance()

    def unload(self, batch: Batch) -> None:
        plan = self.plan
        chunks = [(i, min(i + plan.chunk, plan.vrs)) for i in range(0, plan.vrs, plan.chunk)]
        self.progress.update(f"removing {plan.vrs} VRs")
        for s in self.servers:
            total = 0.0
            for a, b in chunks:
                took, _ = self.rpc(s, f"delete VRs {a + 1}..{b}", self.edit(s, batch.delete(a, b)))
                if took is None:
                    break
                total += took
            else:
                self.record(
                    "load",
                    s,
                    f"remove {plan.vrs} VRs ({len(chunks)} edit-configs)",
                    total,
                    scale=1.0,
                )
                if s.name == "vnet":
                    self.check_kernel(0, f"after removing the {plan.vrs} VRs")
        self.progress.advance()

    def steps(self) -> int:
        return self.plan.ops + 2 * self.plan.repeat + 2
