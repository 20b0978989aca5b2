"""pysnmp's SNMP engine, set up from the agent's configuration.

pysnmp (7.x) provides the message processing (v2c, v3), USM (RFC 3414,
3826, 7860) and VACM (RFC 3415); this module gives it its transport, the
communities and USM users with their views, and an snmpEngineID and
snmpEngineBoots that survive restarts. The command responder is our own
(`responder`).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
from pathlib import Path
from typing import Any

from pyasn1.codec.ber import decoder as ber_decoder
from pyasn1.error import PyAsn1Error
from pysnmp.carrier.asyncio.dgram import udp, udp6
from pysnmp.entity import config as pconfig
from pysnmp.entity.engine import SnmpEngine
from pysnmp.proto.mpmod.rfc3412 import SNMPv3Message
from pysnmp.proto.secmod.rfc3414.service import UsmSecurityParameters

from vnet.agent.config import AgentConfig, SnmpUser
from vnet.agent.logins import LoginThrottle
from vnet.model.mib import oids
from vnet.model.mib.oids import OID
from vnet.tools.durable import replace_durably

AUTH = {
    "SHA": pconfig.USM_AUTH_HMAC96_SHA,
    "SHA-224": pconfig.USM_AUTH_HMAC128_SHA224,
    "SHA-256": pconfig.USM_AUTH_HMAC192_SHA256,
    "SHA-384": pconfig.USM_AUTH_HMAC256_SHA384,
    "SHA-512": pconfig.USM_AUTH_HMAC384_SHA512,
}
PRIV = {"AES": pconfig.USM_PRIV_CFB128_AES}

READ_VIEW: OID = (1, 3, 6, 1)  # what this agent serves: SNMPv2-MIB system and its MIB
WRITE_VIEW: OID = oids.MIB
USM_MODEL, V2C_MODEL = 3, 2


# -- snmpEngineID and snmpEngineBoots (RFC 3414 section 2.2) -------------------


def engine_identity(state_dir: Path, configured: str | None) -> tuple[bytes, int]:
    """The engine ID and this start's snmpEngineBoots, kept in state_dir across restarts.

    The ID is RFC 3411 format 5 (octets) under the enterprise number of the MIB
    arc; boots goes up by one on every start and is written before it is used.
    """
    path = state_dir / "snmp-engine.json"
    data: dict[str, Any] = {}
    if path.exists():
        with contextlib.suppress(ValueError, OSError):
            data = json.loads(path.read_text())
    if configured:
        engine_id = bytes.fromhex(configured.removeprefix("0x"))
    elif "engine_id" in data:
        engine_id = bytes.fromhex(data["engine_id"])
    else:
        pen = oids.ENTERPRISE[-1] | 0x80000000
        engine_id = pen.to_bytes(4, "big") + b"\x05" + secrets.token_bytes(8)
    boots = int(data.get("boots", 0)) + 1 if data.get("engine_id") == engine_id.hex() else 1
    boots = min(boots, 2147483647)  # RFC 3414: then it stays there
    replace_durably(path, json.dumps({"engine_id": engine_id.hex(), "boots": boots}).encode())
    return engine_id, boots


def _udp_socket(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))  # fails now, loudly, if the port is taken
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def build_engine(config: AgentConfig) -> tuple[SnmpEngine, int, socket.socket]:
    """An engine listening on the agent's address, with its communities, users and views."""
    engine_id, boots = engine_identity(config.state_dir, config.snmp.engine_id)
    engine = SnmpEngine()
    builder = engine.get_mib_builder()
    (mib_engine_id,) = builder.import_symbols("__SNMP-FRAMEWORK-MIB", "snmpEngineID")
    (mib_boots,) = builder.import_symbols("__SNMP-FRAMEWORK-MIB", "snmpEngineBoots")
    mib_engine_id.syntax = mib_engine_id.syntax.clone(engine_id)
    engine.snmpEngineID = mib_engine_id.syntax
    mib_boots.syntax = mib_boots.syntax.clone(boots)

    sock = _udp_socket(config.address, config.ports.snmp)
    carrier = udp6 if sock.family == socket.AF_INET6 else udp
    transport = udp6.Udp6Transport() if carrier is udp6 else udp.UdpTransport()
    pconfig.add_transport(engine, carrier.DOMAIN_NAME, transport.open_server_mode(sock=sock))

    s = config.snmp
    for n, community in enumerate(s.ro_communities):
        _community(engine, f"ro{n}", community, write=False)
    for n, community in enumerate(s.rw_communities):
        _community(engine, f"rw{n}", community, write=True)
    for user in s.users:
        _user(engine, user)
    throttle_usm(engine, LoginThrottle("SNMPv3"))
    return engine, boots, sock


def _grant(engine: SnmpEngine, model: int, sec_name: str, level: str, write: bool) -> None:
    """VACM: read everything served, write the MIB's objects if `write`."""
    pconfig.add_vacm_user(
        engine,
        model,
        sec_name,
        level,
        readSubTree=READ_VIEW,
        writeSubTree=WRITE_VIEW if write else (),
    )


def _community(engine: SnmpEngine, sec_name: str, community: str, write: bool) -> None:
    pconfig.add_v1_system(engine, sec_name, community, securityName=sec_name)
    _grant(engine, V2C_MODEL, sec_name, "noAuthNoPriv", write)


def _user(engine: SnmpEngine, user: SnmpUser) -> None:
    pconfig.add_v3_user(
        engine,
        user.name,
        AUTH[user.auth_protocol],
        user.auth_key,
        PRIV[user.priv_protocol],
        user.priv_key,
    )
    # authPriv only; a request with a lower security level finds no access entry
    _grant(engine, USM_MODEL, user.name, "authPriv", user.access == "rw")


# -- failed SNMPv3 logins (vnet.agent.logins) ------------------------------------------


def usm_user_name(message: bytes) -> str | None:
    """The msgUserName of an SNMPv3 message (None: not v3, unreadable, or a discovery
    request without a user)."""
    try:
        msg, _ = ber_decoder.decode(message, asn1Spec=SNMPv3Message())
        if int(msg["msgVersion"]) != 3:
            return None
        params, _ = ber_decoder.decode(
            bytes(msg["msgSecurityParameters"]), asn1Spec=UsmSecurityParameters()
        )
        name = bytes(params["msgUserName"]).decode("utf-8", "replace")
    except (PyAsn1Error, ValueError, TypeError):
        return None
    return name or None


def throttle_usm(engine: SnmpEngine, throttle: LoginThrottle) -> None:
    """Guard the engine's receive path: a v3 message of a throttled (source, user) is
    dropped unanswered and unchecked; one USM rejects (wrong digest, unknown user)
    counts as a failed login. pysnmp has no hook for this, so the dispatcher's receive
    callback is wrapped."""
    builder = engine.get_mib_builder()
    counters = [
        builder.import_symbols("__SNMP-USER-BASED-SM-MIB", name)[0]
        for name in ("usmStatsWrongDigests", "usmStatsUnknownUserNames")
    ]
    callbacks = engine.transport_dispatcher._AbstractTransportDispatcher__recv_callables
    receive = callbacks[None]

    def rejected() -> int:
        return sum(int(c.syntax) for c in counters)

    def guarded(dispatcher: Any, domain: Any, address: Any, message: bytes) -> Any:
        user = usm_user_name(message)
        if user is None:
            return receive(dispatcher, domain, address, message)
        source = str(address[0])
        if throttle.wait_left(source, user) > 0:
            throttle.refused(source, user)
            return None
        before = rejected()
        result = receive(dispatcher, domain, address, message)
        if rejected() > before:
            throttle.failed(source, user)
        else:
            throttle.succeeded(source, user)
        return result

    callbacks[None] = guarded
