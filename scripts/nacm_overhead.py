"""What NACM adds to <get-config> (issue 11: <= 10 % with 100 rules and 1000 VRs).

A real agent in a sandbox namespace gets VRS VRs (over NETCONF, in chunks) and a
rule-list of 100 rules for the group of user `reader`; then ncclient asks for
get-config of running, interleaving two sessions: the recovery user (NACM is
skipped, the code path of an agent without rules) and `reader` (every rule
compiled into the trie, every VR visited down to its interfaces). The rules
permit what they name and deny only an absent leaf, so both replies are the
same size and the difference is the filter's cost. Each round commits a change
first (one VR's admin-state), so the first get-config after it computes the
reader's part of running afresh; a second one finds it cached.

    .venv/bin/python scripts/nacm_overhead.py [VRS] [ROUNDS] [--shallow]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import ncclient.transport.session
from ncclient import manager

from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.substrate import nsfs

ncclient.transport.session.TICK = 0.001
NS = "urn:vnet:yang:vnet-router"
NACM_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-acm"
PORT = 8839
USERS = [{"name": "admin", "password": "adm1n-pw"}, {"name": "reader", "password": "r3ader-pw"}]
TENANTS = 30
SHALLOW = "--shallow" in sys.argv  # no rule reaches inside a VR (see _rules)


def _networks() -> str:
    nets = "".join(
        f"<network><name>n{t}</name><tenant>t{t}</tenant><vni>{100 + t}</vni>"
        f"<ipv4-prefix>10.{t}.0.0/16</ipv4-prefix></network>"
        for t in range(TENANTS)
    )
    return f'<config><virtual-networks xmlns="{NS}">{nets}</virtual-networks></config>'


def _routers(first: int, count: int) -> str:
    routers = "".join(
        f"<router><name>r{i}</name><interface><name>eth0</name><network>n{i % TENANTS}</network>"
        f"<ipv4>10.{i % TENANTS}.{i // 250}.{i % 250 + 1}/16</ipv4></interface>"
        f"<route><destination>192.168.{i % 250}.0/24</destination>"
        f"<next-hop>10.{i % TENANTS}.255.254</next-hop></route></router>"
        for i in range(first, first + count)
    )
    return f'<config><routers xmlns="{NS}">{routers}</routers></config>'


def _admin_state(i: int, state: str) -> str:
    return (
        f'<config><routers xmlns="{NS}"><router><name>r{i}</name>'
        f"<admin-state>{state}</admin-state></router></routers></config>"
    )


def _rules() -> str:
    """100 rules: 50 on single VRs (a key look-up), 30 on tenants (a derived predicate),
    10 deep ones (every VR's interfaces and routes are visited), 9 on operations and
    one that lets the reader read the rules (so both replies carry the same data)."""
    rules = []
    for i in range(50):
        path = f"/vr:routers/vr:router[vr:name='r{i * 7}']"
        rules.append(("vr", path, "read", "permit"))
    for t in range(TENANTS):
        rules.append(("vr", f"/vr:routers/vr:router[vr:tenant='t{t}']", "read", "permit"))
    if SHALLOW:  # rules on networks instead: no rule path goes inside a VR
        for i in range(10):
            rules.append(
                ("vr", f"/vr:virtual-networks/vr:network[vr:name='n{i}']", "read", "permit")
            )
    else:
        rules.append(("vr", "/vr:routers/vr:router/vr:interface/vr:ipv6", "read", "deny"))
        for i in range(9):  # routes nobody has
            path = f"/vr:routers/vr:router/vr:route[vr:destination='172.16.{i}.0/24']"
            rules.append(("vr", path, "read", "deny"))
    body = "".join(
        f"<rule><name>r{n}</name><module-name>vnet-router</module-name><path>{p}</path>"
        f"<access-operations>{ops}</access-operations><action>{act}</action></rule>"
        for n, (_, p, ops, act) in enumerate(rules)
    )
    body += "".join(
        f"<rule><name>x{n}</name><module-name>ietf-netconf</module-name><rpc-name>op{n}</rpc-name>"
        "<access-operations>exec</access-operations><action>permit</action></rule>"
        for n in range(9)
    )
    # the rules themselves are default-deny-all: read them too, so both replies are equal
    body += (
        "<rule><name>x9</name><module-name>ietf-netconf-acm</module-name><path>/nacm:nacm</path>"
        "<access-operations>read</access-operations><action>permit</action></rule>"
    )
    return (
        f'<config><nacm xmlns="{NACM_NS}"><groups><group><name>ops</name>'
        "<user-name>reader</user-name></group></groups><rule-list><name>ops</name>"
        f"<group>ops</group>{body}</rule-list></nacm></config>"
    )


def _connect(namespace: str, user: str, password: str) -> manager.Manager:
    with nsfs.entered(namespace):
        return manager.connect(
            host="127.0.0.1", port=PORT, username=user, password=password,
            hostkey_verify=False, allow_agent=False, look_for_keys=False, timeout=600,
        )  # fmt: skip


def _timed(m: manager.Manager) -> tuple[float, int]:
    t = time.perf_counter()
    reply = m.get_config(source="running")
    return time.perf_counter() - t, len(reply.data_xml)


def main(vrs: int, rounds: int) -> None:
    host = HostSandbox(scope="nacmbench")
    agent = SandboxAgent(host, {"ports": {"netconf": PORT, "restconf": PORT + 1}, "users": USERS})
    try:
        host.create()
        agent.start("netconf")
        admin = _connect(host.namespace, "admin", "adm1n-pw")
        admin.edit_config(target="running", config=_networks())
        started = time.perf_counter()
        for first in range(0, vrs, 100):
            admin.edit_config(target="running", config=_routers(first, min(100, vrs - first)))
        print(f"{vrs} VRs configured in {time.perf_counter() - started:.1f} s")
        admin.edit_config(target="running", config=_rules())
        reader = _connect(host.namespace, "reader", "r3ader-pw")
        sessions = {"recovery user (no NACM)": admin, "reader (100 rules)": reader}
        cold: dict[str, list[float]] = {label: [] for label in sessions}
        warm: dict[str, list[float]] = {label: [] for label in sessions}
        sizes = {}
        for n in range(rounds + 2):  # the first two rounds warm up
            # a commit: every user's readable part of running must be computed again
            state = "down" if n % 2 else "up"
            admin.edit_config(target="running", config=_admin_state(vrs - 1, state))
            order = list(sessions.items())[:: 1 if n % 2 else -1]
            for label, m in order:
                dt, sizes[label] = _timed(m)
                if n >= 2:
                    cold[label].append(dt)
            for label, m in order:
                dt, _ = _timed(m)
                if n >= 2:
                    warm[label].append(dt)
        print(f"load average {os.getloadavg()}")
        for what, samples in (("first get-config after a commit", cold), ("again", warm)):
            for label, times in samples.items():
                print(
                    f"{what}: {label}: median {statistics.median(times) * 1000:.1f} ms, "
                    f"mean {statistics.mean(times) * 1000:.1f} ms, reply {sizes[label]} bytes"
                )
            base, nacm = (statistics.median(t) for t in samples.values())
            print(f"{what}: NACM adds {100 * (nacm / base - 1):+.1f} % (medians, {rounds} rounds)")
        admin.close_session()
        reader.close_session()
    finally:
        agent.stop(grace=10)
        problems = host.cleanup()
        if problems:
            print("left behind:", problems)


if __name__ == "__main__":
    numbers = [int(a) for a in sys.argv[1:] if a.isdigit()]
    main(*(numbers + [1000, 30][len(numbers) :]))
