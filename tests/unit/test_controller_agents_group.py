"""Group commit's scheduling (controller/agents/group.py), with a recording stand-in for the
transaction: who shares a transaction, who waits, and who fails when an agent refuses."""

from __future__ import annotations

import asyncio

import pytest

from vnet.controller.agents.changes import AgentError, ConfirmError, HostChange
from vnet.controller.agents.group import GroupCommit
from vnet.controller.agents.transaction import JournalFailed, Member
from vnet.model.host_guarantees import ConnectionPieces, Transit


def pieces(name: str) -> ConnectionPieces:
    return ConnectionPieces(
        name=name, id=1, transit=[Transit(router="r", sid="fc00::1", network="n")]
    )


def member(rid: str, hosts: tuple[str, ...], connection: str | None = None) -> Member:
    conn = connection or f"vc-{rid}"
    return Member(rid, {h: HostChange(h, put=(pieces(conn),)) for h in hosts})


class Recorder:
    """Runs 'transactions': records each group; refuses groups holding a bad request."""

    def __init__(self, bad: dict[str, AgentError] | None = None):
        self.groups: list[list[str]] = []
        self.bad = bad or {}
        self.release = asyncio.Event()

    async def __call__(self, members: list[Member]) -> None:
        self.groups.append([m.request_id for m in members])
        if len(self.groups) == 1:
            await self.release.wait()  # the first holds its hosts while others queue
        for m in members:
            if m.request_id in self.bad:
                raise self.bad[m.request_id]


async def submit_all(groups: GroupCommit, members: list[Member], rec: Recorder) -> list[object]:
    """The first member alone, holding its hosts, then the others while it runs."""
    first = asyncio.create_task(groups.submit(members[0]))
    while not rec.groups:
        await asyncio.sleep(0)
    tasks = [first, *(asyncio.create_task(groups.submit(m)) for m in members[1:])]
    await asyncio.sleep(0)  # everyone queued
    rec.release.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


def test_requests_submitted_in_one_turn_start_as_one_group() -> None:
    """The moves of one failure are submitted together: none starts alone ahead of the
    others (they would then wait for it and take twice as long)."""
    rec = Recorder()
    rec.release.set()
    members = [member(f"r{i}", ("h1", "h2")) for i in range(5)]

    async def together() -> list[object]:
        groups = GroupCommit(rec)
        return await asyncio.gather(*(groups.submit(m) for m in members))

    assert asyncio.run(together()) == [None] * 5
    assert rec.groups == [["r0", "r1", "r2", "r3", "r4"]]


def test_requests_queued_for_the_same_hosts_share_one_transaction() -> None:
    rec = Recorder()
    members = [member(f"r{i}", ("h1", "h2")) for i in range(5)]
    results = asyncio.run(submit_all(GroupCommit(rec), members, rec))
    assert results == [None] * 5
    assert rec.groups == [["r0"], ["r1", "r2", "r3", "r4"]]


def test_without_grouping_each_request_is_a_transaction() -> None:
    rec = Recorder()
    members = [member(f"r{i}", ("h1",)) for i in range(3)]
    asyncio.run(submit_all(GroupCommit(rec, max_group=1), members, rec))
    assert rec.groups == [["r0"], ["r1"], ["r2"]]


def test_the_same_connection_twice_never_shares_a_transaction() -> None:
    rec = Recorder()
    members = [member("r0", ("h9",)), member("a", ("h1",), "vc1"), member("b", ("h1",), "vc1")]
    members.append(member("c", ("h1",)))
    asyncio.run(submit_all(GroupCommit(rec), members, rec))
    # r0 runs alone on h9 while a goes at once (h1 free); b must wait for a, c behind b
    assert ["a"] in rec.groups and ["b", "c"] in rec.groups


def test_a_request_waiting_for_a_busy_host_is_not_overtaken() -> None:
    rec = Recorder()
    members = [member("first", ("h1",)), member("wide", ("h1", "h2")), member("late", ("h2",))]
    asyncio.run(submit_all(GroupCommit(rec), members, rec))
    assert rec.groups == [["first"], ["wide", "late"]]  # late did not take h2 before wide


@pytest.mark.parametrize("path", ["/vr:srv6/vr:connection[vr:name='vc-r3']/vr:id", None])
def test_only_the_refusing_request_fails(path: str | None) -> None:
    refusal = AgentError("h2", "no router 'nosuch'", "invalid-value", path)
    rec = Recorder({"r3": refusal})
    members = [member(f"r{i}", ("h1", "h2")) for i in range(8)]
    results = asyncio.run(submit_all(GroupCommit(rec), members, rec))
    assert results == [None, None, None, refusal, None, None, None, None]
    if path is not None:  # named: the others go again as one group
        assert rec.groups[2:] == [["r1", "r2", "r4", "r5", "r6", "r7"]]
    else:  # halves, down to r3 alone: far fewer than one transaction per request
        assert ["r3"] in rec.groups and len(rec.groups) <= 2 + 2 * 3


def test_an_unreachable_host_fails_those_that_need_it_and_no_others() -> None:
    gone = AgentError("h3", "cannot reach the agent")
    rec = Recorder({"r2": gone})
    members = [member("r0", ("h1",)), member("r1", ("h1",)), member("r2", ("h1", "h3"))]
    members.append(member("r3", ("h1", "h3")))
    results = asyncio.run(submit_all(GroupCommit(rec), members, rec))
    assert results == [None, None, gone, gone]
    assert rec.groups == [["r0"], ["r2", "r1", "r3"], ["r1"]]  # r2 covers the group: first


def test_after_the_commit_a_failure_fails_the_whole_group() -> None:
    journal = RuntimeError("database gone")
    failures = {
        "r1": JournalFailed({"r1": journal}),
        "r2": ConfirmError("h1", "no answer"),
    }
    for bad, err in failures.items():
        rec = Recorder({bad: err})  # type: ignore[dict-item]
        members = [member(f"r{i}", ("h1",)) for i in range(3)]
        results = asyncio.run(submit_all(GroupCommit(rec), members, rec))
        assert results[0] is None and len(rec.groups) == 2, rec.groups
        if bad == "r1":
            assert results[1] is journal and isinstance(results[2], AgentError)
        else:
            assert results[1] is err and results[2] is err


def test_the_first_member_of_a_group_touches_every_host_of_it() -> None:
    rec = Recorder()
    members = [
        member("r0", ("h1", "h2", "h3")),
        member("a", ("h1",)),
        member("b", ("h1", "h2")),
        member("c", ("h2", "h3")),
        member("d", ("h1", "h2", "h3")),
    ]
    asyncio.run(submit_all(GroupCommit(rec), members, rec))
    # after r0: b covers a; c is neither in nor over {h1, h2}: it waits, and so does d
    assert rec.groups == [["r0"], ["b", "a"], ["d", "c"]]


def test_groups_on_disjoint_hosts_run_side_by_side() -> None:
    rec = Recorder()
    members = [member("r0", ("h9",)), member("a", ("h1",)), member("b", ("h2",))]
    members.append(member("c", ("h1",)))
    asyncio.run(submit_all(GroupCommit(rec), members, rec))
    # a and b went while r0 still held h9 (the recorder's first transaction waits); c came
    # in the same turn as a, for the same host: it shares a's transaction
    assert rec.groups == [["r0"], ["a", "c"], ["b"]]


def test_what_is_left_of_a_split_group_is_regrouped_under_covering_owners() -> None:
    refusal = AgentError("h1", "refused", "invalid-value", "/vr:srv6/vr:connection[vr:name='vc-w']")
    rec = Recorder({"w": refusal})
    members = [member("r0", ("h1", "h2")), member("w", ("h1", "h2")), member("x", ("h1",))]
    members.append(member("y", ("h2",)))
    results = asyncio.run(submit_all(GroupCommit(rec), members, rec))
    assert results == [None, refusal, None, None]
    assert rec.groups[1] == ["w", "x", "y"]
    assert sorted(rec.groups[2:]) == [["x"], ["y"]]  # no member of {x, y} covers both
