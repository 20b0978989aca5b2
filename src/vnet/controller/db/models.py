"""The controller's tables: the inventory (tenants, hosts, links, networks, VRs, end hosts) and
the ledger (connections, their reservations per link direction, their history, and the journal
of requests in flight).

The inventory rows carry the model object they were loaded from (`spec`, JSON of the
`vnet.model.topology` class) and are numbered in the file's order, so `controller.inventory`
rebuilds exactly the Topology that was loaded: the SRv6 locators and SIDs derive from the order
of tenants and routers (`vnet.model.srv6`), and must be the ones the lab computes.

Bandwidths are integers in bit/s (BigInteger: 400 Gbit/s does not fit 32 bits). Enums are
stored as strings with a CHECK constraint, not as PostgreSQL enum types, so one schema and one
migration serve SQLite and PostgreSQL and a new state is a plain migration.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Enum,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

# Deterministic constraint names: migrations can drop and alter what they name.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

NAME = 64  # names of tenants, hosts, links, VRs: the model's identifiers are shorter
CONNECTION_NAME = 32  # ConnectionRequest.name's limit
NUMBER_MAX = 4095  # vnet.model.connection.CONNECTION_ID_MAX: a SID field and a tc class minor
LIVE = "state != 'released'"  # the connections that hold a name and a number


def _now() -> datetime:
    return datetime.now(UTC)


def _enum(cls: type[enum.Enum], name: str) -> Enum:
    return Enum(
        cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda members: [m.value for m in members],
    )


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class ConnectionState(enum.StrEnum):
    REQUESTED = "requested"
    ESTABLISHED = "established"
    MODIFYING = "modifying"  # make-before-break in progress: two generations reserved
    RELEASED = "released"
    DEGRADED = "degraded"  # its path crosses a failed link or host and no other path fits


class ReservationRole(enum.StrEnum):
    CURRENT = "current"  # the path the connection's traffic takes
    NEXT = "next"  # the new path of a make-before-break, counted before the switch


class RequestPhase(enum.StrEnum):
    """Where a request stands, so recovery at start knows what to finish or undo."""

    RECEIVED = "received"
    RESERVED = "reserved"  # ledger rows written, no agent touched yet
    PREPARED = "prepared"  # candidates validated on every affected agent
    COMMITTED = "committed"  # confirmed commit sent; agents roll back unless confirmed
    CONFIRMED = "confirmed"
    DONE = "done"
    FAILED = "failed"


class Tenant(Base):
    __tablename__ = "tenant"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    # the topology's Tenant as loaded; None: not declared in the file (named by its networks
    # only, or created through the API), which vnet.model.srv6 numbers differently
    spec: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))


LAB_NUMBERS = "lab_numbers"  # TopologySettings.spec key: see below
API_ORIGIN = "api"  # TopologySettings.spec key: what the API added and deleted (see below)
SETTINGS_ID = 1  # TopologySettings' one row


class TopologySettings(Base):
    """The loaded topology's own fields (its name, the underlay): one row, id 1. Its spec
    also keeps under LAB_NUMBERS the piece ids of the lab's own connections (the file's
    `connections:`), which the controller's connection numbers avoid: both kinds of pieces
    live on the same VRs; and under API_ORIGIN the names of the objects the API added and
    deleted (controller.inventory_origin), which a start with the file tells apart."""

    __tablename__ = "topology_settings"
    __table_args__ = (CheckConstraint(f"id = {SETTINGS_ID}", name="single_row"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)


class Host(Base):
    """A physical host and how to reach its agent. `credentials_ref` names where the secret
    lives (a file, a key, a vault path), never the secret: the database and its logs hold no
    password."""

    __tablename__ = "host"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    agent_endpoint: Mapped[str] = mapped_column(String(255))
    credentials_ref: Mapped[str] = mapped_column(String(255))
    # how to reach its agent when it was given through the API (an AgentEndpoint's JSON:
    # paths of secret files, never a secret); None: the configuration's `agents:`, or none
    agent_access: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    # removed through the API: kept, as its order numbers the hosts' underlay addresses
    removed: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def __repr__(self) -> str:
        return f"Host({self.name!r}, agent={self.agent_endpoint!r})"


class Link(Base):
    """An underlay link between two hosts; its rows are what concurrent admissions lock.

    `name` is "a-b" as `vnet.model.qos` names it; `capacity_bps` is its rate, `spec` the
    topology's UnderlayLink (what is kept for management is derived from it)."""

    __tablename__ = "link"
    __table_args__ = (CheckConstraint("capacity_bps > 0", name="capacity_positive"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    a_host_id: Mapped[int] = mapped_column(ForeignKey("host.id"))
    b_host_id: Mapped[int] = mapped_column(ForeignKey("host.id"))
    capacity_bps: Mapped[int] = mapped_column(BigInteger)
    spec: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    removed: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # as Host's
    # what the reservations not yet released hold per direction (forward: a to b), kept by
    # db.ledger in the transaction that reserves or releases, so that planning reads one row
    # per link instead of summing every live reservation
    held_forward_bps: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    held_reverse_bps: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    a_host: Mapped[Host] = relationship(foreign_keys=[a_host_id])
    b_host: Mapped[Host] = relationship(foreign_keys=[b_host_id])

    def held(self, forward: bool) -> int:
        return self.held_forward_bps if forward else self.held_reverse_bps


class VirtualNetwork(Base):
    """A tenant's virtual network; names are global, as in the topology."""

    __tablename__ = "virtual_network"
    __table_args__ = (CheckConstraint("vni >= 1 AND vni <= 16777215", name="vni_range"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id"))
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    vni: Mapped[int] = mapped_column(Integer, unique=True)
    spec: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    tenant: Mapped[Tenant] = relationship()
    guarantees: Mapped[list[GuaranteedLink]] = relationship(
        back_populates="network", cascade="all, delete-orphan"
    )


class GuaranteedLink(Base):
    """A virtual network's guaranteed bit/s on one underlay link."""

    __tablename__ = "network_guarantee"
    __table_args__ = (CheckConstraint("bps > 0", name="bps_positive"),)
    network_id: Mapped[int] = mapped_column(ForeignKey("virtual_network.id"), primary_key=True)
    link_id: Mapped[int] = mapped_column(ForeignKey("link.id"), primary_key=True)
    bps: Mapped[int] = mapped_column(BigInteger)
    network: Mapped[VirtualNetwork] = relationship(back_populates="guarantees")
    link: Mapped[Link] = relationship()


class VirtualRouter(Base):
    """A VR placed on a host; its tenant is its networks' (None: no tenant network)."""

    __tablename__ = "virtual_router"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int | None] = mapped_column(ForeignKey("tenant.id"))
    network_id: Mapped[int | None] = mapped_column(ForeignKey("virtual_network.id"))
    host_id: Mapped[int] = mapped_column(ForeignKey("host.id"))
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    spec: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    tenant: Mapped[Tenant | None] = relationship()
    host: Mapped[Host] = relationship()


class EndHost(Base):
    """A tenant machine in one virtual network on one host: what connections join."""

    __tablename__ = "end_host"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id"))
    network_id: Mapped[int] = mapped_column(ForeignKey("virtual_network.id"))
    host_id: Mapped[int] = mapped_column(ForeignKey("host.id"))
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    tenant: Mapped[Tenant] = relationship()
    host: Mapped[Host] = relationship()


class Connection(Base):
    """A tenant's guaranteed connection between two of its end hosts (`a`, `b`), optionally
    only one 5-tuple, one way or both (`bidirectional`).

    `name` is unique per tenant among live connections (not released), and so is `number`
    among all live connections: the piece id on the agents (SID field, tc class minor,
    1..4095), handed out smallest first by `db.numbers.add_connection`; a released
    connection's name and number may be used again. `idempotency_key` is unique per tenant:
    a retried request finds the connection the first attempt made instead of creating a
    second one. `path` is the explicit path of physical hosts asked for, None when the
    controller chooses (and so may move it); `hops` ({host, router, sid} per host, a -> b) and
    `segments` (the ingress's segment list) describe where it runs now. `generation`
    numbers the paths the connection has had; its reservations carry the generation they
    were made for.
    """

    __tablename__ = "connection"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        CheckConstraint("bandwidth_bps > 0", name="bandwidth_positive"),
        CheckConstraint(f"number >= 1 AND number <= {NUMBER_MAX}", name="number_range"),
        CheckConstraint("packet_size > 0", name="packet_size_positive"),
        Index(None, "state"),
        Index(
            "uq_connection_live_number",
            "number",
            unique=True,
            sqlite_where=text(LIVE),
            postgresql_where=text(LIVE),
        ),
        # the live connections between two end hosts (a new one's flow must be its own)
        Index(
            "ix_connection_live_ends",
            "tenant_id",
            "a",
            "b",
            sqlite_where=text(LIVE),
            postgresql_where=text(LIVE),
        ),
        Index(
            "uq_connection_live_name",
            "tenant_id",
            "name",
            unique=True,
            sqlite_where=text(LIVE),
            postgresql_where=text(LIVE),
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id"))
    name: Mapped[str] = mapped_column(String(CONNECTION_NAME))
    number: Mapped[int] = mapped_column(Integer)
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    a: Mapped[str] = mapped_column(String(NAME))  # end host names
    b: Mapped[str] = mapped_column(String(NAME))
    # the optional 5-tuple (addresses are a's and b's); None fields match anything
    protocol: Mapped[str | None] = mapped_column(String(8))
    src_port: Mapped[int | None] = mapped_column(Integer)
    dst_port: Mapped[int | None] = mapped_column(Integer)
    bandwidth_bps: Mapped[int] = mapped_column(BigInteger)
    bidirectional: Mapped[bool] = mapped_column(Boolean, default=False)
    packet_size: Mapped[int] = mapped_column(Integer, default=1500)
    path: Mapped[list[str] | None] = mapped_column(JSON)
    hops: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    segments: Mapped[list[str]] = mapped_column(JSON, default=list)
    state: Mapped[ConnectionState] = mapped_column(
        _enum(ConnectionState, "state"), default=ConnectionState.REQUESTED
    )
    generation: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    tenant: Mapped[Tenant] = relationship()


class ConnectionEvent(Base):
    """One line of a connection's history: created, modified, moved, released, failed,
    repaired (`controller_api.ConnectionEvent`)."""

    __tablename__ = "connection_event"
    __table_args__ = (Index(None, "connection_id", "at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    connection_id: Mapped[int] = mapped_column(ForeignKey("connection.id"))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    kind: Mapped[str] = mapped_column(String(16))
    detail: Mapped[str] = mapped_column(String(1024), default="")


class Reservation(Base):
    """bit/s held in one direction of one link (`forward`: from the link's a to its b) for
    one generation of a connection's path.

    A reservation counts against its link direction until `released` is set; setting it is a
    conditional UPDATE (`WHERE released IS NULL`), so a release that runs twice (a retry,
    recovery after a crash) frees the bandwidth exactly once. During make-before-break the
    old generation (CURRENT) and the new one (NEXT) both count, as both carry traffic.
    """

    __tablename__ = "reservation"
    __table_args__ = (
        UniqueConstraint("connection_id", "link_id", "generation", "forward"),
        CheckConstraint("bps > 0", name="bps_positive"),
        Index(None, "link_id", "released"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    connection_id: Mapped[int] = mapped_column(ForeignKey("connection.id"))
    link_id: Mapped[int] = mapped_column(ForeignKey("link.id"))
    forward: Mapped[bool] = mapped_column(Boolean)
    bps: Mapped[int] = mapped_column(BigInteger)
    generation: Mapped[int] = mapped_column(Integer)
    role: Mapped[ReservationRole] = mapped_column(_enum(ReservationRole, "role"))
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    released: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    link: Mapped[Link] = relationship()


class RequestJournal(Base):
    """One row per request that changes agents, advanced phase by phase in its own short
    transactions, so a controller restarted after a crash finds what was in flight."""

    __tablename__ = "request_journal"
    __table_args__ = (Index(None, "phase"),)
    request_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    operation: Mapped[str] = mapped_column(String(16))  # create | modify | release
    tenant_id: Mapped[int | None] = mapped_column(ForeignKey("tenant.id"))
    connection_id: Mapped[int | None] = mapped_column(ForeignKey("connection.id"))
    phase: Mapped[RequestPhase] = mapped_column(
        _enum(RequestPhase, "phase"), default=RequestPhase.RECEIVED
    )
    hosts: Mapped[list[str]] = mapped_column(JSON, default=list)  # the agents it touches
    error: Mapped[str | None] = mapped_column(String(1024))
    updated: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now, onupdate=_now)


class ApiToken(Base):
    """An API token: only its SHA-256 is stored, so the database never holds a usable token.
    `tenant_id` is set for a tenant administrator's token; `revoked`/`expires` end it."""

    __tablename__ = "api_token"
    __table_args__ = (
        CheckConstraint("role IN ('provider', 'tenant')", name="role_known"),
        CheckConstraint("role = 'provider' OR tenant_id IS NOT NULL", name="tenant_has_tenant"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    tenant_id: Mapped[int | None] = mapped_column(ForeignKey("tenant.id"))
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    expires: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tenant: Mapped[Tenant | None] = relationship()


class OperState(enum.StrEnum):
    UP = "up"
    DOWN = "down"  # a link: an end's interface is down
    UNREACHABLE = "unreachable"  # a host: its agent does not answer
    UNKNOWN = "unknown"  # nothing heard yet


class ElementState(Base):
    """The operational state of one host or link as the controller last learned it, since
    when, why, and whose word it was (`reported_by`: the host whose agent told, or
    "controller" for its own liveness checks). One row per element, replaced on change."""

    __tablename__ = "element_state"
    __table_args__ = (
        UniqueConstraint("kind", "name"),
        CheckConstraint("kind IN ('host', 'link')", name="kind_known"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(NAME))
    state: Mapped[OperState] = mapped_column(_enum(OperState, "oper_state"))
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    reason: Mapped[str] = mapped_column(String(255), default="")
    reported_by: Mapped[str] = mapped_column(String(NAME), default="")
