"""The controller's state in SQL: models, engines, migrations and the reservation ledger."""

from vnet.controller.db.engine import default_url, make_engine, session_factory
from vnet.controller.db.ledger import LinkShortfall, Refused, UnknownLinks, release, reserve
from vnet.controller.db.migrate import upgrade
from vnet.controller.db.models import (
    Base,
    Connection,
    ConnectionState,
    GuaranteedLink,
    Host,
    Link,
    RequestJournal,
    RequestPhase,
    Reservation,
    ReservationRole,
    Tenant,
    VirtualNetwork,
    VirtualRouter,
)

__all__ = [
    "Base",
    "Connection",
    "ConnectionState",
    "GuaranteedLink",
    "Host",
    "Link",
    "LinkShortfall",
    "Refused",
    "RequestJournal",
    "RequestPhase",
    "Reservation",
    "ReservationRole",
    "Tenant",
    "UnknownLinks",
    "VirtualNetwork",
    "VirtualRouter",
    "default_url",
    "make_engine",
    "release",
    "reserve",
    "session_factory",
    "upgrade",
]
