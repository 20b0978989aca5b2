"""The SNMP benchmark's agent and data: a sandboxed agent, the variable bindings of one VR."""

from __future__ import annotations

import secrets
import time
from typing import Any

from vnet.bench.client import NS, agent_session
from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.model.mib import oids

ADDRESS = "127.0.0.1"
NETCONF_PORT = 8830
COMMUNITY_RO, COMMUNITY_RW = "bench-ro", "bench-rw"
USER, AUTH_KEY, PRIV_KEY = "bench", "bench-auth-key", "bench-priv-key"
NETWORKS_XML = f"""<config><virtual-networks xmlns="{NS}"><network><name>n1</name>
<tenant>a</tenant><vni>10</vni><ipv4-prefix>10.0.0.0/16</ipv4-prefix></network>
</virtual-networks></config>"""
SERIES = ("v2c", "v3")


# -- the agent in a namespace of its own ------------------------------------------------


def sandbox_agent() -> SandboxAgent:
    """An agent in a namespace of its own, serving NETCONF (to set up) and SNMP."""
    settings = {
        "ports": {"netconf": NETCONF_PORT},
        "snmp": {
            "ro_communities": [COMMUNITY_RO],
            "rw_communities": [COMMUNITY_RW],
            "users": [{"name": USER, "auth_key": AUTH_KEY, "priv_key": PRIV_KEY}],
        },
    }
    return SandboxAgent(HostSandbox(scope="sb" + secrets.token_hex(3)), settings)


# -- what is measured (the MIB's object identifiers come in from here only) ----------------


def dotted(oid: tuple[int, ...]) -> str:
    return oids.dotted(oid)


def create_pairs(
    idx: int, admin: int = 1, network: str = "n1", ipv4: str | None = None
) -> list[tuple[str, Any]]:
    """One VR with one interface eth0 in `network`, made in one SET (admin 1 up, 2 down)."""
    from pysnmp.proto.rfc1902 import Integer32, OctetString

    vr = lambda c: dotted((*oids.VR_CONFIG_ENTRY, c, idx))  # noqa: E731
    itf = lambda c: dotted((*oids.IF_CONFIG_ENTRY, c, idx, 1))  # noqa: E731
    third, fourth = divmod(idx, 250)
    return [
        (vr(oids.VR_NAME), OctetString(f"b{idx}")),
        (vr(oids.VR_ADMIN), Integer32(admin)),
        (vr(oids.VR_STATUS), Integer32(4)),
        (itf(oids.IF_NETWORK), OctetString(network)),
        (itf(oids.IF_IPV4), OctetString(ipv4 or f"10.0.{third}.{fourth + 1}/16")),
        (itf(oids.IF_NAME), OctetString("eth0")),
        (itf(oids.IF_STATUS), Integer32(4)),
    ]


def admin_pairs(idx: int, admin: int) -> list[tuple[str, Any]]:
    from pysnmp.proto.rfc1902 import Integer32

    return [(dotted((*oids.VR_CONFIG_ENTRY, oids.VR_ADMIN, idx)), Integer32(admin))]


def destroy_pairs(idx: int) -> list[tuple[str, Any]]:
    from pysnmp.proto.rfc1902 import Integer32

    return [(dotted((*oids.VR_CONFIG_ENTRY, oids.VR_STATUS, idx)), Integer32(6))]


def getbulk_oids(idx: int) -> list[str]:
    """The OIDs just before one VR's 13 objects: GETBULK with one repetition returns them."""
    return (
        [dotted((*oids.VR_CONFIG_ENTRY, c, idx - 1)) for c in (2, 3, 4)]
        + [dotted((*oids.VR_ENTRY, c, idx - 1)) for c in (1, 2, 3, 4)]
        + [dotted((*oids.IF_CONFIG_ENTRY, c, idx, 0)) for c in (2, 3, 4)]
        + [dotted((*oids.IF_STATS_ENTRY, c, idx, 0)) for c in (1, 2, 6)]
    )


def populate(agent: SandboxAgent, count: int, first: int) -> float:
    """`count` VRs (no interface) in one NETCONF edit-config; returns its seconds."""
    routers = "".join(
        f"<router><name>w{i}</name><index>{i}</index></router>" for i in range(first, first + count)
    )
    with agent_session(agent, timeout=600) as m:
        t = time.perf_counter()
        m.edit_config(
            target="running", config=f'<config><routers xmlns="{NS}">{routers}</routers></config>'
        )
        return time.perf_counter() - t


def vr_config_table() -> str:
    """The root of vnetVrConfigTable's rows, dotted: what the walk covers."""
    return dotted(oids.VR_CONFIG_ENTRY[:-1])
