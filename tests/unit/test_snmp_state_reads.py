"""SNMP reads a VR's kernel state again when a request reaches it more than STATE_TTL
after it was read, that VR's alone (a walk, which reaches many, reads every VR's in one
go), and the state of the VRs a configuration change made before it serves any."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from vnet.agent.snmp import frontend, smi
from vnet.agent.snmp.frontend import SnmpFrontend
from vnet.agent.snmp.view import ONE_BY_ONE, NeedsState, Reading, View, read_through
from vnet.model.agent_config import AgentConfig, User
from vnet.model.mib import oids
from vnet.model.yang.module import ROUTERS

Tree = dict[str, Any]


def running(count: int) -> Tree:
    return {ROUTERS: {"router": [{"name": f"r{i}", "index": i} for i in range(1, count + 1)]}}


class Host:
    """The datastore SNMP reads (running, state_tree, NACM): every VR running; which VRs
    each state read read."""

    def __init__(self, count: int) -> None:
        self.running = running(count)
        self.calls: list[set[str] | None] = []
        self.nacm = SimpleNamespace(access=lambda user, tree: None)

    def running_snapshot(self) -> Tree:
        return self.running

    async def state_tree(self, detailed: set[str] | None = None, tops: Any = None) -> Tree:
        self.calls.append(None if detailed is None else set(detailed))
        routers = [
            {**r, "oper-state": "running"}
            for r in self.running[ROUTERS]["router"]
            if detailed is None or r["name"] in detailed
        ]
        return {ROUTERS: {"router": routers}}


def oper(index: int) -> tuple[int, ...]:
    return (*oids.VR_ENTRY, oids.VR_OPER, index)


def answer(fe: SnmpFrontend, ask: Any) -> Any:
    """A read request as the responder answers it."""
    return asyncio.run(read_through(lambda reading: fe.view(reading), ask))


def frontend_of(host: Host, tmp_path: Path) -> SnmpFrontend:
    config = AgentConfig(state_dir=tmp_path, users=[User(name="a", password="x")])
    return SnmpFrontend(host, config)  # a stand-in for the Datastore: what SNMP reads


def test_an_old_vr_s_state_is_read_again_alone_and_a_walk_reads_every_vr_s(
    tmp_path: Path,
) -> None:
    host = Host(20)
    fe = frontend_of(host, tmp_path)
    assert answer(fe, lambda v: v.get(oper(5)).raw) == 1  # running
    assert host.calls == [None]  # none read yet: every VR's
    assert answer(fe, lambda v: v.get(oper(5)).raw) == 1
    assert host.calls == [None], "read a moment ago: served as it is"
    state = fe._state
    state.read_at = {i: at - 2 * frontend.STATE_TTL for i, at in state.read_at.items()}
    assert answer(fe, lambda v: (v.get(oper(5)).raw, v.get(oper(7)).raw)) == (1, 1)
    assert host.calls == [None, {"r5"}, {"r7"}], "each old VR read alone, once"

    def walk(view: View) -> int:
        found, at = 0, oper(0)
        while (got := view.next(at)) is not None and got[0][: len(oper(0)) - 1] == at[:-1]:
            found, at = found + 1, got[0]
        return found

    host.calls.clear()
    assert answer(fe, walk) == 20
    assert len(host.calls) == ONE_BY_ONE + 1 and host.calls[-1] is None, host.calls


def test_a_configuration_change_reads_the_changed_vrs_before_serving_state(
    tmp_path: Path,
) -> None:
    host = Host(19)
    fe = frontend_of(host, tmp_path)
    assert answer(fe, lambda v: v.get(oper(20))) == smi.NO_SUCH_INSTANCE
    host.running = running(20)  # r20 made (over NETCONF, say)
    assert answer(fe, lambda v: v.get(oper(20)).raw) == 1
    assert host.calls == [None, {"r20"}]


def test_each_pass_reads_more_so_the_passes_end() -> None:
    first = Reading(0.0)
    changed = first.after(NeedsState(config=True))
    assert changed.config and changed.wanted == frozenset() and not changed.last
    one = changed.after(NeedsState(5))
    assert one.wanted == {5} and one.config
    assert one.after(NeedsState(5)).last, "read and still wanted: every VR's, served as read"
    assert one.after(NeedsState(config=True)).last
    assert one.after(NeedsState()).last
