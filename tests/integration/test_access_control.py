"""NACM (RFC 8341) on a real agent: a tenant administrator over NETCONF (ncclient)
and RESTCONF (curl) sees and manages only its tenant's VRs, and cannot stop or undo
another tenant through the datastores they share (lock, discard-changes, commit,
confirmed commit, kill-session); the rules are configured over NETCONF itself, an
invalid rule path is refused at its path, and the recovery user can always repair
the rules."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from lxml import etree
from ncclient.operations.rpc import RPCError

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.tools import processes

from .agent_support import netconf_connect
from .conftest import require_tools, unique_lab

NS = "urn:vnet:yang:vnet-router"
NACM_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm"
PORTS = {"netconf": 8831, "restconf": 8444}
USERS = [
    {"name": "admin", "password": "adm1n-pw"},  # the first user: the recovery user
    {"name": "alice", "password": "al1ce-pw", "tenant": "A"},
    {"name": "bruno", "password": "brun0-pw", "tenant": "B"},
    {"name": "carol", "password": "car0l-pw"},
]
PASSWORDS = {u["name"]: u["password"] for u in USERS}

SETUP = f"""<config><virtual-networks xmlns="{NS}">
<network><name>na</name><tenant>A</tenant><vni>10</vni><ipv4-prefix>10.1.0.0/24</ipv4-prefix></network>
<network><name>nb</name><tenant>B</tenant><vni>20</vni><ipv4-prefix>10.2.0.0/24</ipv4-prefix></network>
</virtual-networks><routers xmlns="{NS}">
<router><name>ra</name><interface><name>eth0</name><network>na</network><ipv4>10.1.0.1/24</ipv4></interface></router>
<router><name>rb</name><interface><name>eth0</name><network>nb</network><ipv4>10.2.0.1/24</ipv4></interface></router>
</routers></config>"""


def _router(name: str, network: str, address: str) -> str:
    return (
        f'<config><routers xmlns="{NS}"><router><name>{name}</name><interface><name>eth0</name>'
        f"<network>{network}</network><ipv4>{address}</ipv4></interface></router></routers></config>"
    )


@pytest.fixture(scope="module")
def agent() -> Iterator[SandboxAgent]:
    require_tools("curl")
    host = HostSandbox(scope=unique_lab())
    sandbox = SandboxAgent(host, {"ports": PORTS, "users": USERS})
    try:
        host.create()
        sandbox.start("netconf,restconf")
        with _nc(sandbox, "admin") as m:
            m.edit_config(target="running", config=SETUP)
        yield sandbox
    finally:
        sandbox.stop(grace=5)
        problems = host.cleanup()
        assert not problems, f"the test left things behind: {problems}"


def _nc(a: SandboxAgent, user: str):  # type: ignore[no-untyped-def]
    return netconf_connect(a.host.namespace, "127.0.0.1", PORTS["netconf"], user, PASSWORDS[user])


def _names(xml: str, tag: str) -> list[str]:
    doc = etree.fromstring(xml.encode())
    entries = [e.findtext(f"{{{NS}}}name") for e in doc.iter(f"{{{NS}}}{tag}")]
    return [n for n in entries if n is not None]  # not an interface's <network> leaf


def _curl(a: SandboxAgent, user: str, method: str, path: str, body: str | None = None):  # type: ignore[no-untyped-def]
    argv = ["curl", "-sk", "-o", "-", "-w", "\n%{http_code}", "-u", f"{user}:{PASSWORDS[user]}"]
    argv += ["-X", method, "-H", "Accept: application/yang-data+json"]
    if body is not None:
        argv += ["-H", "Content-Type: application/yang-data+json", "--data-binary", body]
    argv.append(f"https://127.0.0.1:{PORTS['restconf']}/restconf/data/{path}")
    out = processes.run(a.host.namespace, argv, timeout=30).stdout
    text, _, status = out.rpartition("\n")
    return int(status), text


def test_tenant_admin_over_netconf_sees_and_manages_only_its_tenant(agent: SandboxAgent) -> None:
    with _nc(agent, "alice") as m:
        xml = m.get_config(source="running").data_xml
        assert _names(xml, "router") == ["ra"]
        assert _names(xml, "network") == ["na"]
        with pytest.raises(RPCError) as err:  # a VR on tenant B's network
            m.edit_config(target="running", config=_router("rx", "nb", "10.2.0.9/24"))
        assert err.value.tag == "access-denied"
        assert err.value.path == "/vr:routers/vr:router[vr:name='rx']"
        m.edit_config(target="running", config=_router("ra2", "na", "10.1.0.2/24"))
        xml = m.get(filter=("subtree", f'<routers xmlns="{NS}"/>')).data_xml
        assert _names(xml, "router") == ["ra", "ra2"]
    with _nc(agent, "admin") as m:  # the recovery user sees everything
        assert sorted(_names(m.get_config(source="running").data_xml, "router")) == [
            "ra",
            "ra2",
            "rb",
        ]


def test_tenant_admin_over_restconf(agent: SandboxAgent) -> None:
    status, body = _curl(agent, "alice", "GET", "vnet-router:routers")
    assert status == 200, body
    names = [r["name"] for r in json.loads(body)["vnet-router:routers"]["router"]]
    assert "rb" not in names and "ra" in names
    rx = {
        "vnet-router:router": [
            {"name": "ry", "interface": [{"name": "eth0", "network": "nb", "ipv4": "10.2.0.8/24"}]}
        ]
    }
    status, body = _curl(agent, "alice", "POST", "vnet-router:routers", json.dumps(rx))
    assert status == 403, body
    error = json.loads(body)["ietf-restconf:errors"]["error"][0]
    assert error["error-tag"] == "access-denied"
    status, _ = _curl(agent, "alice", "GET", "vnet-router:routers/router=rb")
    assert status == 404  # absent for alice, not an error that reveals it
    status, body = _curl(agent, "admin", "GET", "vnet-router:routers/router=rb")
    assert status == 200, body


def test_invalid_rule_path_is_refused_at_its_path(agent: SandboxAgent) -> None:
    bad = f"""<config><nacm xmlns="{NACM_NS}"><rule-list><name>ops</name><group>*</group>
    <rule><name>r1</name><path>/vr:routers/vr:routre</path><action>deny</action></rule>
    </rule-list></nacm></config>"""
    with _nc(agent, "admin") as m:
        with pytest.raises(RPCError) as err:
            m.edit_config(target="running", config=bad)
        assert err.value.tag == "invalid-value"
        assert err.value.path == (
            "/nacm:nacm/nacm:rule-list[nacm:name='ops']/nacm:rule[nacm:name='r1']/nacm:path"
        )
        assert "'routre' is not a data node of routers" in err.value.message
        assert "nacm" not in m.get_config(source="running").data_xml  # nothing changed


def test_rules_over_netconf_and_the_recovery_user(agent: SandboxAgent) -> None:
    lock_out = f"""<config><nacm xmlns="{NACM_NS}"><rule-list><name>lock-out</name>
    <group>*</group><rule><name>all</name><module-name>*</module-name><path>/</path>
    <access-operations>*</access-operations><action>deny</action></rule></rule-list></nacm></config>"""
    with _nc(agent, "carol") as m:
        assert _names(m.get_config(source="running").data_xml, "router")  # read-default permit
        with pytest.raises(RPCError) as err:  # write-default deny
            m.edit_config(target="running", config=_router("rc", "na", "10.1.0.7/24"))
        assert err.value.tag == "access-denied"
        with pytest.raises(RPCError):  # the rules are not carol's to change
            m.edit_config(target="running", config=lock_out)
    with _nc(agent, "admin") as m:
        m.edit_config(target="running", config=lock_out)
        assert _names(m.get_config(source="running").data_xml, "router")
    with _nc(agent, "carol") as m:
        assert _names(m.get_config(source="running").data_xml, "router") == []
    with _nc(agent, "admin") as m:  # deny-everything rules do not bind the recovery user
        delete = f"""<config xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0">
        <nacm xmlns="{NACM_NS}"><rule-list nc:operation="delete"><name>lock-out</name>
        </rule-list></nacm></config>"""
        m.edit_config(target="running", config=delete)
    with _nc(agent, "carol") as m:
        assert _names(m.get_config(source="running").data_xml, "router")


def test_rule_with_a_tenant_predicate_over_netconf(agent: SandboxAgent) -> None:
    rules = f"""<config><nacm xmlns="{NACM_NS}"><groups><group><name>ops</name>
    <user-name>carol</user-name></group></groups><rule-list><name>ops</name><group>ops</group>
    <rule><name>hide-b</name><module-name>vnet-router</module-name>
    <path>/vr:virtual-networks/vr:network[vr:tenant='B']</path>
    <access-operations>read</access-operations><action>deny</action></rule>
    <rule><name>hide-b-vrs</name><module-name>vnet-router</module-name>
    <path>/vr:routers/vr:router[vr:tenant='B']</path>
    <access-operations>read</access-operations><action>deny</action></rule>
    </rule-list></nacm></config>"""
    with _nc(agent, "admin") as m:
        m.edit_config(target="running", config=rules)
        stored = m.get_config(source="running", filter=("subtree", f'<nacm xmlns="{NACM_NS}"/>'))
        assert "/vnet-router:virtual-networks/network[tenant='B']" in stored.data_xml
    try:
        with _nc(agent, "carol") as m:
            xml = m.get_config(source="running").data_xml
            assert _names(xml, "network") == ["na"]
            assert "rb" not in _names(xml, "router") and "ra" in _names(xml, "router")
    finally:
        with _nc(agent, "admin") as m:
            delete = f"""<config xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0">
            <nacm xmlns="{NACM_NS}" nc:operation="remove"/></config>"""
            m.edit_config(target="running", config=delete)


def _router_names(m, source: str) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(_names(m.get_config(source=source).data_xml, "router"))


def test_a_tenant_may_not_lock_what_every_tenant_shares(agent: SandboxAgent) -> None:
    with _nc(agent, "alice") as alice, _nc(agent, "bruno") as bruno:
        for target in ("running", "candidate"):
            with pytest.raises(RPCError) as err:
                alice.lock(target)
            assert err.value.tag == "access-denied", err.value.message
        # so tenant B (and the controller, the recovery user) still write
        bruno.edit_config(target="running", config=_router("rb-l", "nb", "10.2.0.5/24"))
        with _nc(agent, "admin") as admin:
            admin.lock("running")  # the operator may
            admin.unlock("running")
        bruno.edit_config(target="running", config=_delete_router("rb-l"))


def _delete_router(name: str) -> str:
    return (
        '<config xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0">'
        f'<routers xmlns="{NS}"><router nc:operation="delete"><name>{name}</name></router>'
        "</routers></config>"
    )


def test_a_tenant_may_not_discard_or_commit_what_others_staged(agent: SandboxAgent) -> None:
    with _nc(agent, "alice") as alice, _nc(agent, "bruno") as bruno, _nc(agent, "admin") as admin:
        try:
            bruno.edit_config(target="candidate", config=_router("rb-c", "nb", "10.2.0.6/24"))
            with pytest.raises(RPCError) as err:
                alice.discard_changes()
            assert err.value.tag == "access-denied", err.value.message
            assert err.value.path == "/vr:routers/vr:router[vr:name='rb-c']"
            with _nc(agent, "carol") as carol, pytest.raises(RPCError) as err:
                carol.discard_changes()  # no tenant, but write-default deny
            assert err.value.tag == "access-denied", err.value.message
            alice.edit_config(target="candidate", config=_router("ra-c", "na", "10.1.0.6/24"))
            with pytest.raises(RPCError) as err:  # it would make B's staged VR live too
                alice.commit()
            assert err.value.tag == "access-denied", err.value.message
            assert "rb-c" not in _router_names(admin, "running")
            assert {"ra-c", "rb-c"} <= set(_router_names(admin, "candidate"))  # nothing lost
            with pytest.raises(RPCError) as err:  # B may not undo A's staged VR either
                bruno.discard_changes()
            assert err.value.path == "/vr:routers/vr:router[vr:name='ra-c']"
            bruno.edit_config(target="candidate", config=_delete_router("rb-c"))
            with pytest.raises(RPCError) as err:  # holds the datastore like a lock
                alice.commit(confirmed=True, timeout="600")
            assert err.value.tag == "access-denied", err.value.message
            alice.commit()  # only A's own change is staged now
            assert "ra-c" in _router_names(admin, "running")
            alice.edit_config(target="candidate", config=_delete_router("ra-c"))
            alice.discard_changes()  # its own staged change
            assert "ra-c" in _router_names(admin, "candidate")
        finally:
            admin.discard_changes()
            admin.edit_config(
                target="running", config=_delete_router("ra-c").replace("delete", "remove")
            )


def test_a_tenant_may_not_kill_another_session(agent: SandboxAgent) -> None:
    with _nc(agent, "admin") as admin, _nc(agent, "alice") as alice:
        with pytest.raises(RPCError) as err:
            alice.kill_session(admin.session_id)
        assert err.value.tag == "access-denied", err.value.message
        assert _router_names(admin, "running")  # the operator's session lives on
