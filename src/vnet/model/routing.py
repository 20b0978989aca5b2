"""How a VR learns its routes: `static` (the routes it is given) or `ospf`.

Written in a topology file or a NETCONF edit as

    routers:
      - name: r1
        routing: {protocol: ospf, router_id: 10.255.0.1}
        interfaces:
          - network: core
            ipv4: 10.1.0.1/24
            ospf: {area: 0.0.0.0, cost: 10, hello: 1, dead: 4, bfd: {}}

Under `ospf` the VR runs OSPFv2 on the interfaces with `ospf` that have an
IPv4 address and OSPFv3 (paper 001's protocol) on those with an IPv6 one, for
the families in `families` (default: both); its other interfaces (toward end
hosts) are announced as connected routes but form no adjacency. vnet runs
FRRouting for it inside the VR (see docs/routing.md).
"""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

# FRR's bfdd limits (bfdd/bfdd_cli.c): intervals in ms, the multiplier in packets.
BFD_INTERVAL_MIN, BFD_INTERVAL_MAX = 10, 60000
BFD_MULTIPLIER_MIN, BFD_MULTIPLIER_MAX = 2, 255
OSPF_INTERVAL_MAX = 65535  # hello and dead, seconds (RFC 2328 A.3.2)
OSPF_COST_MAX = 65535
Family = Literal["ipv4", "ipv6"]


def _area(value: Any) -> str:
    """An area as OSPF writes it: a dotted quad; a plain number n is the quad of n."""
    if isinstance(value, bool):
        raise ValueError("an OSPF area is a dotted quad (0.0.0.0) or a number")
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        number = int(value)
        if not 0 <= number < 2**32:
            raise ValueError(f"area {number} is out of range 0..4294967295")
        return str(IPv4Address(number))
    if isinstance(value, str):
        try:
            return str(IPv4Address(value))
        except ValueError:
            pass
    raise ValueError(f"{value!r} is not an OSPF area: write a dotted quad (0.0.0.0) or a number")


Area = Annotated[str, BeforeValidator(_area)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Bfd(_Strict):
    """BFD on an OSPF interface: a neighbour is down after `multiplier` missed packets."""

    min_rx: int = Field(300, ge=BFD_INTERVAL_MIN, le=BFD_INTERVAL_MAX)
    min_tx: int = Field(300, ge=BFD_INTERVAL_MIN, le=BFD_INTERVAL_MAX)
    multiplier: int = Field(3, ge=BFD_MULTIPLIER_MIN, le=BFD_MULTIPLIER_MAX)


class InterfaceOspf(_Strict):
    """An interface's part in OSPF: its area, cost and timers (the same for v2 and v3)."""

    area: Area = "0.0.0.0"
    cost: int | None = Field(None, ge=1, le=OSPF_COST_MAX)  # None: FRR's from the bandwidth
    hello: int = Field(10, ge=1, le=OSPF_INTERVAL_MAX)
    dead: int = Field(40, ge=1, le=OSPF_INTERVAL_MAX)
    # announced in the area, but no hellos sent (an end hosts' network): an intra-area
    # route, recomputed with every SPF run, where a network left out of OSPF would be
    # an external one (FRR recomputes those up to a second later)
    passive: bool = False
    bfd: Bfd | None = None

    @model_validator(mode="after")
    def _dead_after_hello(self) -> InterfaceOspf:
        if self.dead <= self.hello:
            raise ValueError(
                f"dead interval {self.dead} s must be longer than the hello interval "
                f"{self.hello} s (a neighbour would be declared dead between two hellos)"
            )
        if self.passive and self.bfd is not None:
            raise ValueError("BFD on a passive interface: it has no neighbour to watch")
        return self


class Routing(_Strict):
    """A VR's routing: `static` (its own routes only) or `ospf`."""

    protocol: Literal["static", "ospf"] = "static"
    # the OSPF router id (v2 and v3); None: the VR's smallest IPv4 address, else one
    # derived from its name
    router_id: IPv4Address | None = Field(None)
    # which OSPF versions run: ipv4 is OSPFv2, ipv6 OSPFv3; None: each family the
    # VR's OSPF interfaces have addresses of
    families: list[Family] | None = None
