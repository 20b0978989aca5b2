"""An end-to-end connection with a guaranteed bandwidth over an explicit path.

The paper's second level of virtualization: a tunnel between two end hosts of
one tenant, set up on the edge routers, pinned to a given list of virtual
routers, shaped at its entry, and steered by the flow it is for (protocol and
ports), so that other traffic between the same hosts keeps its normal route.

This module holds only the declaration (it must not import the topology,
which refers to it); `vnet.model.srv6` derives addresses, tunnels and checks.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from vnet.model.rate import parse_rate

CONNECTION_ID_MAX = 4095  # fits a tc classid minor, a rule priority offset and a SID field

Protocol = Literal["tcp", "udp", "sctp", "icmp"]
PORT_PROTOCOLS = ("tcp", "udp", "sctp")


class Connection(BaseModel):
    """Traffic from end host `a` to end host `b` (and back if `bidirectional`).

    `src_port`/`dst_port` are a's and b's ports in the a->b direction; the
    reverse tunnel swaps them. Without a protocol every packet between the two
    addresses takes the tunnel.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    id: int | None = Field(None, ge=1, le=CONNECTION_ID_MAX)
    a: str
    b: str
    protocol: Protocol | None = None
    src_port: int | None = Field(None, ge=1, le=65535)
    dst_port: int | None = Field(None, ge=1, le=65535)
    bandwidth: Annotated[int, BeforeValidator(parse_rate)]
    path: list[str] = Field(min_length=2)
    bidirectional: bool = False
    # None: every family both end hosts have an address of
    family: Literal["ipv4", "ipv6", "both"] | None = None
