"""The controller's API as data: what requests carry and answers hold (issue 12).

The controller (`vnet.controller.api`) serves these; `vnet.client.controller`, the CLI, the
benchmarks and the web console read them. They live in the model layer because both sides
of the wire use them and the client may not import the controller. Field names are the JSON
names; the XML form (paper 001's applications speak XML) carries the same names as elements.

Bandwidths are bit/s on the way out and a rate ("20mbit") or bit/s on the way in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from vnet.model.connection import Protocol
from vnet.model.names import MAX_NETWORK_NAME, MAX_NODE_NAME, MAX_TENANT_NAME, NAME_PATTERN
from vnet.model.topology import VNI_MAX, Interface4, Interface6, Network4, Network6, Rate, Route

API_PREFIX = "/api/v1"
IDEMPOTENCY_HEADER = "Idempotency-Key"
Role = Literal["provider", "tenant"]
ConnectionStatus = Literal[
    "requested", "established", "modifying", "released", "failed", "degraded"
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Names in requests, as the model names them (vnet.model.names), so that the served OpenAPI
# description states each rule the controller enforces.
NodeName = Annotated[str, Field(min_length=1, max_length=MAX_NODE_NAME, pattern=NAME_PATTERN)]
NetworkName = Annotated[str, Field(min_length=1, max_length=MAX_NETWORK_NAME, pattern=NAME_PATTERN)]
TenantName = Annotated[str, Field(min_length=1, max_length=MAX_TENANT_NAME, pattern=NAME_PATTERN)]
NODE_NAME_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_NODE_NAME,
    "pattern": NAME_PATTERN,
}
TOKEN_LIFETIME_MAX = 10 * 366 * 24 * 3600  # seconds: ten years; beyond, a date overflows

# A bandwidth in a request: bit/s as an integer, or a rate string whose value is a whole
# number of bit/s (the fraction has no more digits than the unit has zeros). At most
# API_RATE_MAX: the database keeps rates in 64-bit signed integers.
API_RATE_MAX = 2**63 - 1
RATE_PATTERN = (
    "^(?:[1-9][0-9]{0,17}(?:bit|bps)?"
    "|[1-9][0-9]{0,14}(?:\\.[0-9]{1,3})?(?:k|kbit|kbps)"
    "|[1-9][0-9]{0,11}(?:\\.[0-9]{1,6})?(?:m|mbit|mbps)"
    "|[1-9][0-9]{0,8}(?:\\.[0-9]{1,9})?(?:g|gbit|gbps)"
    "|[1-9][0-9]{0,5}(?:\\.[0-9]{1,12})?(?:t|tbit))$"
)
RATE_SCHEMA = {
    "anyOf": [
        {"type": "integer", "minimum": 1, "maximum": API_RATE_MAX},
        {"type": "string", "pattern": RATE_PATTERN},
    ],
    "description": "bit/s, or a rate such as '20mbit' or '1.5gbit'",
}
ApiRate = Annotated[Rate, Field(le=API_RATE_MAX), WithJsonSchema(RATE_SCHEMA)]


# -- requests ------------------------------------------------------------------------------
class ConnectionRequest(_Body):
    """A tenant asks for a guaranteed connection between two of its end hosts."""

    name: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    a: NodeName  # source end host
    b: NodeName  # destination end host
    protocol: Protocol | None = None
    src_port: int | None = Field(None, ge=1, le=65535)
    dst_port: int | None = Field(None, ge=1, le=65535)
    bandwidth: ApiRate
    bidirectional: bool = False
    # explicit path of physical hosts, from a's host to b's host; None: the controller chooses
    path: list[NodeName] | None = None
    packet_size: int = Field(1500, ge=64, le=9000)  # what the encapsulation overhead is counted at


def _some_non_null_member(schema: dict[str, Any]) -> None:
    """The document of a body whose members may be left out but are never null."""
    schema["minProperties"] = 1
    for member in schema["properties"].values():
        member.pop("default", None)


class ModifyRequest(_Body):
    """Change the bandwidth, the path, or both (make-before-break); what is left out stays.
    A member given as null says nothing, and is refused like a modify that names nothing."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_some_non_null_member)

    bandwidth: Annotated[ApiRate | None, WithJsonSchema(RATE_SCHEMA)] = None
    path: Annotated[
        list[NodeName] | None,
        WithJsonSchema({"type": "array", "items": NODE_NAME_SCHEMA, "minItems": 1}),
    ] = None

    @model_validator(mode="before")
    @classmethod
    def _names_a_change(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if nulls := [k for k in ("bandwidth", "path") if k in data and data[k] is None]:
                raise ValueError(f"{' and '.join(nulls)} may be left out, not null")
            if not data:
                raise ValueError("a modify names a new bandwidth, a new path, or both")
        return data


class TenantRequest(_Body):
    name: TenantName


class NetworkRequest(_Body):
    """A tenant's new virtual network; `bandwidth` is its guarantee on each link it crosses."""

    name: NetworkName
    vni: int = Field(ge=1, le=VNI_MAX)
    ipv4: Network4 | None = None
    ipv6: Network6 | None = None
    bandwidth: ApiRate | None = None
    hosts: list[NodeName] = Field(default_factory=list)  # carried there even without a VR yet


class RouterInterfaceRequest(_Body):
    network: NetworkName
    ipv4: Interface4 | None = None
    ipv6: Interface6 | None = None


class RouterRequest(_Body):
    """A tenant's new VR; `host` None: the controller places it (docs/controller.md)."""

    name: NodeName
    host: NodeName | None = None
    interfaces: list[RouterInterfaceRequest] = Field(min_length=1)


class EndHostRequest(_Body):
    """A tenant's machine in one of its networks, attached by the operator to the network's
    bridge on `host` (its VRs route to it; connections name it)."""

    name: NodeName
    host: NodeName
    network: NetworkName
    ipv4: Interface4 | None = None
    ipv6: Interface6 | None = None
    routes: list[Route] = Field(default_factory=list)  # its own, e.g. default via its VR


# a file in the controller's agent_secrets_dir, by name (no directory; not dots alone)
SecretName = Annotated[str, Field(max_length=255, pattern=r"^[^/\x00]*[^/.\x00][^/\x00]*$")]
# what `vnet agent hostkey` prints ("ssh-ed25519 AAAA... comment"), or its base64 part
HostKey = Annotated[
    str, Field(max_length=4096, pattern=r"^([A-Za-z0-9@.-]+ )?AAAA[A-Za-z0-9+/]+=*( [^\x00]*)?$")
]


class AgentRequest(_Body):
    """How the controller reaches a host's agent, given with the host (the configuration's
    `agents:` entries say the same: AgentEndpoint). Its secrets are files the controller
    reads, named here: files in its agent_secrets_dir."""

    address: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][A-Za-z0-9.:-]*$")
    netconf_port: int = Field(830, ge=1, le=65535)
    user: str = Field("admin", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_][\w.-]*$")
    password_file: SecretName | None = None
    key_file: SecretName | None = None
    hostkey: HostKey | None = None  # None: only with the controller's trust_on_first_use
    # a network namespace (of /run/netns) to reach it from
    namespace: str | None = Field(None, max_length=255, pattern=r"^[\w.-]*[\w-][\w.-]*$")
    provision_networks: bool = True


class HostRequest(_Body):
    """A physical host added to the inventory, with how to reach its agent (or without: the
    configuration's `agents:` names it, or it gets one later by being added again with it)."""

    name: NodeName
    agent: AgentRequest | None = None


class LinkRequest(_Body):
    """An underlay link added between two hosts of the inventory, named "<a>-<b>"."""

    a: NodeName
    b: NodeName
    rate: ApiRate
    mtu: int = Field(1500, ge=1280, le=9000)
    management: ApiRate | None = None  # kept for management and routing; None: 1% of the rate


class TokenRequest(_Body):
    # the document states what create_token enforces: a tenant token names its tenant, a
    # provider token none
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "if": {"properties": {"role": {"const": "tenant"}}},
            "then": {"required": ["tenant"], "properties": {"tenant": {"type": "string"}}},
            "else": {"properties": {"tenant": {"type": "null"}}},
        },
    )

    role: Role
    tenant: TenantName | None = None  # required for role "tenant"
    expires_in: int | None = Field(None, ge=1, le=TOKEN_LIFETIME_MAX)  # seconds; None: never


# -- answers -------------------------------------------------------------------------------
class Shortfall(_Body):
    """One link direction that lacks capacity for a request."""

    link: str
    direction: str  # "h1 -> h2"
    requested_bps: int
    free_bps: int
    missing_bps: int


class Unmovable(_Body):
    """A connection that could not be moved off a link or host, and why."""

    connection: str
    tenant: str
    path: list[str]
    reason: str


class ErrorBody(_Body):
    """Every non-2xx answer: what went wrong, where, why; nothing was changed."""

    status: int
    code: str  # bad-request, unknown-tenant, unauthorized, forbidden, no-capacity, agent-refused...
    reason: str
    field: str | None = None
    shortfalls: list[Shortfall] = Field(default_factory=list)
    host: str | None = None  # the agent that refused, for code agent-refused
    holders: list[str] = Field(default_factory=list)  # what holds it, for code in-use
    unmovable: list[Unmovable] = Field(default_factory=list)  # what holds an element removed


class Hop(_Body):
    host: str
    router: str
    sid: str | None = None  # the SID this hop's VR owns for the connection (None: ingress)


class Move(_Body):
    """A connection moved make-before-break to let a request in."""

    connection: str
    tenant: str
    old_path: list[str]
    new_path: list[str]


class Drained(_Body):
    """What moving every connection off links and hosts did: the moves made, and the
    connections that could not move (with why)."""

    moved: list[Move] = Field(default_factory=list)
    unmovable: list[Unmovable] = Field(default_factory=list)


class Removed(_Body):
    """A host or link removed from the inventory, with the connections moved off it first."""

    kind: Literal["host", "link"]
    name: str
    moved: list[Move] = Field(default_factory=list)


class FailoverReport(_Body):
    """What a link or host going down or coming back did to the connections crossing it."""

    moved: list[Move] = Field(default_factory=list)
    degraded: list[Unmovable] = Field(default_factory=list)
    restored: list[str] = Field(default_factory=list)  # "tenant/name" running again


class ConnectionView(_Body):
    tenant: str
    name: str
    status: ConnectionStatus
    a: str
    b: str
    protocol: Protocol | None = None
    src_port: int | None = None
    dst_port: int | None = None
    bandwidth: int
    bidirectional: bool = False
    path: list[str] = Field(default_factory=list)  # physical hosts
    hops: list[Hop] = Field(default_factory=list)  # VR and SID per host, a -> b
    segments: list[str] = Field(default_factory=list)  # the ingress's segment list, a -> b
    generation: int = 0
    created: datetime | None = None


class ConnectionAnswer(_Body):
    """The synchronous answer to create and modify: established, with what was moved."""

    status: Literal["established"] = "established"
    connection: ConnectionView
    moved: list[Move] = Field(default_factory=list)


class ShaperCounters(_Body):
    """A connection's shaper at one ingress VR, as that host's agent counts it."""

    direction: str  # "pc1 -> pc3"
    host: str
    router: str
    bytes: int
    packets: int
    drops: int


class ConnectionCounters(_Body):
    """What the connection's shapers have sent and dropped (one per direction)."""

    tenant: str
    name: str
    shapers: list[ShaperCounters] = Field(default_factory=list)


class ConnectionEvent(_Body):
    at: datetime
    kind: str  # created, modified, moved, released, failed, repaired
    detail: str = ""


class ConnectionChange(_Body):
    """One line of a connection's history, as the event stream carries it (`event:
    connection`): created, modified, moved, rerouted, degraded, restored, released..."""

    tenant: str
    name: str
    at: datetime
    kind: str
    detail: str = ""


class TenantView(_Body):
    name: str


class NetworkView(_Body):
    tenant: str
    name: str
    vni: int
    guarantees: dict[str, int] = Field(default_factory=dict)  # link -> bit/s


class RouterView(_Body):
    tenant: str | None
    name: str
    host: str
    networks: list[str] = Field(default_factory=list)


class EndHostView(_Body):
    tenant: str | None
    name: str
    host: str
    network: str
    addresses: list[str] = Field(default_factory=list)


OperState = Literal["up", "down", "unreachable", "unknown"]


class ElementStatus(_Body):
    """A host's or link's operational state as the controller last learned it: a host is
    up or unreachable (its agent does not answer), a link up or down (an end's interface is
    down); unknown until heard. `reported_by`: the host whose agent said so, or
    "controller" (its own liveness check)."""

    state: OperState = "unknown"
    since: datetime | None = None
    reason: str = ""
    reported_by: str = ""


class StateChange(_Body):
    """One change of a host's or link's operational state (the event stream's `state`)."""

    kind: Literal["host", "link"]
    name: str
    before: OperState
    status: ElementStatus


class HostView(_Body):
    name: str
    agent: str  # the agent's endpoint, "address:port"
    reachable: bool | None = None  # None: not asked yet
    status: ElementStatus = Field(default_factory=ElementStatus)
    # VRs its agent held at the last reconciliation that the controller does not manage
    unmanaged: list[str] = Field(default_factory=list)


class UnmanagedRouter(_Body):
    """A VR an agent holds that the controller's inventory does not (made on the agent
    directly, `vnet vr create`): what adopting it would take into the inventory."""

    host: str
    name: str
    networks: list[str] = Field(default_factory=list)
    addresses: list[str] = Field(default_factory=list)


class AdoptRequest(_Body):
    """Take VR `name`, which the agent of `host` holds, into the tenant's inventory."""

    host: str = Field(min_length=1, max_length=64)
    name: str = Field(min_length=1, max_length=64)


class LinkDirection(_Body):
    direction: str  # "h1 -> h2"
    reserved_bps: int  # held by connections (every generation counted)
    free_bps: int  # what admission may still hand out
    utilisation_bps: int | None = None  # measured from the agents' class counters


class LinkView(_Body):
    name: str
    a: str
    b: str
    capacity_bps: int
    directions: list[LinkDirection] = Field(default_factory=list)
    status: ElementStatus = Field(default_factory=ElementStatus)


class TopologyView(_Body):
    """Everything the caller may see, in one answer (the console's topology page)."""

    hosts: list[HostView]
    links: list[LinkView]
    tenants: list[TenantView]
    networks: list[NetworkView]
    routers: list[RouterView]
    endhosts: list[EndHostView]
    connections: list[ConnectionView]


class TokenView(_Body):
    token: str  # shown once
    role: Role
    tenant: str | None = None
    expires: datetime | None = None


class WhoAmI(_Body):
    role: Role
    tenant: str | None = None
