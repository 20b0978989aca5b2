"""Read what vnet owns from the kernel into a KernelState, kind by kind.

Ownership is decided only by vnet's marks: the namespace prefix plus the
loopback alias, the interface alias, the route protocol number. Anything
without a mark is invisible here, and so never planned for deletion.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from vnet.substrate import address, cgroup, fdb, link, namespace, redirect, route, seg6, tc
from vnet.substrate.kernel import Kernel
from vnet.substrate.marks import NsName
from vnet.substrate.namespace import Namespace
from vnet.substrate.state import KernelState

# From this many namespaces on, they are read by worker processes, one per core: decoding
# netlink dumps is Python (pyroute2), one core's worth per process (10,000 VRs took 40 s to
# read in one), and a worker is a new Python importing the substrate before it reads.
SHARE_FROM = 256
# parts per worker: a worker takes the next part when it is done with one, so one slowed
# down (by the agent's own namespace, which holds a port per VR) takes fewer
PARTS_PER_CORE = 4
PeerEnds = dict[tuple[NsName, str], link.PeerEnd]


@dataclass
class Observation:
    state: KernelState
    # namespaces with our prefix whose mark cannot be read (a crash between
    # creating the mount point and binding it): safe to remove, nothing inside
    remnants: list[str] = field(default_factory=list)


def observe(
    kernel: Kernel,
    scope: str,
    prefix: str,
    own_namespace: bool = False,
    namespaces_only: bool = False,
    share_from: int | None = SHARE_FROM,
) -> Observation:
    """Everything marked for `scope` in namespaces named `prefix*` (and optionally our own).

    `namespaces_only`: just which namespaces are ours, without reading their
    contents; enough to delete them, and ~20x cheaper in a large lab.
    `share_from`: from this many namespaces on, worker processes read them, one per core
    (SHARE_FROM; None: this process alone).
    """
    scan = namespace.read(kernel, prefix, scope)
    obs = Observation(KernelState(), scan.remnants)
    for ns in scan.found:
        obs.state.add_namespace(ns)
    # groups live outside the namespaces and outlive them: teardown needs them too
    obs.state.cgroups = cgroup.read(scope, prefix)
    if namespaces_only:
        return obs
    scanned: list[NsName] = [None] if own_namespace else []
    names = scanned + [ns.name for ns in scan.found]
    cores = len(os.sched_getaffinity(0))
    if share_from is None or len(names) < share_from or cores < 2:
        peer_ends = _read_namespaces(kernel, names, scope, obs.state)
    else:
        parts = cores * PARTS_PER_CORE
        peer_ends = _read_shared(cores, [names[i::parts] for i in range(parts)], scope, obs.state)
    obs.state.broken |= link.pair_veths(obs.state.links, peer_ends)
    return obs


def _read_namespaces(
    kernel: Kernel, names: list[NsName], scope: str, state: KernelState
) -> PeerEnds:
    peer_ends: PeerEnds = {}
    for ns_name in names:
        peer_ends.update(_read_namespace(kernel, ns_name, scope, state))
    return peer_ends


def _read_shared(
    workers: int, parts: list[list[NsName]], scope: str, state: KernelState
) -> PeerEnds:
    """`parts` read by `workers` worker processes (a worker reads the caller's own namespace,
    None, as the caller would: it inherits it); `state` gets all of them. Workers are
    spawned, not forked: the caller has threads (an agent)."""
    context = multiprocessing.get_context("spawn")
    peer_ends: PeerEnds = {}
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        asked = [
            pool.submit(
                _read_part, part, scope, [state.namespaces[n] for n in part if n is not None]
            )
            for part in parts
        ]
        for future in asked:
            found, ends = future.result()
            state.merge(found)
            peer_ends.update(ends)
    return peer_ends


def _read_part(
    names: list[NsName], scope: str, namespaces: list[Namespace]
) -> tuple[KernelState, PeerEnds]:
    """A worker's part: what `_read_namespaces` finds there, with a Kernel of its own."""
    state = KernelState()
    for ns in namespaces:
        state.add_namespace(ns)
    with Kernel() as kernel:
        ends = _read_namespaces(kernel, names, scope, state)
    return state, ends


def _read_namespace(kernel: Kernel, ns: NsName, scope: str, state: KernelState) -> PeerEnds:
    links = link.read(kernel, ns, scope)
    for lk in links.links:
        state.add_link(lk)
    # One qdisc dump says which devices have an HTB root at all; asking each of
    # thousands of VR ports for its classes took most of a large lab's observation.
    qdiscs = kernel.qdiscs(ns)
    state.shapers.update(tc.read_shapers(kernel, ns, links.veth_ends, qdiscs))
    ports = {
        i: n
        for i, n in links.ours.items()
        if (ns, n) in state.links and state.links[(ns, n)].master
    }
    state.redirects.update(redirect.read(kernel, ns, scope, ports, links.names, qdiscs))
    if links.vxlans:
        state.fdb |= fdb.read(kernel, ns, links.vxlans)
    state.addresses |= address.read(kernel, ns, links.ours)
    if ns is not None:
        # Routes carry no owner beyond protocol 118, so only in namespaces that are
        # wholly vnet's are they known to be this scope's. vnet makes none elsewhere;
        # in a lab host's namespace the lab's routes and that host's agent meet.
        state.routes |= route.read(kernel, ns)
    _read_tunnels_and_classes(kernel, ns, links, qdiscs, state)
    return links.peer_ends


def _read_tunnels_and_classes(
    kernel: Kernel, ns: NsName, links: link.LinkScan, qdiscs: list, state: KernelState
) -> None:
    """Connections (router namespaces) and bandwidth classes (on vnet's own interfaces)."""
    role = state.namespaces[ns].role if ns in state.namespaces else None
    owned = {index: name for index, name in links.ours.items() if index != 1}
    scan = tc.TcScan()
    if role == "router":
        sids, steers, rules = seg6.read(kernel, ns, links.names)
        state.sids.update((s.key, s) for s in sids)
        state.steers.update((s.key, s) for s in steers)
        state.rules.update(rules)
        tc.read(kernel, ns, owned, tc.VNET_MAJOR, qdiscs, scan)
    elif role == "host":
        tc.read(kernel, ns, owned, tc.LINK_MAJOR, qdiscs, scan)
    elif ns is None:  # an agent's own namespace: its underlay trees carry the mark "75:"
        state.shapers.update(tc.read_shapers(kernel, ns, links.names, qdiscs, tc.UNDERLAY_MAJOR))
        tc.read(kernel, ns, links.names, tc.UNDERLAY_MAJOR, qdiscs, scan)
    state.tc_roots |= scan.roots
    state.tc_classes.update(scan.classes)
    state.tc_filters |= scan.filters
