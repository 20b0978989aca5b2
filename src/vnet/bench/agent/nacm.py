"""What NACM adds to <get-config> (issue 11: <= 10 % with 100 rules and 1000 VRs).

The agent gets VRs (in chunks of 100) and a rule-list of 100 rules for the group of
user `reader`; then get-config of running alternates between two sessions: the
recovery user (NACM skipped: the code path of an agent without rules) and `reader`
(every rule compiled, every VR visited). The rules permit what they name and deny
only absent data, so both replies are the same size and the difference is the
filter's cost. Each round first commits a change (one VR's admin-state), so the first
get-config after it computes the reader's view afresh; a second one finds it cached.
`shallow` puts rules on networks instead of ones reaching inside a VR.
"""

from __future__ import annotations

import time
from typing import Any

from vnet.bench.agent.sandbox import sandboxed_agent
from vnet.bench.client import NS, agent_session, connect
from vnet.bench.results import BenchResult
from vnet.model.yang.module import NACM_NS

METRIC = "nacm_get_config"
NO_NACM, RULES = "recovery user (no NACM)", "reader (100 rules)"
FIRST, CACHED = "first after a commit", "again (cached)"
USERS = [{"name": "admin", "password": "adm1n-pw"}, {"name": "reader", "password": "r3ader-pw"}]
TENANTS = 30
WARM_UP = 2  # rounds not counted


def declare(result: BenchResult, vrs: int, shallow: bool) -> None:
    mix = "no rule reaches inside a VR" if shallow else "10 rules reach every VR's leaves"
    result.declare(
        METRIC,
        "ms",
        x_label="get-config of running",
        plot="bar",
        description=f"get-config of {vrs} VRs by the recovery user (NACM skipped) and by a user "
        f"with 100 rules ({mix}), same reply size; the first read after a commit and the next.",
    )


def networks() -> str:
    nets = "".join(
        f"<network><name>n{t}</name><tenant>t{t}</tenant><vni>{100 + t}</vni>"
        f"<ipv4-prefix>10.{t}.0.0/16</ipv4-prefix></network>"
        for t in range(TENANTS)
    )
    return f'<config><virtual-networks xmlns="{NS}">{nets}</virtual-networks></config>'


def routers(first: int, count: int) -> str:
    items = "".join(
        f"<router><name>r{i}</name><interface><name>eth0</name><network>n{i % TENANTS}</network>"
        f"<ipv4>10.{i % TENANTS}.{i // 250}.{i % 250 + 1}/16</ipv4></interface>"
        f"<route><destination>192.168.{i % 250}.0/24</destination>"
        f"<next-hop>10.{i % TENANTS}.255.254</next-hop></route></router>"
        for i in range(first, first + count)
    )
    return f'<config><routers xmlns="{NS}">{items}</routers></config>'


def admin_state(i: int, state: str) -> str:
    return (
        f'<config><routers xmlns="{NS}"><router><name>r{i}</name>'
        f"<admin-state>{state}</admin-state></router></routers></config>"
    )


def data_rules(shallow: bool) -> list[tuple[str, str]]:
    """90 rules on data as (path, action): 50 on single VRs (a key look-up), 30 on
    tenants (a derived predicate), and 10 deep ones on every VR's interfaces and
    routes denying what nobody has (or, shallow, 10 on networks)."""
    rules = [(f"/vr:routers/vr:router[vr:name='r{i * 7}']", "permit") for i in range(50)]
    rules += [(f"/vr:routers/vr:router[vr:tenant='t{t}']", "permit") for t in range(TENANTS)]
    if shallow:
        return rules + [
            (f"/vr:virtual-networks/vr:network[vr:name='n{i}']", "permit") for i in range(10)
        ]
    rules.append(("/vr:routers/vr:router/vr:interface/vr:ipv6", "deny"))
    return rules + [
        (f"/vr:routers/vr:router/vr:route[vr:destination='172.16.{i}.0/24']", "deny")
        for i in range(9)
    ]


def rules(shallow: bool) -> str:
    """The 100 rules: the data rules, 9 on operations, and one that lets the reader read
    the rules themselves (default deny-all), so both replies carry the same data."""
    body = "".join(
        f"<rule><name>r{n}</name><module-name>vnet-router</module-name><path>{path}</path>"
        f"<access-operations>read</access-operations><action>{action}</action></rule>"
        for n, (path, action) in enumerate(data_rules(shallow))
    )
    body += "".join(
        f"<rule><name>x{n}</name><module-name>ietf-netconf</module-name><rpc-name>op{n}</rpc-name>"
        "<access-operations>exec</access-operations><action>permit</action></rule>"
        for n in range(9)
    )
    body += (
        "<rule><name>x9</name><module-name>ietf-netconf-acm</module-name><path>/nacm:nacm</path>"
        "<access-operations>read</access-operations><action>permit</action></rule>"
    )
    return (
        f'<config><nacm xmlns="{NACM_NS}"><groups><group><name>ops</name>'
        "<user-name>reader</user-name></group></groups><rule-list><name>ops</name>"
        f"<group>ops</group>{body}</rule-list></nacm></config>"
    )


def _timed_get_config(m: Any) -> tuple[float, int]:
    start = time.perf_counter()
    reply = m.get_config(source="running")
    return (time.perf_counter() - start) * 1000, len(reply.data_xml)


def _round(n: int, sessions: dict[str, Any], vrs: int, result: BenchResult) -> dict[str, int]:
    """A commit, then each session's first and second get-config, in alternating order."""
    sessions[NO_NACM].edit_config(
        target="running", config=admin_state(vrs - 1, "down" if n % 2 else "up")
    )
    order = list(sessions.items())[:: 1 if n % 2 else -1]
    sizes = {}
    for x in (FIRST, CACHED):
        for label, m in order:
            ms, sizes[label] = _timed_get_config(m)
            if n >= WARM_UP:
                result.record(METRIC, label, ms, x=x)
    return sizes


def measure(result: BenchResult, vrs: int, rounds: int, shallow: bool) -> None:
    with sandboxed_agent(result, "nacm", {"users": USERS}, user="admin", password="adm1n-pw") as ag:
        ns, port = ag.host.namespace, ag.ports["netconf"]
        with agent_session(ag, 600) as admin:
            admin.edit_config(target="running", config=networks())
            start = time.perf_counter()
            for first in range(0, vrs, 100):
                admin.edit_config(target="running", config=routers(first, min(100, vrs - first)))
            result.parameters["nacm_load_s"] = round(time.perf_counter() - start, 2)
            admin.edit_config(target="running", config=rules(shallow))
            with connect(ns, port=port, username="reader", password="r3ader-pw") as reader:
                sessions = {NO_NACM: admin, RULES: reader}
                for n in range(rounds + WARM_UP):
                    sizes = _round(n, sessions, vrs, result)
    result.parameters["nacm_reply_bytes"] = sizes
