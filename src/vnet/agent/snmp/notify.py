"""Notifications when a VR operation completes or fails (the datastore's events).

- v2c targets get SNMPv2-Trap PDUs, encoded here and sent from a socket of
  their own (the community table of the engine holds only the communities
  that may query the agent);
- v3 targets get traps or informs through pysnmp's notification
  originator, with the target's USM user at authPriv. Traps are sent with
  the agent's snmpEngineID as the authoritative engine (a receiver needs
  `createUser -e <engineID>`); informs discover the receiver's engine and
  are retried until acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any

from pyasn1.codec.ber import encoder
from pysnmp.carrier.asyncio.dgram import udp, udp6
from pysnmp.entity import config as pconfig
from pysnmp.entity.engine import SnmpEngine
from pysnmp.entity.rfc3413 import ntforg
from pysnmp.proto import rfc1902
from pysnmp.proto.api import v2c

from vnet.agent.config import SnmpTarget
from vnet.agent.datastore import Datastore, Event
from vnet.agent.datastore.events import Notice, UnderlayEvent
from vnet.agent.snmp import smi
from vnet.agent.snmp.rows import routers_by_index
from vnet.model.mib import oids

log = logging.getLogger("vnet.agent.snmp")

OPERATION = {"create": 1, "modify": 2, "delete": 3}
NOTIFICATION = {"create": oids.VR_CREATED, "delete": oids.VR_REMOVED}  # else VR_MODIFIED


def underlay_varbinds(event: UnderlayEvent, uptime: int) -> list[smi.Varbind]:
    """IF-MIB's linkDown or linkUp (RFC 2863) for an underlay interface, with its name
    (ifName) after the objects the notification defines."""
    index = event.index
    return [
        (oids.SYS_UPTIME, smi.timeticks(uptime)),
        (oids.SNMP_TRAP_OID, smi.object_id(oids.LINK_UP if event.up else oids.LINK_DOWN)),
        ((*oids.IF_ENTRY, oids.IF_INDEX, index), smi.integer(index)),
        ((*oids.IF_ENTRY, oids.IF_ADMIN_STATUS, index), smi.integer(1 if event.admin_up else 2)),
        ((*oids.IF_ENTRY, oids.IF_OPER_STATUS, index), smi.integer(1 if event.up else 2)),
        ((*oids.IF_X_NAME, index), smi.octets(event.interface)),
    ]


def event_varbinds(event: Event, tree: dict[str, Any], uptime: int) -> list[smi.Varbind]:
    """sysUpTime.0, snmpTrapOID.0 and the notification's objects for one event."""
    index = int(event.index or 0)
    name = ((*oids.VR_CONFIG_ENTRY, oids.VR_NAME, index), smi.octets(event.router))
    out: list[smi.Varbind] = [(oids.SYS_UPTIME, smi.timeticks(uptime))]
    if event.result != "success":
        return [
            *out,
            (oids.SNMP_TRAP_OID, smi.object_id(oids.VR_FAILED)),
            name,
            (oids.EVENT_OPERATION, smi.integer(OPERATION.get(event.operation, 2))),
            (oids.EVENT_MESSAGE, smi.octets(event.message[:255])),
        ]
    out += [
        (oids.SNMP_TRAP_OID, smi.object_id(NOTIFICATION.get(event.operation, oids.VR_MODIFIED))),
        name,
    ]
    if event.operation != "delete":
        router = routers_by_index(tree).get(index)
        router = router if router is not None and router["name"] == event.router else None
        admin = 2 if router is not None and router.get("admin-state") == "down" else 1
        out.append(((*oids.VR_CONFIG_ENTRY, oids.VR_ADMIN, index), smi.integer(admin)))
    return out


def _pdu(kind: str, varbinds: list[smi.Varbind]) -> Any:
    pdu = v2c.InformRequestPDU() if kind == "inform" else v2c.TrapPDU()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_varbinds(pdu, [(rfc1902.ObjectName(o), smi.to_pysnmp(v)) for o, v in varbinds])
    return pdu


class Notifier:
    def __init__(
        self,
        engine: SnmpEngine,
        ds: Datastore,
        targets: list[SnmpTarget],
        running: Callable[[], dict[str, Any]],
        uptime: Callable[[], int],
        agent_family: int,
    ):
        self.engine = engine
        self.ds = ds
        self.targets = targets
        self.running = running  # the configuration, for the admin state a notification carries
        self.uptime = uptime
        self.originator = ntforg.NotificationOriginator()
        self.sockets: dict[int, socket.socket] = {}
        self.queue: asyncio.Queue[Notice] | None = None
        self.task: asyncio.Task[None] | None = None
        self.sent = 0
        for i, t in enumerate(targets):
            if t.version != "v3":
                continue
            domain = udp6.DOMAIN_NAME if agent_family == socket.AF_INET6 else udp.DOMAIN_NAME
            pconfig.add_target_parameters(engine, f"vnet-p{i}", t.user, "authPriv", mpModel=3)
            pconfig.add_target_address(
                engine,
                f"vnet-t{i}",
                domain,
                (t.address, t.port),
                f"vnet-p{i}",
                timeout=150,
                retryCount=3,  # 1.5 s, in hundredths
            )

    def start(self) -> None:
        if not self.targets:
            return
        self.queue = self.ds.subscribe()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        if self.queue is not None:
            self.ds.unsubscribe(self.queue)
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        for sock in self.sockets.values():
            sock.close()

    async def _run(self) -> None:
        assert self.queue is not None
        while True:
            event = await self.queue.get()
            try:
                self.send(event)
            except Exception:
                log.exception("SNMP notification for %s not sent", event)

    def send(self, event: Notice) -> None:
        if not self.targets:  # (nothing to make: a notification's objects look up its VR)
            return
        if isinstance(event, UnderlayEvent):
            varbinds = underlay_varbinds(event, self.uptime())
        else:
            varbinds = event_varbinds(event, self.running(), self.uptime())
        for i, t in enumerate(self.targets):
            if t.version == "v2c":
                self._send_v2c(t, varbinds)
            else:
                self.originator.send_pdu(
                    self.engine,
                    f"vnet-t{i}",
                    None,
                    b"",
                    _pdu(t.kind, varbinds),
                    self._acknowledged,
                    (t.address, t.port),
                )
            self.sent += 1

    def _send_v2c(self, t: SnmpTarget, varbinds: list[smi.Varbind]) -> None:
        msg = v2c.Message()
        v2c.apiMessage.set_defaults(msg)
        v2c.apiMessage.set_community(msg, t.community)
        v2c.apiMessage.set_pdu(msg, _pdu("trap", varbinds))
        family = socket.AF_INET6 if ":" in t.address else socket.AF_INET
        sock = self.sockets.get(family)
        if sock is None:
            sock = self.sockets[family] = socket.socket(family, socket.SOCK_DGRAM)
            sock.setblocking(False)
        try:
            sock.sendto(encoder.encode(msg), (t.address, t.port))
        except OSError as err:  # unreachable now; traps are best effort
            log.warning("SNMP trap to %s:%d not sent: %s", t.address, t.port, err)

    def _acknowledged(self, engine: Any, handle: Any, error: Any, pdu: Any, where: Any) -> None:
        if error:
            log.warning("SNMP inform to %s:%d not acknowledged: %s", *where, error)
