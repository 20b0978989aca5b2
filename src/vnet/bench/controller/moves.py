"""The moves series: path modifies ("move") and creates that fit only by moving another
connection ("rearrange"), so that their cost is measured next to the creates.

- move: after the modifies, the round's first `moves` connections are each given another
  path between the same two hosts (the shortest simple path over the links that differs
  from the one it runs on): the controller moves it make-before-break (three agent
  transactions).
- rearrange: one situation at a time, on the links in turn: a "filler" (controller's choice
  of path, so the direct link, and movable) takes about half of the free capacity of one
  direction of a link; then a "pinned" create asks for about half again on that link by an
  explicit path. It fits only once the filler goes round another way: the measured time is
  the pinned create's, the move included. Both are released before the next situation. Each
  needs a link of its own, so they are measured one at a time (x = 1), in the rounds at the
  plan's lowest concurrency; a pinned create that moved nothing is not a rearrangement: it
  is noted and not counted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vnet.bench.controller.driver import Access, Answer, drive
from vnet.bench.controller.schedule import NAME_PREFIX, Create, Modify, Remove
from vnet.model.controller_api import (
    ConnectionRequest,
    ConnectionView,
    EndHostView,
    LinkView,
    ModifyRequest,
)

SHARE = 0.5  # of a direction's free capacity asked by the filler and by the pinned create
REARRANGE_PORT_BASE = 40001  # ports of their own: the round's connections use 5001 + i


def neighbours(links: Sequence[LinkView]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for link in sorted(links, key=lambda x: x.name):
        found.setdefault(link.a, []).append(link.b)
        found.setdefault(link.b, []).append(link.a)
    return found


def alternative_path(links: Sequence[LinkView], path: Sequence[str]) -> list[str] | None:
    """The shortest simple path of hosts from path[0] to path[-1] other than `path` (fewest
    hops, then by name); None when there is none (or the ends are one host)."""
    if len(path) < 2:
        return None
    graph = neighbours(links)
    start, end = path[0], path[-1]
    queue: deque[list[str]] = deque([[start]])
    while queue:
        walk = queue.popleft()
        if walk[-1] == end:
            if walk != list(path):
                return walk
            continue
        for nxt in graph.get(walk[-1], []):
            if nxt not in walk and len(walk) <= len(graph):
                queue.append([*walk, nxt])
    return None


def path_moves(
    views: Sequence[ConnectionView], links: Sequence[LinkView], count: int
) -> list[Modify]:
    """Path modifies of the first `count` connections (in `views`' order) that have another
    path between their hosts."""
    out: list[Modify] = []
    for view in views:
        if len(out) == count:
            break
        other = alternative_path(links, view.path)
        if other is not None:
            out.append(Modify(view.tenant, view.name, ModifyRequest(path=other)))
    return out


@dataclass(frozen=True)
class Situation:
    """A filler and a pinned create from `a` to `b` (end hosts on the ends of one link)."""

    link: LinkView
    forward: bool  # from the link's a to its b
    a: EndHostView
    b: EndHostView


def situations(endhosts: Sequence[EndHostView], links: Sequence[LinkView]) -> list[Situation]:
    """One per link direction with a tenant's end hosts on both of its hosts, links in turn."""
    out = []
    for link in sorted(links, key=lambda x: x.name):
        for forward, (x, y) in ((True, (link.a, link.b)), (False, (link.b, link.a))):
            pair = next(
                (
                    (a, b)
                    for a in endhosts
                    for b in endhosts
                    if a.host == x and b.host == y and a.tenant and a.tenant == b.tenant
                ),
                None,
            )
            if pair is not None:
                out.append(Situation(link, forward, *pair))
    return out


def _create(s: Situation, name: str, port: int, bps: int, path: list[str] | None) -> Create:
    fields = {"name": name, "a": s.a.name, "b": s.b.name, "protocol": "udp", "dst_port": port}
    body = ConnectionRequest.model_validate({**fields, "bandwidth": bps, "path": path})
    return Create(str(s.a.tenant), body, key=f"{name}-key")


def _free(access: Access, s: Situation) -> int:
    with access.client() as client:
        link = next(x for x in client.links() if x.name == s.link.name)
    index = 0 if s.forward else 1
    return link.directions[index].free_bps


def _path(access: Access, create: Create) -> list[str]:
    with access.client() as client:
        return client.connection(create.tenant, create.body.name).path


def rearrangements(
    access: Access,
    tag: str,
    count: int,
    endhosts: Sequence[EndHostView],
    note: Callable[[str], None],
) -> list[Answer]:
    """`count` situations in turn; the pinned creates' answers (those that moved the filler)."""
    with access.client() as client:
        found = situations(endhosts, client.links())
    answers: list[Answer] = []
    for i in range(count if found else 0):
        s = found[i % len(found)]
        share = int(_free(access, s) * SHARE)
        name = f"{NAME_PREFIX}-{tag}-r{i}"
        ends = [s.a.host, s.b.host]
        filler = _create(s, f"{name}-f", REARRANGE_PORT_BASE + 2 * i, share, None)
        pinned = _create(s, f"{name}-p", REARRANGE_PORT_BASE + 2 * i + 1, share, ends)
        made = drive(access, [filler], 1)
        try:
            if made[0].split is None:
                note(f"rearrange {i}: the filler was refused: HTTP {made[0].status}")
                continue
            before = _path(access, filler)
            (answer,) = drive(access, [pinned], 1)
            if answer.split is not None and _path(access, filler) == before:
                note(f"rearrange {i} on {s.link.name}: nothing was moved; not counted")
                continue
            answers.append(answer)
        finally:
            drive(access, [Remove(c.tenant, c.body.name) for c in (pinned, filler)], 1)
    return answers
