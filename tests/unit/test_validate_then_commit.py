"""<validate> then <commit> of the same candidate checks it once, on an agent and on the
hosts in memory that stand in for agents; any change in between, of the candidate or of
running, has the commit check it again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.controller_memory_support import world
from tests.datastore_support import commit_as
from tests.unit.test_datastore_snapshot import router, tree
from vnet.agent.datastore import CANDIDATE, Datastore
from vnet.agent.datastore.validation import Validator
from vnet.controller.southbound import HostChange
from vnet.controller.southbound import datastore as memory_store
from vnet.model.agent_config import AgentConfig, User
from vnet.model.host import HostConfig
from vnet.model.yang.errors import RpcError

SESSION = "s1"


@pytest.fixture
def prepared(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The trees Validator really prepared (not answered from what it remembers)."""
    seen: list[dict[str, Any]] = []
    real = Validator._prepare

    def counting(self: Validator, t: dict[str, Any], running: dict[str, Any]) -> Any:
        seen.append(t)
        return real(self, t, running)

    monkeypatch.setattr(Validator, "_prepare", counting)
    return seen


def store(tmp_path: Path) -> Datastore:
    config = AgentConfig(state_dir=tmp_path, users=[User(name="admin", password="x")])
    return Datastore(config, apply_to_kernel=False)


async def stage(ds: Datastore, staged: dict[str, Any]) -> None:
    await ds.update(CANDIDATE, lambda _current: (staged, None), session=SESSION, in_place=False)


async def validated(ds: Datastore, staged: dict[str, Any]) -> None:
    """A started store with `staged` in its candidate, checked by <validate>."""
    await ds.start()
    await stage(ds, staged)
    ds.validate(CANDIDATE)


def test_a_commit_of_the_validated_candidate_checks_nothing_again(
    tmp_path: Path, prepared: list[dict[str, Any]]
) -> None:
    ds = store(tmp_path)

    async def main() -> None:
        await validated(ds, tree(router("r1", "10.1.0.1/24")))
        assert len(prepared) == 1
        await ds.commit(SESSION)
        assert len(prepared) == 1, "the commit checked the validated candidate again"
        assert [r["name"] for r in ds.running_snapshot()["vnet-router:routers"]["router"]] == ["r1"]

    asyncio.run(main())


def test_a_candidate_changed_after_validate_is_checked_again(
    tmp_path: Path, prepared: list[dict[str, Any]]
) -> None:
    ds = store(tmp_path)

    async def main() -> None:
        await validated(ds, tree(router("r1", "10.1.0.1/24")))
        # the same address twice on one network: the model refuses it
        await stage(ds, tree(router("r1", "10.1.0.1/24"), router("r2", "10.1.0.1/24")))
        prepared.clear()
        with pytest.raises(RpcError):
            await ds.commit(SESSION)
        assert len(prepared) == 1
        assert ds.running_snapshot().get("vnet-router:routers", {}).get("router", []) == []

    asyncio.run(main())


def test_running_changed_after_validate_has_the_commit_check_again(
    tmp_path: Path, prepared: list[dict[str, Any]]
) -> None:
    ds = store(tmp_path)

    async def main() -> None:
        staged = tree(router("r1", "10.1.0.1/24"))
        await validated(ds, staged)
        await commit_as(ds, tree(router("r9", "10.1.0.9/24")))  # running moves on meanwhile
        prepared.clear()
        await ds.commit(SESSION)
        assert prepared == [staged], "a commit over a new running reused an older check"

    asyncio.run(main())


def test_the_hosts_in_memory_check_a_validated_candidate_once_as_well(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The controller's logic tests run on hosts in memory that check as agents do: a commit
    of the candidate <validate> passed is not checked again there either, and a new edit
    is."""
    checked: list[HostConfig] = []
    real = memory_store.check_host

    def counting(hc: HostConfig) -> Any:
        checked.append(hc)
        return real(hc)

    monkeypatch.setattr(memory_store, "check_host", counting)
    hosts = world(tmp_path).hosts

    async def main() -> None:
        lease = await hosts.lock("h1")
        await hosts.edit("h1", lease, [HostChange("h1", delete=("vc1",))])
        await hosts.validate("h1", lease)
        await hosts.commit("h1", lease, "t1", 60)
        assert len(checked) == 1, "the validated candidate was checked again at commit"
        await hosts.confirm("h1", "t1")
        await hosts.edit("h1", lease, [HostChange("h1", delete=("vc2",))])
        await hosts.commit("h1", lease, "t2", 60)
        assert len(checked) == 2 and checked[1] is not checked[0]

    asyncio.run(main())
