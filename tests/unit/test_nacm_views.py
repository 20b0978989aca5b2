"""A user's read view of running after a commit judges only the VRs the commit changed
(Nacm.readable, policy._patched_view), and is always the view made afresh would be."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from vnet.agent.nacm import NACM, Nacm
from vnet.agent.nacm.access import Access
from vnet.model.agent_config import AgentConfig, User

from .test_nacm import _config

NETS = "vnet-router:virtual-networks"
VRS = "vnet-router:routers"
READERS_SKIP_ROUTES = {
    "enable-nacm": True,
    "rule-list": [
        {
            "name": "readers",
            "group": ["readers"],
            "rule": [
                {
                    "name": "no-routes",
                    "module-name": "vnet-router",
                    "path": "/vr:routers/vr:router/vr:route",
                    "access-operations": "read",
                    "action": "deny",
                }
            ],
        }
    ],
}


def router(name: str, network: str, index: int) -> dict[str, Any]:
    return {
        "name": name,
        "index": index,
        "interface": [
            {"name": "eth0", "network": network, "ipv4": f"10.{index // 250}.{index % 250}.1/24"}
        ],
        "route": [{"destination": "0.0.0.0/0", "next-hop": f"10.{index // 250}.{index % 250}.254"}],
    }


def running(count: int) -> dict[str, Any]:
    nets = [{"name": "na", "tenant": "A", "vni": 10}, {"name": "nb", "tenant": "B", "vni": 20}]
    vrs = [router(f"r{i}", "na" if i % 2 else "nb", i + 1) for i in range(count)]
    return {NETS: {"network": nets}, VRS: {"router": vrs}, NACM: READERS_SKIP_ROUTES}


def config(tmp_path: Path) -> AgentConfig:
    """test_nacm's users (alice of tenant A, bob a reader, carol unrestricted), and dave
    of tenant C, who has no VR."""
    base = _config(tmp_path)
    dave = User(name="dave", password="x", tenant="C")
    return base.model_copy(update={"users": [*base.users, dave]})


def with_routers(tree: dict[str, Any], routers: list[dict[str, Any]]) -> dict[str, Any]:
    """A commit's tree: a new VR list, everything else the same objects (copy on write)."""
    return {**tree, VRS: {"router": routers}}


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many VRs each whole-view computation was given."""
    sizes: list[int] = []
    real = Access.readable

    def counting(self: Access, tree: dict[str, Any]) -> dict[str, Any]:
        sizes.append(len(tree.get(VRS, {}).get("router", [])))
        return real(self, tree)

    monkeypatch.setattr(Access, "readable", counting)
    return sizes


def test_a_commit_with_many_vrs_present_judges_only_the_one_it_adds(
    tmp_path: Path, judged: list[int]
) -> None:
    nacm = Nacm(config(tmp_path))
    old = running(1000)
    assert len(nacm.readable("alice", old, old)[VRS]["router"]) == 500
    judged.clear()
    new = with_routers(old, [*old[VRS]["router"], router("r1000", "na", 1001)])
    view = nacm.readable("alice", new, new)
    assert judged == [1], "the whole running tree was judged again"
    assert [r["name"] for r in view[VRS]["router"]][-1] == "r1000"
    assert view == Nacm(config(tmp_path)).readable("alice", new, new)


def _commit(tree: dict[str, Any], rng: random.Random, step: int) -> dict[str, Any]:
    vrs = list(tree[VRS]["router"])
    kind = rng.choice(["add", "remove", "modify", "networks", "none-left"])
    if kind == "add":
        vrs.append(router(f"x{step}", rng.choice(["na", "nb", "nc"]), 2000 + step))
    elif kind == "remove" and vrs:
        vrs.pop(rng.randrange(len(vrs)))
    elif kind == "modify" and vrs:
        i = rng.randrange(len(vrs))
        vrs[i] = {**vrs[i], "interface": [{**vrs[i]["interface"][0], "network": "nb"}]}
    elif kind == "networks":  # more than VRs changed: the view is made afresh
        nets = [*tree[NETS]["network"], {"name": f"n{step}", "tenant": "C", "vni": 100 + step}]
        return {**tree, NETS: {"network": nets}}
    elif kind == "none-left":
        vrs = []
    return with_routers(tree, vrs)


@pytest.mark.parametrize("seed", range(5))
def test_the_patched_view_is_always_the_fresh_one(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    nacm = Nacm(config(tmp_path))
    tree = running(12)
    for step in range(40):
        tree = _commit(tree, rng, step)
        for user in ("alice", "bob", "carol", "dave"):
            fresh = Nacm(config(tmp_path)).readable(user, tree, tree)
            assert nacm.readable(user, tree, tree) == fresh, (seed, step, user)
