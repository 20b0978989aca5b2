"""The domain objects of a vnet deployment, as plain validated data.

Field-level checks (types, ranges, address syntax) live here; checks that
relate objects to each other (names, subnets, next hops) live in
`vnet.model.check` so that each reports the exact place of the problem.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from ipaddress import (
    IPv4Address,
    IPv4Interface,
    IPv4Network,
    IPv6Address,
    IPv6Interface,
    IPv6Network,
    ip_address,
    ip_interface,
    ip_network,
)
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from vnet.model.connection import Connection
from vnet.model.controller_config import DEFAULT_PORT, Share
from vnet.model.rate import parse_rate
from vnet.model.resources import Resources
from vnet.model.routing import InterfaceOspf, Routing

Rate = Annotated[int, BeforeValidator(parse_rate)]


def _ip(kind: str, parse: Any, version: int | None, given: tuple[type, ...] = ()) -> Any:
    """A validator with one plain-language error instead of pydantic's per-union noise.
    A value of exactly one of the `given` types is what `parse` would give for its text, and
    is taken as it is (the pieces of a connection are made of addresses: their text and
    parse again were most of building them)."""

    def validate(value: Any) -> Any:
        if type(value) in given:
            if version is not None and value.version != version:
                raise ValueError(f"{str(value)!r} is not {kind}: it is IPv{value.version}")
            return value
        if not isinstance(value, str | int) or isinstance(value, bool):
            if hasattr(value, "version"):
                value = str(value)
            else:
                raise ValueError(f"expected {kind} as a string, got {type(value).__name__}")
        try:
            parsed = parse(str(value))
        except ValueError as err:
            raise ValueError(f"{value!r} is not {kind}: {err}") from None
        if version is not None and getattr(parsed, "version", version) != version:
            raise ValueError(f"{value!r} is not {kind}: it is IPv{parsed.version}")
        return parsed

    return BeforeValidator(validate)


def _network(text: str) -> IPv4Network | IPv6Network:
    try:
        return ip_network(text, strict=True)
    except ValueError:
        loose = ip_network(text, strict=False)
        raise ValueError(f"host bits are set; the network is {loose}") from None


def _interface(text: str) -> IPv4Interface | IPv6Interface:
    if "/" not in text:
        raise ValueError("write the address with its prefix length, e.g. 10.0.0.1/24")
    return ip_interface(text)


Network4 = Annotated[IPv4Network, _ip("an IPv4 subnet", _network, 4, (IPv4Network,))]
Network6 = Annotated[IPv6Network, _ip("an IPv6 subnet", _network, 6, (IPv6Network,))]
AnyNetwork = Annotated[
    IPv4Network | IPv6Network, _ip("an IP subnet", _network, None, (IPv4Network, IPv6Network))
]


def _destination(text: str) -> str | IPv4Network | IPv6Network:
    return "default" if text == "default" else _network(text)


Destination = Annotated[
    Literal["default"] | IPv4Network | IPv6Network,
    _ip("'default' or an IP subnet", _destination, None),
]
Address = Annotated[
    IPv4Address | IPv6Address, _ip("an IP address", ip_address, None, (IPv4Address, IPv6Address))
]
Interface4 = Annotated[
    IPv4Interface, _ip("an IPv4 address/prefix", _interface, 4, (IPv4Interface,))
]
Interface6 = Annotated[
    IPv6Interface, _ip("an IPv6 address/prefix", _interface, 6, (IPv6Interface,))
]
VNI_MAX = 2**24 - 1
VR_INDEX_MAX = 65535
DEFAULT_UNDERLAY_PREFIX: dict[str, IPv4Network | IPv6Network] = {
    "ipv4": IPv4Network("10.200.0.0/16"),
    "ipv6": IPv6Network("fd00:200::/48"),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Underlay(_Strict):
    """How emulated (or real) physical hosts reach each other."""

    family: Literal["ipv4", "ipv6"] = "ipv4"
    prefix: AnyNetwork | None = None

    @property
    def effective_prefix(self) -> IPv4Network | IPv6Network:
        return self.prefix or DEFAULT_UNDERLAY_PREFIX[self.family]


class PhysicalHost(_Strict):
    name: str


class UnderlayLink(_Strict):
    a: str
    b: str
    rate: Rate | None = None
    mtu: int = Field(1500, ge=1280, le=9000)
    # guaranteed to everything on the link that is not tenant VXLAN (management,
    # routing); None: 1% of the rate (see vnet.model.qos)
    management: Rate | None = None


class Tenant(_Strict):
    name: str
    # "auto": vnet derives static routes along shortest paths inside the
    # tenant's networks, so large topologies need no hand-written routes.
    routing: Literal["static", "auto"] = "static"
    # where the tenant's SRv6 locators come from (one /48 per VR); None: fc00:<k>::/32
    # for the k-th tenant (see vnet.model.srv6)
    locators: Network6 | None = None


class VirtualNetwork(_Strict):
    """One isolated layer-2 segment of a tenant, carried across hosts by its VNI."""

    name: str
    tenant: str
    vni: int = Field(ge=1, le=VNI_MAX)
    ipv4: Network4 | None = None
    ipv6: Network6 | None = None
    bandwidth: Rate | None = None
    # what the network may use when others leave bandwidth unused; None: `bandwidth`
    ceil: Rate | None = None
    mtu: int | None = Field(None, ge=1280, le=9000)
    # hosts that carry the network even without a VR or end host of the file there
    # (say, for VRs created later through an agent)
    hosts: list[str] = Field(default_factory=list)


# what a default route covers (immutable: one of each for every route that asks)
ANY_IPV4, ANY_IPV6 = IPv4Network("0.0.0.0/0"), IPv6Network("::/0")


class Route(_Strict):
    to: Destination
    via: Address

    @property
    def destination(self) -> IPv4Network | IPv6Network:
        if self.to == "default":
            return ANY_IPV4 if self.via.version == 4 else ANY_IPV6
        return self.to


class Interface(_Strict):
    network: str
    name: str | None = None
    ipv4: Interface4 | None = None
    ipv6: Interface6 | None = None
    # its part in OSPF when the VR's routing is ospf; None: none (announced as connected)
    ospf: InterfaceOspf | None = None


class VirtualRouter(_Strict):
    name: str
    host: str
    index: int | None = Field(None, ge=1, le=VR_INDEX_MAX)
    admin_state: Literal["up", "down"] = "up"
    interfaces: list[Interface] = Field(default_factory=list)
    routes: list[Route] = Field(default_factory=list)
    # static (only `routes`) or ospf (FRR inside the VR); None: static
    routing: Routing | None = None
    # CPU and memory its processes may use (routing daemons, applications); None: unlimited
    resources: Resources | None = None

    @property
    def runs_ospf(self) -> bool:
        return self.routing is not None and self.routing.protocol == "ospf"

    def ifname(self, position: int) -> str:
        """The interface's name inside the VR: its own or eth<position>."""
        return self.interfaces[position].name or f"eth{position}"


class EndHost(_Strict):
    """A tenant machine with one interface in one virtual network."""

    name: str
    host: str
    network: str
    ipv4: Interface4 | None = None
    ipv6: Interface6 | None = None
    routes: list[Route] = Field(default_factory=list)
    # CPU and memory its processes may use (traffic generators, applications); None: unlimited
    resources: Resources | None = None


class Management(_Strict):
    """A management network inside the lab, and an agent on every physical host."""

    agents: bool = True
    subnet: Network4 = IPv4Network("172.30.0.0/24")
    user: str = "admin"
    password: str | None = None  # None: a random one per lab, kept in the lab's record


class ControllerSection(_Strict):
    """A `vnet controller` the lab runs in its management network, wired to its agents: it
    admits connections (`vnet conn request`) on the file's hosts, links and networks."""

    # SQLAlchemy URL (postgresql+psycopg://...); None: SQLite in the lab's state directory
    database: str | None = None
    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    # share of each link kept back from admission for the shapers' inaccuracy (paper: 5 %)
    margin: Share = Fraction(5, 100)
    # seconds an agent keeps an unconfirmed commit before it rolls back by itself
    confirm_timeout: int = Field(60, ge=1, le=3600)
    # seconds between the controller's polls of every agent's class counters
    utilisation_interval: float = Field(1.0, gt=0, le=3600)


class Topology(_Strict):
    """Everything one lab (or one physical host's agent) should realise."""

    name: str = "vnet"
    underlay: Underlay = Field(default_factory=Underlay)
    hosts: list[PhysicalHost] = Field(default_factory=list)
    links: list[UnderlayLink] = Field(default_factory=list)
    tenants: list[Tenant] = Field(default_factory=list)
    networks: list[VirtualNetwork] = Field(default_factory=list)
    routers: list[VirtualRouter] = Field(default_factory=list)
    endhosts: list[EndHost] = Field(default_factory=list)
    management: Management | None = None
    controller: ControllerSection | None = None
    connections: list[Connection] = Field(default_factory=list)

    def network(self, name: str) -> VirtualNetwork:
        return by_name(self.networks, name)

    def router(self, name: str) -> VirtualRouter:
        return by_name(self.routers, name)


Named = TypeVar("Named", VirtualNetwork, VirtualRouter)


def by_name(items: Iterable[Named], name: str) -> Named:
    """The object called `name` (KeyError if none): objects are found by name everywhere."""
    for item in items:
        if item.name == name:
            return item
    raise KeyError(name)
