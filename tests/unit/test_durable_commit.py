"""The datastore's commit path without a kernel: disk refusals leave memory and disk as they
were, an interrupted commit is undone at start, and the confirmed-commit state machine
(RFC 6241 Sec. 8.4). Kernel, read-only and full disks on real agents: the integration tests
test_durable_commit.py and test_confirmed_commit.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.datastore_support import commit_as
from vnet.agent.datastore import CANDIDATE, Datastore
from vnet.agent.datastore.persist import (
    FORMAT_2,
    JOURNAL_FILE,
    RUNNING_FILE,
    STAGED_FILE,
    RunningFile,
)
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.errors import ErrorTag, RpcError

ROUTERS = "vnet-router:routers"
NETWORKS = {"network": [{"name": "n1", "tenant": "a", "vni": 10, "ipv4-prefix": "10.1.0.0/24"}]}


def tree(*names: str) -> dict[str, Any]:
    routers = [
        {"name": n, "interface": [{"name": "eth0", "network": "n1", "ipv4": f"10.1.0.{i + 1}/24"}]}
        for i, n in enumerate(names)
    ]
    return {"vnet-router:virtual-networks": NETWORKS, ROUTERS: {"router": routers}}


def names(t: dict[str, Any]) -> list[str]:
    return [r["name"] for r in t.get(ROUTERS, {}).get("router", [])]


def datastore(state_dir: Path) -> Datastore:
    config = AgentConfig(state_dir=state_dir, users=[User(name="admin", password="x")])
    return Datastore(config, apply_to_kernel=False)


def run(state_dir: Path, body: Callable[[Datastore], Awaitable[None]]) -> None:
    async def main() -> None:
        ds = datastore(state_dir)
        await ds.start()
        try:
            await body(ds)
        finally:
            await ds.close()

    asyncio.run(main())


def on_disk(state_dir: Path) -> list[str]:
    """The VRs a start would load (snapshot and journal, read afresh)."""
    return names(RunningFile(state_dir).load())


def rollback_on_disk(state_dir: Path) -> list[str] | None:
    point = RunningFile(state_dir).load_rollback()
    return None if point is None else names(point)


async def stage_candidate(ds: Datastore, t: dict[str, Any], session: str = "1") -> None:
    await ds.update(CANDIDATE, lambda _: (t, None), session)


def test_a_refused_save_changes_nothing_and_leaves_no_file(tmp_path: Path) -> None:
    async def body(ds: Datastore) -> None:
        await commit_as(ds, tree("r1"))
        journal, kept = tmp_path / JOURNAL_FILE, tmp_path / "kept"
        journal.rename(kept)
        journal.mkdir()  # the journal's write now fails (EISDIR)
        with pytest.raises(RpcError) as info:
            await commit_as(ds, tree("r1", "r2"))
        assert info.value.tag == ErrorTag.OPERATION_FAILED
        assert "nothing was changed" in info.value.message
        assert names(ds.running_snapshot()) == ["r1"]
        journal.rmdir()
        kept.rename(journal)
        assert on_disk(tmp_path) == ["r1"]

    run(tmp_path, body)
    assert sorted(p.name for p in tmp_path.iterdir()) == [JOURNAL_FILE]


def test_start_drops_a_commit_interrupted_before_its_commit_point(tmp_path: Path) -> None:
    run(tmp_path, lambda ds: commit_as(ds, tree("r1")))
    (tmp_path / STAGED_FILE).write_text(json.dumps(tree("r1", "r2")))

    async def body(ds: Datastore) -> None:
        assert names(ds.running_snapshot()) == ["r1"]

    run(tmp_path, body)
    assert not (tmp_path / STAGED_FILE).exists()


def test_a_cancelled_caller_never_leaves_a_half_commit(tmp_path: Path) -> None:
    """The caller goes away while the (slow) kernel step runs: the commit is undone as a
    whole before its commit point, and the next writer finds the lock free."""

    async def body(ds: Datastore) -> None:
        ds.apply_to_kernel = True
        entered = asyncio.Event()

        async def slow_apply(hc: object, events: object) -> Any:
            entered.set()
            await asyncio.sleep(0.2)
            return None  # nothing to undo in a datastore without a kernel

        ds._apply = slow_apply  # type: ignore[method-assign]
        caller = asyncio.create_task(commit_as(ds, tree("r1")))
        await entered.wait()
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert names(ds.running_snapshot()) == []
        assert not (tmp_path / STAGED_FILE).exists()
        ds.apply_to_kernel = False
        await commit_as(ds, tree("r2"))
        assert names(ds.running_snapshot()) == ["r2"] and on_disk(tmp_path) == ["r2"]

    run(tmp_path, body)


def test_unconfirmed_commit_goes_back_at_its_timeout(tmp_path: Path) -> None:
    timeout = 1.0  # the commit is still pending when it is answered, on a loaded machine too

    async def body(ds: Datastore) -> None:
        await commit_as(ds, tree("r1"))
        await stage_candidate(ds, tree("r1", "r2"))
        await ds.commit("1", confirmed=True, confirm_timeout=timeout)
        assert names(ds.running_snapshot()) == ["r1", "r2"]
        assert rollback_on_disk(tmp_path) == ["r1"]
        await asyncio.sleep(timeout + 0.3)
        assert names(ds.running_snapshot()) == ["r1"] and on_disk(tmp_path) == ["r1"]
        assert ds.confirms.pending is None and rollback_on_disk(tmp_path) is None

    run(tmp_path, body)


def test_confirming_commit_keeps_it_and_only_its_session_may_confirm(tmp_path: Path) -> None:
    """The timeout runs from the commit point, before its fsync is waited for: 0.3 s was
    gone before the next call on a loaded machine (CI, three workers), and the refusal
    never came. 2 s leave room for that; the wait after the confirm outlasts them."""
    timeout = 2.0

    async def body(ds: Datastore) -> None:
        await stage_candidate(ds, tree("r1"))
        await ds.commit("1", confirmed=True, confirm_timeout=timeout)
        with pytest.raises(RpcError, match="session 1"):
            await ds.commit("2")
        await ds.commit("1")
        await asyncio.sleep(timeout + 0.2)
        assert names(ds.running_snapshot()) == ["r1"] and on_disk(tmp_path) == ["r1"]
        assert rollback_on_disk(tmp_path) is None

    run(tmp_path, body)


def test_persist_survives_its_session_and_needs_its_token(tmp_path: Path) -> None:
    async def body(ds: Datastore) -> None:
        await stage_candidate(ds, tree("r1"))
        await ds.commit("1", confirmed=True, persist="tok")
        ds.release("1")
        await asyncio.sleep(0.05)
        assert names(ds.running_snapshot()) == ["r1"], "persist keeps it past its session"
        with pytest.raises(RpcError, match="persist-id"):
            await ds.cancel_commit("2", persist_id="wrong")
        await ds.cancel_commit("2", persist_id="tok")
        assert names(ds.running_snapshot()) == [] and on_disk(tmp_path) == []

    run(tmp_path, body)


def test_session_end_without_persist_rolls_back_the_whole_series(tmp_path: Path) -> None:
    async def body(ds: Datastore) -> None:
        await stage_candidate(ds, tree("r1"))
        await ds.commit("1", confirmed=True)
        await stage_candidate(ds, tree("r1", "r2"))
        await ds.commit("1", confirmed=True)  # a follow-up keeps the first rollback point
        await commit_as(ds, tree("r1", "r2", "r3"))  # another writer: goes back too
        assert rollback_on_disk(tmp_path) == []
        ds.release("1")
        await asyncio.sleep(0.1)
        assert names(ds.running_snapshot()) == [] and on_disk(tmp_path) == []

    run(tmp_path, body)


def test_a_pending_confirmed_commit_goes_back_at_the_next_start(tmp_path: Path) -> None:
    async def body(ds: Datastore) -> None:
        await commit_as(ds, tree("r1"))
        await stage_candidate(ds, tree("r2"))
        await ds.commit("1", confirmed=True, persist="p")

    run(tmp_path, body)  # the agent stops with it pending
    assert on_disk(tmp_path) == ["r2"]

    async def after(ds: Datastore) -> None:
        assert names(ds.running_snapshot()) == ["r1"]
        assert ds.confirms.pending is None

    run(tmp_path, after)
    assert on_disk(tmp_path) == ["r1"] and rollback_on_disk(tmp_path) is None


def test_cancel_commit_with_nothing_pending_is_an_error(tmp_path: Path) -> None:
    async def body(ds: Datastore) -> None:
        with pytest.raises(RpcError, match="no confirmed commit is pending"):
            await ds.cancel_commit("1")
        with pytest.raises(RpcError, match="persist-id"):
            await ds.commit("1", persist_id="nothing")

    run(tmp_path, body)


def test_an_older_agents_bare_running_file_still_loads(tmp_path: Path) -> None:
    (tmp_path / RUNNING_FILE).write_text(json.dumps(tree("r1")))

    async def body(ds: Datastore) -> None:
        assert names(ds.running_snapshot()) == ["r1"]

    run(tmp_path, body)


def test_an_older_agents_running_file_with_a_rollback_point_is_journalled(
    tmp_path: Path,
) -> None:
    """Format 2 (the whole tree and the rollback point in running.json) is read, written
    anew as a snapshot, and the commits after it go to the journal."""
    old = {"format": FORMAT_2, "running": tree("r1", "r2"), "rollback": tree("r1")}
    (tmp_path / RUNNING_FILE).write_text(json.dumps(old))

    async def body(ds: Datastore) -> None:
        assert names(ds.running_snapshot()) == ["r1"]  # the pending commit went back
        await commit_as(ds, tree("r1", "r3"))

    run(tmp_path, body)
    assert on_disk(tmp_path) == ["r1", "r3"] and rollback_on_disk(tmp_path) is None
    assert json.loads((tmp_path / RUNNING_FILE).read_text())["running"] == tree("r1")
    assert (tmp_path / JOURNAL_FILE).stat().st_size > 0
