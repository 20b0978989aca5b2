"""The requests of one round: which end hosts to connect, what to modify, what to remove.

As in paper 001 Sec. 4.1 the requests are drawn at random over the network's end hosts
(seeded, so a run can be repeated request for request): each create joins an end host to
another of its tenant, on another physical host whenever the tenant has one, so that the
connection crosses the underlay and its pieces land on at least two agents; each is a UDP
flow of its own (a destination port per connection), as one application's request. The modifies
change the bandwidth of the round's first connections (make-before-break on the
controller), and the removes release every connection the round created.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from vnet.model.controller_api import ConnectionRequest, EndHostView, ModifyRequest

NAME_PREFIX = "bench"  # every connection the bench makes; 32 characters at most in all
# Each connection of a round is its own UDP flow (destination port PORT_BASE + i): random pairs
# repeat, and two connections steering the same 5-tuple on one VR are refused by its agent.
PORT_BASE = 5001


class ScheduleError(ValueError):
    """The topology has no pair of end hosts to connect."""


@dataclass(frozen=True)
class Create:
    tenant: str
    body: ConnectionRequest
    key: str  # Idempotency-Key: a retried request must not make a second connection


@dataclass(frozen=True)
class Modify:
    tenant: str
    name: str
    body: ModifyRequest


@dataclass(frozen=True)
class Remove:
    tenant: str
    name: str


Request = Create | Modify | Remove


@dataclass(frozen=True)
class Round:
    creates: list[Create]
    modifies: list[Modify]
    removes: list[Remove]

    def of(self, operation: str) -> Sequence[Request]:
        return {"create": self.creates, "modify": self.modifies, "remove": self.removes}[operation]


def peers(endhosts: Sequence[EndHostView]) -> dict[str, list[EndHostView]]:
    """For each end host, whom it may be connected to: its tenant's end hosts on other
    physical hosts, or (a tenant on one host only) its tenant's other end hosts."""
    found: dict[str, list[EndHostView]] = {}
    for a in endhosts:
        mates = [b for b in endhosts if b.tenant == a.tenant and b.name != a.name]
        remote = [b for b in mates if b.host != a.host]
        if a.tenant is not None and (remote or mates):
            found[a.name] = remote or mates
    return found


def make_round(
    endhosts: Sequence[EndHostView],
    tag: str,
    creates: int,
    modifies: int,
    bandwidth_bps: int,
    modified_bps: int,
    rng: random.Random,
) -> Round:
    """`creates` random connections named `bench-<tag>-<i>`, the first `modifies` of them
    modified to `modified_bps`, and all of them removed (in a shuffled order)."""
    choices = peers(endhosts)
    if not choices:
        raise ScheduleError("no tenant has two end hosts: nothing to connect")
    by_name = {e.name: e for e in endhosts}
    sources = sorted(choices)
    made = []
    for i in range(creates):
        a = by_name[rng.choice(sources)]
        b = rng.choice(choices[a.name])
        name = f"{NAME_PREFIX}-{tag}-{i}"
        body = ConnectionRequest(
            name=name, a=a.name, b=b.name, protocol="udp", dst_port=PORT_BASE + i,
            bandwidth=bandwidth_bps,
        )  # fmt: skip
        made.append(Create(str(a.tenant), body, key=f"{name}-{rng.getrandbits(64):016x}"))
    changed = [
        Modify(c.tenant, c.body.name, ModifyRequest(bandwidth=modified_bps))
        for c in made[:modifies]
    ]
    removes = [Remove(c.tenant, c.body.name) for c in made]
    rng.shuffle(removes)
    return Round(made, changed, removes)
