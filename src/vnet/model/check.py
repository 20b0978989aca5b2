"""Invariants that relate the objects of a topology to each other.

Every check appends a Problem with the exact location, so that a file loader
can point at the line, and a management front-end at the element.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from ipaddress import IPv4Interface, IPv6Interface

from vnet.model.bridge_ports import bridge_port_problems
from vnet.model.errors import Loc, Problem, shown
from vnet.model.host import HostConfig, max_host_mtu, network_carriers
from vnet.model.host_guarantees_check import guarantee_problems
from vnet.model.management import MANAGEMENT_NODE
from vnet.model.mtu import max_tenant_mtu
from vnet.model.names import (
    MAX_NETWORK_NAME,
    NODE_NAME_RE,
    ifname_problem,
    lab_name_problem,
    node_name_problem,
    tenant_name_problem,
)
from vnet.model.qos import qos_problems
from vnet.model.routing_check import routing_problems
from vnet.model.srv6_check import connection_problems
from vnet.model.topology import EndHost, Route, Topology, VirtualNetwork, VirtualRouter

IfAddr = IPv4Interface | IPv6Interface


def subnet_overlaps(
    networks: Sequence[VirtualNetwork],
) -> dict[int, list[tuple[str, VirtualNetwork]]]:
    """Network index -> (family, earlier network of its tenant whose subnet overlaps), in order.

    CIDR blocks either nest or are disjoint, so one sweep over the blocks sorted
    by start address (wider first) with a stack of the blocks still open finds
    every overlapping pair: n log n plus the pairs, not all pairs (finding 4).
    """
    blocks: dict[tuple[str, str], list[tuple[int, int, int, int]]] = {}
    for i, net in enumerate(networks):
        for fam in ("ipv4", "ipv6"):
            subnet = getattr(net, fam)
            if subnet is not None:
                start = int(subnet.network_address)
                blocks.setdefault((net.tenant, fam), []).append(
                    (start, subnet.prefixlen, i, start + subnet.num_addresses - 1)
                )
    pairs: list[tuple[int, str, int]] = []  # (later index, family, earlier index)
    for (_, fam), found in blocks.items():
        open_blocks: list[tuple[int, int]] = []  # (end, index), each inside the one below
        for start, _, i, end in sorted(found):
            while open_blocks and open_blocks[-1][0] < start:
                open_blocks.pop()
            pairs += [(max(i, k), fam, min(i, k)) for _, k in open_blocks if k != i]
            open_blocks.append((end, i))
    out: dict[int, list[tuple[str, VirtualNetwork]]] = {}
    for later, fam, earlier in sorted(pairs, key=lambda p: (p[0], p[1] != "ipv4", p[2])):
        out.setdefault(later, []).append((fam, networks[earlier]))
    return out


def check(topo: Topology) -> list[Problem]:
    """All problems of `topo`; an empty list means it can be realised."""
    c = _Checker(topo, max_tenant_mtu(topo))
    c.run()
    return c.problems


def check_host(hc: HostConfig) -> list[Problem]:
    """All problems of one host's configuration, at ("networks", i, ...) and ("routers", i, ...)."""
    c = _Checker(hc.as_topology(), max_host_mtu(hc))
    c.check_networks()
    c.check_node_names()
    c.check_routers()
    remote = {carried.network.name for carried in hc.networks if carried.remote_vteps}
    vxlan = hc.vtep is not None
    c.problems += bridge_port_problems(c.t, lambda network, _host: vxlan and network in remote)
    if not c.problems:  # underlay classes and connection pieces name networks and VRs
        c.problems += guarantee_problems(hc)
    return c.problems


class _Checker:
    def __init__(self, topo: Topology, mtu_limit: int | None):
        self.t = topo
        self.mtu_limit = mtu_limit  # the largest tenant MTU the underlay carries
        self.problems: list[Problem] = []
        self.networks = {n.name: n for n in topo.networks}
        # address -> who holds it, per network, to catch duplicates
        self.addr_owner: dict[tuple[str, object], str] = {}

    def add(self, loc: Loc, message: str, subject: str = "") -> None:
        self.problems.append(Problem(loc, message, subject))

    def run(self) -> None:
        if problem := lab_name_problem(self.t.name):
            self.add(("name",), f"lab name {shown(self.t.name)} {problem}")
        self.check_hosts()
        self.check_links()
        self.check_tenants()
        self.check_networks()
        self.check_node_names()
        self.check_routers()
        self.check_endhosts()
        self.check_bridge_ports()
        self.check_bandwidth()
        self.check_controller()

    def check_bridge_ports(self) -> None:
        """Each network's bridge on each host within the kernel's port limit."""
        carriers = network_carriers(self.t)
        self.problems += bridge_port_problems(
            self.t, lambda network, _host: len(carriers.get(network, ())) > 1
        )

    def check_bandwidth(self) -> None:
        """Guarantees and connections; they rely on a topology consistent so far."""
        if self.problems:
            return
        self.problems += qos_problems(self.t)
        self.problems += connection_problems(self.t)

    def check_controller(self) -> None:
        """A lab's controller reaches the hosts' agents and admits against the links' rates."""
        if self.t.controller is None:
            return
        if self.t.management is None or not self.t.management.agents:
            self.add(
                ("controller",),
                "a controller configures the hosts through their agents: add a `management:` "
                "section with agents (the default)",
            )
        for i, link in enumerate(self.t.links):
            if link.rate is None:
                self.add(
                    ("links", i),
                    "the controller admits connections against each link's capacity: give "
                    "this link a rate",
                    f"link {link.a}-{link.b}",
                )

    # -- substrate ---------------------------------------------------------
    def check_hosts(self) -> None:
        seen: set[str] = set()
        for i, h in enumerate(self.t.hosts):
            if problem := node_name_problem(h.name):
                self.add(("hosts", i, "name"), f"name {shown(h.name)} {problem}")
            if h.name in seen:
                self.add(("hosts", i, "name"), f"duplicate host name {h.name!r}")
            seen.add(h.name)
        if not self.t.hosts and (self.t.routers or self.t.endhosts):
            self.add(("hosts",), "no physical hosts, but routers or end hosts need one")

    def check_links(self) -> None:
        hosts = {h.name for h in self.t.hosts}
        pairs: set[frozenset[str]] = set()
        for i, link in enumerate(self.t.links):
            subject = f"link {link.a}-{link.b}"
            for end in ("a", "b"):
                name = getattr(link, end)
                if name not in hosts:
                    self.add(("links", i, end), f"unknown host {name!r}", subject)
            if link.a == link.b:
                self.add(("links", i, "b"), "a link must join two different hosts", subject)
            pair = frozenset((link.a, link.b))
            if pair in pairs:
                self.add(("links", i), "duplicate link between the same two hosts", subject)
            pairs.add(pair)

    def check_tenants(self) -> None:
        seen: set[str] = set()
        for i, tenant in enumerate(self.t.tenants):
            if problem := tenant_name_problem(tenant.name):
                self.add(("tenants", i, "name"), f"name {shown(tenant.name)} {problem}")
            if tenant.name in seen:
                self.add(("tenants", i, "name"), f"duplicate tenant {tenant.name!r}")
            seen.add(tenant.name)

    def check_networks(self) -> None:
        declared = {t.name for t in self.t.tenants}
        names: dict[str, int] = {}
        vnis: dict[int, str] = {}
        overlaps = subnet_overlaps(self.t.networks)
        limit = self.mtu_limit
        hosts = {h.name for h in self.t.hosts}
        for i, net in enumerate(self.t.networks):
            subject = f"network {shown(net.name)}"
            self._check_network_name(i, net, names, subject)
            if net.vni in vnis:
                self.add(
                    ("networks", i, "vni"),
                    f"VNI {net.vni} is already used by network {vnis[net.vni]!r}",
                    subject,
                )
            vnis.setdefault(net.vni, net.name)
            if problem := tenant_name_problem(net.tenant):  # a tenant only networks name
                self.add(
                    ("networks", i, "tenant"), f"tenant {shown(net.tenant)} {problem}", subject
                )
            if declared and net.tenant not in declared:
                self.add(
                    ("networks", i, "tenant"),
                    f"unknown tenant {net.tenant!r}; declared: {', '.join(sorted(declared))}",
                    subject,
                )
            if net.mtu is not None and limit is not None and net.mtu > limit:
                self.add(
                    ("networks", i, "mtu"),
                    f"MTU {net.mtu} does not fit the underlay: VXLAN leaves at most {limit}, "
                    "and larger frames would be dropped silently; raise the links' mtu",
                    subject,
                )
            for k, host in enumerate(net.hosts):
                if host not in hosts:
                    self.add(("networks", i, "hosts", k), f"unknown host {host!r}", subject)
            for fam, earlier in overlaps.get(i, ()):
                self.add(
                    ("networks", i, fam),
                    f"{getattr(net, fam)} overlaps {getattr(earlier, fam)} of network "
                    f"{earlier.name!r} in the same tenant {net.tenant!r}",
                    subject,
                )

    def _check_network_name(
        self, i: int, net: VirtualNetwork, names: dict[str, int], subject: str
    ) -> None:
        """A valid name, used by no earlier network (`names`: name -> first index)."""
        if not NODE_NAME_RE.match(net.name) or len(net.name) > MAX_NETWORK_NAME:
            self.add(
                ("networks", i, "name"),
                f"name {shown(net.name)} must start with a letter, contain only letters, digits, "
                f"'-' and '_', and have at most {MAX_NETWORK_NAME} characters",
                subject,
            )
        if net.name in names:
            self.add(
                ("networks", i, "name"),
                f"duplicate network name (first at networks[{names[net.name]}])",
                subject,
            )
        names.setdefault(net.name, i)

    def check_node_names(self) -> None:
        """Routers, end hosts and hosts share one namespace-name space."""
        seen: dict[str, str] = {h.name: "host" for h in self.t.hosts}
        if self.t.management is not None:
            seen.setdefault(MANAGEMENT_NODE, "the management network")
            if len(self.t.hosts) > self.t.management.subnet.num_addresses - 3:
                self.add(
                    ("management", "subnet"),
                    f"{self.t.management.subnet} has too few "
                    f"addresses for {len(self.t.hosts)} hosts",
                )
        nodes: list[tuple[str, Sequence[VirtualRouter | EndHost]]] = [
            ("routers", self.t.routers),
            ("endhosts", self.t.endhosts),
        ]
        for kind, items in nodes:
            for i, node in enumerate(items):
                if problem := node_name_problem(node.name):
                    self.add((kind, i, "name"), f"name {shown(node.name)} {problem}")
                if node.name in seen:
                    self.add(
                        (kind, i, "name"),
                        f"name {node.name!r} is already used by a {seen[node.name]}",
                    )
                seen.setdefault(node.name, kind[:-1])

    # -- tenant objects ----------------------------------------------------
    def check_routers(self) -> None:
        hosts = {h.name for h in self.t.hosts}
        index_owner: dict[tuple[str, int], str] = {}
        for i, vr in enumerate(self.t.routers):
            subject = f"router {shown(vr.name)}"
            if vr.host not in hosts:
                self.add(("routers", i, "host"), f"unknown host {vr.host!r}", subject)
            if vr.index is not None:
                key = (vr.host, vr.index)
                if key in index_owner:
                    self.add(
                        ("routers", i, "index"),
                        f"index {vr.index} on host {vr.host!r} is already used by "
                        f"router {index_owner[key]!r}",
                        subject,
                    )
                index_owner.setdefault(key, vr.name)
            self.check_router_interfaces(i, vr)
            addrs = [a for itf in vr.interfaces for a in (itf.ipv4, itf.ipv6) if a is not None]
            self.check_routes(("routers", i), subject, vr.routes, addrs)
        self.problems += routing_problems(self.t)

    def check_router_interfaces(self, i: int, vr: VirtualRouter) -> None:
        subject = f"router {shown(vr.name)}"
        ifnames: set[str] = set()
        nets: set[str] = set()
        tenant: tuple[str, int] | None = None
        for k, itf in enumerate(vr.interfaces):
            loc: Loc = ("routers", i, "interfaces", k)
            name = vr.ifname(k)
            if problem := ifname_problem(name):
                self.add((*loc, "name"), f"interface name {shown(name)} {problem}", subject)
            if name in ifnames:
                self.add((*loc, "name"), f"duplicate interface name {name!r}", subject)
            ifnames.add(name)
            if k > 99:
                self.add(loc, "at most 100 interfaces per router", subject)
            net = self.networks.get(itf.network)
            if net is None:
                self.add((*loc, "network"), f"unknown network {itf.network!r}", subject)
                continue
            if itf.network in nets:
                self.add(
                    (*loc, "network"),
                    f"the router already has an interface in network {itf.network!r}",
                    subject,
                )
            nets.add(itf.network)
            if tenant is None:
                tenant = (net.tenant, k)
            elif net.tenant != tenant[0]:
                self.add(
                    (*loc, "network"),
                    f"network {net.name!r} belongs to tenant {net.tenant!r}, but interface "
                    f"{tenant[1]} is in tenant {tenant[0]!r}; a router serves one tenant",
                    subject,
                )
            self.check_addresses(loc, subject, itf.network, itf.ipv4, itf.ipv6)

    def check_endhosts(self) -> None:
        hosts = {h.name for h in self.t.hosts}
        for i, eh in enumerate(self.t.endhosts):
            subject = f"end host {eh.name!r}"
            if eh.host not in hosts:
                self.add(("endhosts", i, "host"), f"unknown host {eh.host!r}", subject)
            if eh.network not in self.networks:
                self.add(("endhosts", i, "network"), f"unknown network {eh.network!r}", subject)
                continue
            self.check_addresses(("endhosts", i), subject, eh.network, eh.ipv4, eh.ipv6)
            addrs = [a for a in (eh.ipv4, eh.ipv6) if a is not None]
            self.check_routes(("endhosts", i), subject, eh.routes, addrs)

    def check_addresses(
        self,
        loc: Loc,
        subject: str,
        network: str,
        ipv4: IPv4Interface | None,
        ipv6: IPv6Interface | None,
    ) -> None:
        net = self.networks[network]
        for fam, addr in (("ipv4", ipv4), ("ipv6", ipv6)):
            if addr is None:
                continue
            subnet = getattr(net, fam)
            where = (*loc, fam)
            if subnet is None:
                self.add(where, f"network {network!r} has no {fam} subnet", subject)
                continue
            if addr.ip not in subnet:
                self.add(where, f"{addr.ip} is outside {network!r}'s subnet {subnet}", subject)
                continue
            if addr.network != subnet:
                self.add(
                    where,
                    f"{addr} has prefix length /{addr.network.prefixlen}, but network "
                    f"{network!r} is {subnet}; write {addr.ip}/{subnet.prefixlen}",
                    subject,
                )
            if (
                fam == "ipv4"
                and subnet.prefixlen < 31
                and addr.ip in (subnet.network_address, subnet.broadcast_address)
            ):
                self.add(where, f"{addr.ip} is the network or broadcast address", subject)
            if fam == "ipv6" and addr.ip == subnet.network_address:
                self.add(where, f"{addr.ip} is the subnet-router anycast address", subject)
            owner = self.addr_owner.get((network, addr.ip))
            if owner is not None:
                self.add(where, f"{addr.ip} is already used by {owner} in {network!r}", subject)
            else:
                self.addr_owner[(network, addr.ip)] = subject

    def check_routes(
        self, loc: Loc, subject: str, routes: Iterable[Route], addrs: list[IfAddr]
    ) -> None:
        destinations: set[object] = set()
        for r, route in enumerate(routes):
            where = (*loc, "routes", r)
            dest = route.destination
            if dest.version != route.via.version:
                self.add(
                    where,
                    f"destination {dest} and next hop {route.via} are of different IP versions",
                    subject,
                )
                continue
            if dest in destinations:
                self.add((*where, "to"), f"duplicate route to {dest}", subject)
            destinations.add(dest)
            own = [a for a in addrs if a.version == route.via.version]
            if any(a.ip == route.via for a in own):
                self.add(
                    (*where, "via"), f"next hop {route.via} is this node's own address", subject
                )
            elif not any(route.via in a.network for a in own):
                connected = ", ".join(str(a.network) for a in own) or "none"
                self.add(
                    (*where, "via"),
                    f"next hop {route.via} is unreachable: it is in none of the directly "
                    f"connected subnets ({connected})",
                    subject,
                )
