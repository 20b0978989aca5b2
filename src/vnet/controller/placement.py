"""Where the controller puts a VR whose request names no host (as Neutron's placement does
for an instance): on the host with the most capacity left.

The rule: among the candidate hosts (those with an agent, in inventory order), the one whose
underlay links have the most free capacity in the ledger, summed over both directions of
every link that ends there (free = what connections may use less what live connections hold,
`LinkInfo.capacity` less `db.ledger.held_by_direction`); ties go to the host with the fewest
VRs, then to the first in inventory order. A VR forwards its tenant's connections over the
links of its host, so the host with the most room on them is the one where the VR can carry
most; the count of VRs spreads VRs over equally free hosts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vnet.controller.inventory import LinkInfo

Direction = tuple[str, bool]  # (link name, forward), as db.ledger counts


def free_capacity(host: str, links: Mapping[str, LinkInfo], held: Mapping[Direction, int]) -> int:
    """Bit/s still free on the links that end at `host`, both directions summed."""
    total = 0
    for name, link in links.items():
        if host in (link.a, link.b):
            for forward in (True, False):
                total += max(0, link.capacity - held.get((name, forward), 0))
    return total


def choose_host(
    candidates: Sequence[str],
    links: Mapping[str, LinkInfo],
    held: Mapping[Direction, int],
    routers_on: Mapping[str, int],
) -> str:
    """The host the rule above picks among `candidates` (not empty)."""
    if not candidates:
        raise ValueError("no candidate host")
    order = {host: k for k, host in enumerate(candidates)}
    return min(
        candidates,
        key=lambda h: (-free_capacity(h, links, held), routers_on.get(h, 0), order[h]),
    )
