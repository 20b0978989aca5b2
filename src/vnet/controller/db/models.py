"""The controller's tables: the inventory (tenants, hosts, links, networks, VRs) and the
ledger (connections, their reservations per link, and the journal of requests in flight).

Bandwidths are integers in bit/s (BigInteger: 400 Gbit/s does not fit 32 bits). Enums are
stored as strings with a CHECK constraint, not as PostgreSQL enum types, so one schema and one
migration serve SQLite and PostgreSQL and a new state is a plain migration.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Enum,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    UniqueConstraint,
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


class Host(Base):
    """A physical host and how to reach its agent. `credentials_ref` names where the secret
    lives (a file, a key, a vault path), never the secret: the database and its logs hold no
    password."""

    __tablename__ = "host"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    agent_endpoint: Mapped[str] = mapped_column(String(255))
    credentials_ref: Mapped[str] = mapped_column(String(255))

    def __repr__(self) -> str:
        return f"Host({self.name!r}, agent={self.agent_endpoint!r})"


class Link(Base):
    """An underlay link between two hosts; its rows are what concurrent admissions lock."""

    __tablename__ = "link"
    __table_args__ = (CheckConstraint("capacity_bps > 0", name="capacity_positive"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    a_host_id: Mapped[int] = mapped_column(ForeignKey("host.id"))
    b_host_id: Mapped[int] = mapped_column(ForeignKey("host.id"))
    capacity_bps: Mapped[int] = mapped_column(BigInteger)
    a_host: Mapped[Host] = relationship(foreign_keys=[a_host_id])
    b_host: Mapped[Host] = relationship(foreign_keys=[b_host_id])


class VirtualNetwork(Base):
    __tablename__ = "virtual_network"
    __table_args__ = (
        UniqueConstraint("tenant_id", "name"),
        CheckConstraint("vni >= 1 AND vni <= 16777215", name="vni_range"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id"))
    name: Mapped[str] = mapped_column(String(NAME))
    vni: Mapped[int] = mapped_column(Integer, unique=True)
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
    __tablename__ = "virtual_router"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id"))
    network_id: Mapped[int | None] = mapped_column(ForeignKey("virtual_network.id"))
    host_id: Mapped[int] = mapped_column(ForeignKey("host.id"))
    name: Mapped[str] = mapped_column(String(NAME))
    tenant: Mapped[Tenant] = relationship()
    host: Mapped[Host] = relationship()


class Connection(Base):
    """A tenant's guaranteed connection between two VRs, optionally only one 5-tuple.

    `idempotency_key` is unique per tenant: a retried request finds the connection the first
    attempt made instead of creating a second one. `path` is the explicit path asked for (link
    names), None when the controller chooses. `generation` numbers the paths the connection
    has had; its reservations carry the generation they were made for.
    """

    __tablename__ = "connection"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        CheckConstraint("bandwidth_bps > 0", name="bandwidth_positive"),
        Index(None, "state"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id"))
    idempotency_key: Mapped[str | None] = mapped_column(String(128))
    src_vr_id: Mapped[int] = mapped_column(ForeignKey("virtual_router.id"))
    dst_vr_id: Mapped[int] = mapped_column(ForeignKey("virtual_router.id"))
    # the optional 5-tuple; None fields match anything
    protocol: Mapped[str | None] = mapped_column(String(8))
    src_prefix: Mapped[str | None] = mapped_column(String(64))
    dst_prefix: Mapped[str | None] = mapped_column(String(64))
    src_port: Mapped[int | None] = mapped_column(Integer)
    dst_port: Mapped[int | None] = mapped_column(Integer)
    bandwidth_bps: Mapped[int] = mapped_column(BigInteger)
    path: Mapped[list[str] | None] = mapped_column(JSON)
    state: Mapped[ConnectionState] = mapped_column(
        _enum(ConnectionState, "state"), default=ConnectionState.REQUESTED
    )
    generation: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    tenant: Mapped[Tenant] = relationship()
    src_vr: Mapped[VirtualRouter] = relationship(foreign_keys=[src_vr_id])
    dst_vr: Mapped[VirtualRouter] = relationship(foreign_keys=[dst_vr_id])


class Reservation(Base):
    """bit/s held on one link for one generation of a connection's path.

    A reservation counts against its link until `released` is set; setting it is a
    conditional UPDATE (`WHERE released IS NULL`), so a release that runs twice (a retry,
    recovery after a crash) frees the bandwidth exactly once. During make-before-break the
    old generation (CURRENT) and the new one (NEXT) both count, as both carry traffic.
    """

    __tablename__ = "reservation"
    __table_args__ = (
        UniqueConstraint("connection_id", "link_id", "generation"),
        CheckConstraint("bps > 0", name="bps_positive"),
        Index(None, "link_id", "released"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    connection_id: Mapped[int] = mapped_column(ForeignKey("connection.id"))
    link_id: Mapped[int] = mapped_column(ForeignKey("link.id"))
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
