"""NACM (RFC 8341): rule paths, read filtering, write and exec decisions, the tenant
template and the recovery user, on RFC 7951 trees (no agent, no kernel)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from vnet.agent.nacm import NACM, Nacm
from vnet.agent.nacm import paths as nacm_paths
from vnet.model.agent_config import AgentConfig, User
from vnet.model.yang.errors import ErrorTag, RpcError

NETS = "vnet-router:virtual-networks"
VRS = "vnet-router:routers"


def _router(name: str, network: str, index: int) -> dict[str, Any]:
    return {
        "name": name,
        "index": index,
        "interface": [{"name": "eth0", "network": network, "ipv4": f"10.0.{index}.1/24"}],
        "route": [{"destination": "0.0.0.0/0", "next-hop": f"10.0.{index}.254"}],
    }


def _tree(nacm: dict[str, Any] | None = None) -> dict[str, Any]:
    tree: dict[str, Any] = {
        NETS: {
            "network": [
                {"name": "na", "tenant": "A", "vni": 10},
                {"name": "nb", "tenant": "B", "vni": 20},
            ]
        },
        VRS: {"router": [_router("ra", "na", 1), _router("rb", "nb", 2)]},
    }
    if nacm is not None:
        tree[NACM] = nacm
    return tree


def _config(tmp_path: Path) -> AgentConfig:
    return AgentConfig(
        state_dir=tmp_path,
        users=[
            User(name="root", password="x"),
            User(name="alice", password="x", tenant="A"),
            User(name="bob", password="x", groups=["readers"]),
            User(name="carol", password="x"),
        ],
    )


def _names(tree: dict[str, Any], member: str, lst: str) -> list[str]:
    return [e["name"] for e in tree.get(member, {}).get(lst, [])]


def test_rule_paths_parse_and_name_the_bad_step() -> None:
    p = nacm_paths.parse("/vr:routers/vr:router[vr:name='r1']/route")
    assert [s.name for s in p.steps] == ["routers", "router", "route"]
    assert p.steps[1].predicates == (("name", "r1"),)
    assert nacm_paths.parse("/").steps == ()
    assert nacm_paths.parse('/vnet-router:virtual-networks/network[tenant="A"]').module == (
        "vnet-router"
    )
    with pytest.raises(nacm_paths.PathError, match=r"'routerz' is not a data node of routers"):
        nacm_paths.parse("/vr:routers/vr:routerz")
    with pytest.raises(nacm_paths.PathError, match=r"no module with prefix or name 'xx'"):
        nacm_paths.parse("/xx:routers")
    with pytest.raises(nacm_paths.PathError, match=r"'colour' is not a leaf of the list"):
        nacm_paths.parse("/vr:routers/vr:router[vr:colour='red']")
    with pytest.raises(nacm_paths.PathError, match="must start with '/'"):
        nacm_paths.parse("vr:routers")


def test_invalid_rule_path_is_rejected_with_the_rule_path(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    bad = {
        "rule-list": [
            {
                "name": "ops",
                "group": ["*"],
                "rule": [{"name": "r1", "path": "/vr:routers/vr:nope", "action": "deny"}],
            }
        ]
    }
    with pytest.raises(RpcError) as err:
        nacm.authorise_write("root", _tree(), _tree(bad))
    assert err.value.tag == ErrorTag.INVALID_VALUE
    assert err.value.path == (
        "/nacm:nacm/nacm:rule-list[nacm:name='ops']/nacm:rule[nacm:name='r1']/nacm:path"
    )
    assert "'nope' is not a data node of routers" in str(err.value)


def test_recovery_user_and_default_deny_write(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    old = _tree()
    new = copy.deepcopy(old)
    new[VRS]["router"][0]["admin-state"] = "down"
    nacm.authorise_write("root", old, new)  # the first user is the recovery user
    nacm.authorise_write(None, old, new)  # the agent itself
    with pytest.raises(RpcError) as err:
        nacm.authorise_write("carol", old, new)  # no rule: write-default deny
    assert err.value.tag == ErrorTag.ACCESS_DENIED
    assert err.value.path == "/vr:routers/vr:router[vr:name='ra']/vr:admin-state"
    assert nacm.readable("carol", old, old) == old  # read-default permit
    # the rules themselves are default-deny-all: carol cannot read them
    assert NACM not in nacm.readable("carol", _tree({}), _tree({"enable-nacm": True}))


def test_tenant_template_reads_only_its_own(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    tree = _tree()
    seen = nacm.readable("alice", tree, tree)
    assert _names(seen, VRS, "router") == ["ra"]
    assert _names(seen, NETS, "network") == ["na"]
    assert seen[VRS]["router"][0] == tree[VRS]["router"][0]  # all of its own VR
    assert nacm.readable("alice", tree, {"vnet-router:hypervisor": {"host-name": "h"}}) == {}


def test_tenant_admin_manages_its_vrs_only(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    old = _tree()
    own = copy.deepcopy(old)
    own[VRS]["router"].append(_router("ra2", "na", 3))
    own[VRS]["router"][0]["route"] = []
    nacm.authorise_write("alice", old, own)  # create and change its own
    foreign = copy.deepcopy(old)
    foreign[VRS]["router"].append(_router("rx", "nb", 4))
    with pytest.raises(RpcError) as err:
        nacm.authorise_write("alice", old, foreign)
    assert err.value.tag == ErrorTag.ACCESS_DENIED
    assert err.value.path == "/vr:routers/vr:router[vr:name='rx']"
    hijack = copy.deepcopy(old)  # moving B's VR onto A's network
    hijack[VRS]["router"][1]["interface"][0]["network"] = "na"
    with pytest.raises(RpcError):
        nacm.authorise_write("alice", old, hijack)
    delete_b = copy.deepcopy(old)
    del delete_b[VRS]["router"][1]
    with pytest.raises(RpcError):
        nacm.authorise_write("alice", old, delete_b)
    net = copy.deepcopy(old)
    net[NETS]["network"][0]["vni"] = 11
    with pytest.raises(RpcError):  # its networks are read-only to it
        nacm.authorise_write("alice", old, net)


def _groups_and_rules(rules: list[dict[str, Any]], **settings: Any) -> dict[str, Any]:
    return {
        **settings,
        "groups": {"group": [{"name": "ops", "user-name": ["carol"]}]},
        "rule-list": [{"name": "ops", "group": ["ops", "readers"], "rule": rules}],
    }


def test_rule_order_groups_and_key_predicates(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    rules = [
        {
            "name": "rb",
            "path": "/vr:routers/vr:router[vr:name='rb']",
            "action": "deny",
            "access-operations": "read update",
        },
        {"name": "all-vrs", "path": "/vr:routers", "action": "permit"},
    ]
    tree = _tree(_groups_and_rules(rules))
    for user in ("carol", "bob"):  # carol via the NACM group, bob via an external group
        assert _names(nacm.readable(user, tree, tree), VRS, "router") == ["ra"]
    new = copy.deepcopy(tree)
    new[VRS]["router"][0]["admin-state"] = "down"
    nacm.authorise_write("carol", tree, new)  # permitted by 'all-vrs'
    new[VRS]["router"][1]["interface"][0]["ipv4"] = "10.0.2.2/24"
    with pytest.raises(RpcError):
        nacm.authorise_write("carol", tree, new)  # 'rb' comes first
    delete_rb = copy.deepcopy(tree)
    del delete_rb[VRS]["router"][1]
    nacm.authorise_write("carol", tree, delete_rb)  # 'rb' does not deny delete


def test_denied_parent_keeps_permitted_descendants_with_keys(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    rules = [
        {
            "name": "routes",
            "path": "/vr:routers/vr:router/vr:route",
            "action": "permit",
            "access-operations": "read",
        }
    ]
    tree = _tree(_groups_and_rules(rules, **{"read-default": "deny"}))
    seen = nacm.readable("carol", tree, tree)
    assert seen == {
        VRS: {"router": [{"name": r["name"], "route": r["route"]} for r in tree[VRS]["router"]]}
    }


def test_exec_rules_and_default_deny_operations(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    tree = _tree(
        _groups_and_rules(
            [
                {
                    "name": "no-commit",
                    "module-name": "ietf-netconf",
                    "rpc-name": "commit",
                    "access-operations": "exec",
                    "action": "deny",
                }
            ]
        )
    )
    assert not nacm.may_exec("carol", tree, "ietf-netconf", "commit")
    assert nacm.may_exec("carol", tree, "ietf-netconf", "get-config")
    assert not nacm.may_exec("carol", tree, "ietf-netconf", "kill-session")
    assert nacm.may_exec("carol", tree, "ietf-netconf", "close-session")
    assert nacm.may_exec("root", tree, "ietf-netconf", "kill-session")
    off = _tree({"enable-nacm": False})
    assert nacm.may_exec("carol", off, "ietf-netconf", "kill-session")


def test_notifications_only_about_readable_routers(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    tree = _tree()
    assert nacm.may_read_router("alice", tree, "ra")
    assert not nacm.may_read_router("alice", tree, "rb")
    assert not nacm.may_read_router("alice", tree, "gone")
    assert nacm.may_read_router("carol", tree, "rb")  # read-default permit
    assert nacm.may_read_router("root", tree, "gone")


def test_tenant_admin_creates_the_first_vr_and_deletes_its_own(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    empty = {NETS: _tree()[NETS]}
    first = {**empty, VRS: {"router": [_router("ra", "na", 1)]}}
    nacm.authorise_write("alice", empty, first)  # the routers container has no existence of its own
    nacm.authorise_write("alice", first, empty)
    with pytest.raises(RpcError) as err:  # but not the whole routers container of others
        nacm.authorise_write("alice", _tree(), empty)
    assert err.value.path == "/vr:routers/vr:router[vr:name='rb']"


def test_rule_paths_are_stored_in_the_rfc_7951_form_libyang_accepts(tmp_path: Path) -> None:
    from vnet.model.yang.schema import validate

    nacm = Nacm(_config(tmp_path))
    rules = [
        {"name": "a", "path": "/vr:routers/vr:router[vr:name='r1']/vr:route", "action": "deny"},
        {"name": "b", "path": "/vnet-router:virtual-networks/network[tenant=\"A\"]",
         "action": "permit"},
        {"name": "c", "path": "/", "action": "deny"},
    ]  # fmt: skip
    stored = nacm.authorise_write("root", _tree(), _tree(_groups_and_rules(rules)))
    assert [r["path"] for r in stored[NACM]["rule-list"][0]["rule"]] == [
        "/vnet-router:routers/router[name='r1']/route",
        "/vnet-router:virtual-networks/network[tenant='A']",
        "/",
    ]
    dnode = validate(stored)  # raises if libyang refuses the paths
    assert dnode is not None
    dnode.free()
    seen = nacm.readable("carol", stored, stored)  # 'c' hides all but what 'b' permits
    assert _names(seen, NETS, "network") == ["na"] and VRS not in seen


# -- the fast read walk against a plain reading of RFC 8341 ----------------------------
class _Reference:
    """Each node decided on its own: the first rule (in order) with read whose path names
    it or an ancestor; a node stays if permitted or if a descendant stays."""

    def __init__(self, rules: list[dict[str, Any]], tree: dict[str, Any]):
        self.rules = [(nacm_paths.parse(r["path"]), r["action"] == "permit") for r in rules]
        self.tenants = {n["name"]: n.get("tenant") for n in tree.get(NETS, {}).get("network", [])}

    def holds(self, step: nacm_paths.Step, entry: dict[str, Any]) -> bool:
        for leaf, want in step.predicates:
            if leaf in entry:
                ok = str(entry[leaf]) == want
            else:
                ts = {self.tenants.get(i.get("network")) for i in entry.get("interface", [])}
                ok = leaf == "tenant" and len(ts) == 1 and ts.pop() == want
            if not ok:
                return False
        return True

    def decide(self, ancestry: list[tuple[str, Any]]) -> bool:
        for path, permit in self.rules:
            if len(path.steps) <= len(ancestry) and all(
                s.name == name.split(":")[-1] and self.holds(s, value)
                for s, (name, value) in zip(path.steps, ancestry, strict=False)
            ):
                return permit
        return True  # read-default permit

    def walk(self, name: str, value: Any, ancestry: list[tuple[str, Any]], keys: tuple) -> Any:
        here = [*ancestry, (name, value)]
        permit = self.decide(here)
        if not isinstance(value, dict):
            return value if permit else None
        out = {}
        for k, v in value.items():
            if isinstance(v, list) and v and isinstance(v[0], dict):
                kept = [e for e in (self.walk(k, e, here, ("name", "destination")) for e in v) if e]
            else:
                kept = self.walk(k, v, here, ())
            if kept not in (None, []):
                out[k] = kept
        if keys and (permit or out):
            out = {**{k: value[k] for k in keys if k in value}, **out}
        return out if (permit or out) else None


def _reference_readable(rules: list[dict[str, Any]], tree: dict[str, Any]) -> dict[str, Any]:
    ref = _Reference(rules, tree)
    return {m: r for m, v in tree.items() if (r := ref.walk(m, v, [], ())) is not None}


def _canon(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _canon(v) for k, v in sorted(x.items())}
    if isinstance(x, list):
        return [_canon(v) for v in x]
    return x


@pytest.mark.parametrize(
    "rules",
    [
        [("/vr:routers/vr:router[vr:name='rb']", "deny"), ("/vr:routers", "permit")],
        [("/vr:routers/vr:router/vr:route", "deny"), ("/", "deny")],
        [("/vr:routers/vr:router[vr:tenant='A']/vr:interface", "permit"), ("/", "deny")],
        [
            ("/vr:routers/vr:router[vr:name='ra']/vr:route[vr:destination='0.0.0.0/0']", "deny"),
            ("/vr:routers/vr:router/vr:interface/vr:ipv4", "deny"),
            ("/vr:virtual-networks/vr:network[vr:tenant='B']", "deny"),
            ("/vr:routers/vr:router[vr:tenant='B']", "deny"),
        ],
        [("/vr:routers/vr:router/vr:interface[vr:name='eth0']/vr:network", "deny")],
    ],
)
def test_read_walk_matches_a_plain_reading(tmp_path: Path, rules: list[tuple[str, str]]) -> None:
    entries = [
        {"name": f"x{i}", "path": p, "action": a, "access-operations": "read"}
        for i, (p, a) in enumerate(rules)
    ]
    tree = _tree(_groups_and_rules(entries))
    tree[VRS]["router"].append(_router("rc", "na", 3))
    tree[VRS]["router"][2]["interface"].append({"name": "eth1", "network": "nb"})
    data = {k: v for k, v in tree.items() if k != NACM}
    fast = Nacm(_config(tmp_path)).access("carol", tree)
    assert fast is not None
    assert _canon(fast.readable(data)) == _canon(_reference_readable(entries, data))


SRV6 = "vnet-router:srv6"


def _connection(name: str, network: str, lan: str) -> dict[str, Any]:
    ingress = {"router": "ra", "network": network, "lan-network": lan, "segment": ["fc00::1"]}
    return {"name": name, "id": 1, "ingress": [ingress]}


def test_tenant_admin_manages_its_connections_only(tmp_path: Path) -> None:
    nacm = Nacm(_config(tmp_path))
    old = _tree()
    old[SRV6] = {
        "locator": [{"prefix": "fc00::/48", "router": "ra"}],
        "connection": [_connection("cb", "nb", "nb")],
    }
    seen = nacm.readable("alice", old, old)
    assert SRV6 not in seen  # B's connection and the operator's locators are hidden
    own = copy.deepcopy(old)
    own[SRV6]["connection"].append(_connection("ca", "na", "na"))
    nacm.authorise_write("alice", old, own)
    assert _names(nacm.readable("alice", own, own), SRV6, "connection") == ["ca"]
    mixed = copy.deepcopy(old)  # a piece on A's network with a LAN of B's
    mixed[SRV6]["connection"].append(_connection("cx", "na", "nb"))
    with pytest.raises(RpcError) as err:
        nacm.authorise_write("alice", old, mixed)
    assert err.value.tag == ErrorTag.ACCESS_DENIED
    assert err.value.path == "/vr:srv6/vr:connection[vr:name='cx']"
    locators = copy.deepcopy(own)
    locators[SRV6]["locator"] = []
    with pytest.raises(RpcError):  # the host's locators are the operator's
        nacm.authorise_write("alice", own, locators)


def test_a_tenant_neither_holds_nor_undoes_the_shared_datastores(tmp_path: Path) -> None:
    nacm, running = Nacm(_config(tmp_path)), _tree()
    assert not nacm.may_exec("alice", running, "ietf-netconf", "lock")
    assert nacm.may_exec("alice", running, "ietf-netconf", "unlock")  # only ever its own
    assert nacm.may_exec("root", running, "ietf-netconf", "lock")
    own, others = copy.deepcopy(running), copy.deepcopy(running)
    own[VRS]["router"].append(_router("ra2", "na", 3))
    others[VRS]["router"].append(_router("rb2", "nb", 4))
    nacm.authorise_commit("alice", running, own, confirmed=False)
    nacm.authorise_discard("alice", running, own, running)
    for user in ("alice", "carol"):  # a tenant; a user with write-default deny
        with pytest.raises(RpcError) as err:
            nacm.authorise_discard(user, running, others, running)
        assert err.value.tag == ErrorTag.ACCESS_DENIED
        assert err.value.path == "/vr:routers/vr:router[vr:name='rb2']"
    with pytest.raises(RpcError) as err:
        nacm.authorise_commit("alice", running, others, confirmed=False)
    assert "commit would make a change user 'alice' may not make" in err.value.message
    with pytest.raises(RpcError) as err:  # it would hold the datastore as a lock does
        nacm.authorise_commit("alice", running, own, confirmed=True)
    assert err.value.tag == ErrorTag.ACCESS_DENIED
    nacm.authorise_commit("root", running, others, confirmed=True)  # the recovery user
    grant = {  # the datastore's rules come first: an operator may let a tenant lock
        "rule-list": [
            {
                "name": "ops",
                "group": ["tenant-A"],
                "rule": [
                    {
                        "name": "may-lock",
                        "module-name": "ietf-netconf",
                        "rpc-name": "lock",
                        "access-operations": "exec",
                        "action": "permit",
                    }
                ],
            }
        ]
    }
    assert nacm.may_exec("alice", _tree(grant), "ietf-netconf", "lock")
