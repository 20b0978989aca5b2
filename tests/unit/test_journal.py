"""The agent's configuration journal (persist.py, journal.py) without a kernel: a change
replays to the tree it came from; a crash at any write of any commit (records, snapshots,
compactions) loads as the last acknowledged configuration or the one being written, and
the journal takes commits again; concurrent commits share one fsync and none is
acknowledged before it."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.datastore_support import commit_as
from vnet.agent.datastore import Datastore, journal, persist
from vnet.agent.datastore.persist import JOURNAL_FILE, RunningFile
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.errors import RpcError
from vnet.model.yang.guarantees import SRV6
from vnet.model.yang.module import NETWORKS, ROUTERS
from vnet.tools.wait import wait_until

Tree = dict[str, Any]


def router(name: str, address: int, admin: str = "up") -> dict[str, Any]:
    itf = {"name": "eth0", "network": "n1", "ipv4": f"10.1.0.{address}/24"}
    return {"name": name, "admin-state": admin, "interface": [itf]}


def network(vni: int) -> Tree:
    return {"network": [{"name": "n1", "tenant": "a", "vni": vni, "ipv4-prefix": "10.1.0.0/24"}]}


def connection(name: str, port: int) -> dict[str, Any]:
    ingress = {"router": "r1", "destination": "10.3.0.1", "destination-port": port}
    return {"name": name, "id": port % 4000 + 1, "ingress": [ingress]}


def srv6_step(rng: random.Random, t: Tree, step: int) -> None:
    """One change of the SRv6 container: a connection made, changed, deleted, the
    connections reordered or emptied, the locators changed, the container gone."""
    srv6 = dict(t.get(SRV6, {"locator": [{"prefix": "fc00:1::/48", "router": "r1"}]}))
    conns = list(srv6.get("connection", []))
    what = rng.choice(["add", "add", "modify", "delete", "reorder", "locators", "empty", "gone"])
    if what == "add" or not conns:
        conns.append(connection(f"c{step}", step))
    elif what == "modify":
        k = rng.randrange(len(conns))
        conns[k] = connection(conns[k]["name"], step)
    elif what == "delete":
        conns.pop(rng.randrange(len(conns)))
    elif what == "reorder":
        rng.shuffle(conns)
    elif what == "locators":
        srv6["locator"] = [{"prefix": f"fc00:{step}::/48", "router": "r1"}]
    if what == "gone":
        t.pop(SRV6, None)
        return
    srv6["connection"] = conns
    if what == "empty":
        del srv6["connection"]
    t[SRV6] = srv6


def trees(count: int, seed: int) -> list[Tree]:
    """A history of configurations: routers and connections made, changed, deleted and
    reordered, the network and the locators changed, containers gone and back."""
    rng = random.Random(seed)
    out: list[Tree] = [{}]
    for step in range(count):
        t = {k: v for k, v in out[-1].items()}
        routers = list(t.get(ROUTERS, {}).get("router", []))
        what = rng.choice(
            ["add", "add", "modify", "delete", "reorder", "network", "clear", "srv6", "srv6"]
        )
        if what == "srv6":
            srv6_step(rng, t, step)
            out.append(t)
            continue
        if what == "add" or not routers:
            routers.append(router(f"r{step}", step % 250 + 1))
        elif what == "modify":
            k = rng.randrange(len(routers))
            routers[k] = router(routers[k]["name"], step % 250 + 1, rng.choice(["up", "down"]))
        elif what == "delete":
            routers.pop(rng.randrange(len(routers)))
        elif what == "reorder":
            rng.shuffle(routers)
        elif what == "network":
            t[NETWORKS] = network(rng.randrange(1, 100))
        if what == "clear":
            t.pop(ROUTERS, None)
        else:
            t[ROUTERS] = {"router": routers}
        out.append(t)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_a_change_replays_to_the_tree_it_came_from(seed: int) -> None:
    history = trees(60, seed)
    for old, new in itertools.pairwise(history):
        record = journal.change(old, new)
        lines = journal.encode({"seq": 1, **record})
        (decoded,), size = journal.decode(lines)
        assert size == len(lines)
        assert journal.replay(old, decoded) == new, record


def test_a_change_is_as_large_as_what_changed() -> None:
    many = {ROUTERS: {"router": [router(f"r{i}", i % 250 + 1) for i in range(1000)]}}
    more = {ROUTERS: {"router": [*many[ROUTERS]["router"], router("new", 7)]}}
    assert len(journal.encode(journal.change(many, more))) < 200
    locators = [{"prefix": "fc00:1::/48", "router": "r1"}]
    conns = {
        SRV6: {"locator": locators, "connection": [connection(f"c{i}", i) for i in range(1000)]}
    }
    one_more = {
        SRV6: {"locator": locators, "connection": [*conns[SRV6]["connection"], connection("n", 7)]}
    }
    one_less = {SRV6: {"locator": locators, "connection": conns[SRV6]["connection"][1:]}}
    assert len(journal.encode(journal.change(conns, one_more))) < 200
    assert len(journal.encode(journal.change(conns, one_less))) < 200


class Crash(Exception):
    """The process dies here."""


class CrashAt:
    """Counts the journal's and snapshot's disk calls; at call `at` the process dies (a
    write gets half of its bytes onto disk first)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at: int) -> None:
        self.at, self.calls, self.renames = at, 0, 0
        self.real = {name: getattr(os, name) for name in ("write", "ftruncate", "fsync")}
        for name in self.real:
            monkeypatch.setattr(os, name, self._wrap(name))
        self.replace = Path.replace
        monkeypatch.setattr(Path, "replace", self._wrap_replace())

    def _tick(self) -> bool:
        self.calls += 1
        return self.calls == self.at

    def _wrap(self, name: str) -> Any:
        real = self.real[name]

        def call(fd: int, *args: Any) -> Any:
            if self._tick():
                if name == "write":
                    data = args[0]
                    real(fd, bytes(data[: len(data) // 2]))
                raise Crash(name)
            return real(fd, *args)

        return call

    def _wrap_replace(self) -> Any:
        real = self.replace

        def replace(path: Path, target: Any) -> Any:
            self.renames += 1
            if self._tick():
                raise Crash("rename")
            return real(path, target)

        return replace


def commit_all(state_dir: Path, history: list[Tree], acknowledged: list[int]) -> None:
    """Commit each tree in turn as the datastore does (append, then sync before the
    answer); `acknowledged` gets the index of each tree answered."""
    file = RunningFile(state_dir)
    file.load()
    for i, tree in enumerate(history[1:], start=1):
        rollback = history[i - 1] if i % 7 == 3 else None  # confirmed commits now and then
        file.append(tree, rollback)
        file.sync()
        acknowledged.append(i)


@pytest.mark.parametrize("seed", range(3))
def test_a_crash_at_any_write_loads_the_acknowledged_or_the_written_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(persist, "COMPACT_MIN", 300)  # compactions within the history
    history = trees(25, seed)
    clean = tmp_path / "clean"
    clean.mkdir()
    with monkeypatch.context() as m:
        counter = CrashAt(m, at=0)
        commit_all(clean, history, [])
        total = counter.calls
    assert total >= 2 * len(history) and counter.renames >= 2, "records and compactions"
    for at in range(1, total + 1):
        state_dir = tmp_path / f"crash{at}"
        state_dir.mkdir()
        acknowledged: list[int] = []
        with monkeypatch.context() as m:
            CrashAt(m, at)
            with pytest.raises(Crash):
                commit_all(state_dir, history, acknowledged)
        last = acknowledged[-1] if acknowledged else 0
        after = RunningFile(state_dir)
        after.recover()
        loaded = after.load()
        assert loaded in (history[last], history[min(last + 1, len(history) - 1)]), at
        # the journal goes on: a commit after the restart is there at the next one
        after.append(history[-1], None)
        after.sync()
        assert RunningFile(state_dir).load() == history[-1], at
        shutil.rmtree(state_dir)


def test_concurrent_commits_share_one_fsync_and_none_is_answered_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first commit's fsync is held until nine more have been written: it covers them
    all, and no commit needs an fsync of its own. No answer, and no read, sees a commit
    before its fsync."""
    release, syncing = threading.Event(), threading.Event()
    fsyncs: list[int] = []
    real_sync = RunningFile.sync

    def held_sync(file: RunningFile) -> None:
        syncing.set()
        release.wait(30)
        real_sync(file)
        fsyncs.append(1)

    monkeypatch.setattr(RunningFile, "sync", held_sync)
    names = [f"r{i}" for i in range(10)]

    async def main() -> None:
        config = AgentConfig(state_dir=tmp_path, users=[User(name="admin", password="x")])
        ds = Datastore(config, apply_to_kernel=False)
        await ds.start()
        base = {NETWORKS: network(10)}
        commits = []
        for k in range(len(names)):
            t = {
                **base,
                ROUTERS: {"router": [router(n, i + 1) for i, n in enumerate(names[: k + 1])]},
            }
            commits.append(asyncio.create_task(commit_as(ds, t)))
            await asyncio.sleep(0)  # in order: each writes after the one before
        await asyncio.get_running_loop().run_in_executor(None, syncing.wait, 30)
        written = lambda: len(ds.running.get(ROUTERS, {}).get("router", [])) == len(names)  # noqa: E731
        await asyncio.to_thread(wait_until, written, 30, "all ten commits written")
        assert not any(c.done() for c in commits), "a commit was answered before its fsync"
        assert ds.running_snapshot() == {}, "a read saw a commit before its fsync"
        release.set()
        await asyncio.gather(*commits)
        assert len(ds.running_snapshot()[ROUTERS]["router"]) == 10
        await ds.close()

    asyncio.run(main())
    assert len(fsyncs) == 1, "the nine commits written during the first fsync share it"
    assert RunningFile(tmp_path).load()[ROUTERS]["router"][-1]["name"] == "r9"
    assert (tmp_path / JOURNAL_FILE).exists()


def test_a_failed_fsync_undoes_the_commits_waiting_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An fsync that fails (EIO): the commits it was to make durable are answered with an
    error and undone; running, the files and the next commit go on from the last
    configuration on disk."""
    real_sync = RunningFile.sync
    failures = [OSError(5, "Input/output error")]

    def failing_sync(file: RunningFile) -> None:
        if failures:
            raise failures.pop()
        real_sync(file)

    monkeypatch.setattr(RunningFile, "sync", failing_sync)
    base = {NETWORKS: network(10)}

    def with_routers(*names: str) -> Tree:
        routers = [router(n, i + 1) for i, n in enumerate(names)]
        return {**base, ROUTERS: {"router": routers}}

    async def main() -> None:
        config = AgentConfig(state_dir=tmp_path, users=[User(name="admin", password="x")])
        ds = Datastore(config, apply_to_kernel=False)
        await ds.start()
        ds.file.save(with_routers("r1"))  # on disk before the failing fsync
        ds.running = ds.durable = ds.candidate = ds.file.load()
        ds.validator.forget()
        with pytest.raises(RpcError, match="the change was undone"):
            await commit_as(ds, with_routers("r1", "r2"))
        assert ds.running_snapshot() == ds.running == with_routers("r1")
        assert RunningFile(tmp_path).load() == with_routers("r1")
        await commit_as(ds, with_routers("r1", "r3"))
        await ds.close()

    asyncio.run(main())
    routers = RunningFile(tmp_path).load()[ROUTERS]["router"]
    assert [r["name"] for r in routers] == ["r1", "r3"]
