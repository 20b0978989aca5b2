"""The controller's inventory: the lab's topology format, kept in the database.

`load(session, topology, agents)` writes a Topology (hosts, rated links, tenants, networks,
VRs, end hosts; not the lab's own `connections:` nor its `management:`) and the agents' access
into the database; `read(session)` rebuilds exactly that Topology, with the capacity each link
direction offers connections. The Topology must come back exactly (same objects, same order),
because the SRv6 locators and SIDs derive from the order of tenants and routers
(`vnet.model.srv6`): the controller's pieces must carry the addresses the lab gave the VRs.

Loading is idempotent and append-only: per kind of object, what the database holds must be
the file's first objects, unchanged and in the same order; the file's further objects are
added at the end. Anything else (an object changed, dropped or moved) is an
`InventoryConflict` naming it, and nothing is written (the caller's transaction is left
untouched: every check runs before the first write). What the API added and deleted is not
the file's (inventory_origin.py): it is left out of that comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from vnet.controller import inventory_origin
from vnet.controller.admission.network import Link as ViewLink
from vnet.controller.admission.network import NetworkView
from vnet.controller.db.models import (
    API_ORIGIN,
    LAB_NUMBERS,
    SETTINGS_ID,
    EndHost,
    GuaranteedLink,
    Host,
    Link,
    Tenant,
    TopologySettings,
    VirtualNetwork,
    VirtualRouter,
)
from vnet.controller.pieces import PiecesMemo
from vnet.model import topology as model
from vnet.model.check import check
from vnet.model.controller_config import AgentAccess
from vnet.model.qos import management_rate, network_links
from vnet.model.srv6 import (
    assign_connection_ids,
    network_tenants,
    router_tenant,
    shared_network,
)


class InventoryError(ValueError):
    """A topology or agent list the controller cannot hold (what, where, why)."""


class InventoryConflict(InventoryError):
    """The file disagrees with what the database already holds; nothing was written."""


@dataclass(frozen=True)
class LinkInfo:
    """An underlay link as admission sees it: `capacity` bit/s for connections in each
    direction (the rate less the management share, `vnet.model.qos.management_rate`)."""

    name: str  # "a-b", as vnet.model.qos names links
    a: str
    b: str
    rate: int
    capacity: int


@dataclass(frozen=True)
class Inventory:
    """What the controller manages, rebuilt from the database (cheap; the service caches it
    until the inventory changes)."""

    topology: model.Topology
    links: dict[str, LinkInfo]  # those in service: neither removed nor of a removed host
    removed_hosts: frozenset[str] = frozenset()  # kept in `topology`: they number addresses
    shared: InitVar[PiecesMemo | None] = None  # another view's memo of the same topology
    # the connections' pieces derived from `topology`, shared with every `avoiding` view
    pieces: PiecesMemo = field(init=False, compare=False, repr=False)

    def __post_init__(self, shared: PiecesMemo | None) -> None:
        object.__setattr__(self, "pieces", shared or PiecesMemo(self.topology))

    @cached_property
    def view(self) -> NetworkView:
        """Hosts and links with their capacity per direction, for admission."""
        links = [ViewLink(x.name, x.a, x.b, x.capacity) for x in self.links.values()]
        return NetworkView([h.name for h in self.topology.hosts], links)

    @cached_property
    def endhosts(self) -> dict[str, model.EndHost]:
        return {e.name: e for e in self.topology.endhosts}

    def avoiding(self, links: Collection[str] = (), hosts: Collection[str] = ()) -> Inventory:
        """The same inventory without `links` and without every link of `hosts`: what
        planning may use while they are drained, removed or down. The topology, and so every
        address and SID numbered from it, is unchanged; the hosts stay, with no link.
        Remembered per set avoided, and this same inventory when nothing is: every request
        plans on such a view, and the views and tenants' views it derives are worth keeping
        (at 1000 hosts, deriving them again was most of a create)."""
        key = (frozenset(links), frozenset(hosts))
        if key not in self._avoiding:
            kept = {
                name: x
                for name, x in self.links.items()
                if name not in links and x.a not in hosts and x.b not in hosts
            }
            self._avoiding[key] = (
                self
                if len(kept) == len(self.links)
                else Inventory(self.topology, kept, self.removed_hosts, self.pieces)
            )
        return self._avoiding[key]

    @cached_property
    def _avoiding(self) -> dict[tuple[frozenset[str], frozenset[str]], Inventory]:
        return {}

    def tenant_of(self, endhost: model.EndHost) -> str:
        return self.topology.network(endhost.network).tenant

    @cached_property
    def _routers_by_tenant(self) -> dict[str | None, list[model.VirtualRouter]]:
        out: dict[str | None, list[model.VirtualRouter]] = {}
        tenants = network_tenants(self.topology)
        for vr in self.topology.routers:
            out.setdefault(router_tenant(self.topology, vr, tenants), []).append(vr)
        return out

    def routers_of(self, tenant: str) -> list[model.VirtualRouter]:
        """The tenant's VRs, in file order."""
        return self._routers_by_tenant.get(tenant, [])

    @cached_property
    def _tenant_views(self) -> dict[str, NetworkView]:
        return {}

    def tenant_view(self, tenant: str) -> NetworkView:
        """The hosts, and the links between two hosts where the tenant has VRs sharing a
        network (a path for its connections can only cross those)."""
        if tenant not in self._tenant_views:
            mine = self.routers_of(tenant)
            usable = [
                ViewLink(x.name, x.a, x.b, x.capacity)
                for x in self.links.values()
                if any(
                    shared_network(u, v) is not None
                    for u in mine
                    if u.host == x.a
                    for v in mine
                    if v.host == x.b
                )
            ]
            self._tenant_views[tenant] = NetworkView(self.view.hosts, usable)
        return self._tenant_views[tenant]


def link_name(link: model.UnderlayLink) -> str:
    return f"{link.a}-{link.b}"


def link_info(link: model.UnderlayLink) -> LinkInfo:
    rate = link.rate or 0
    return LinkInfo(link_name(link), link.a, link.b, rate, rate - (management_rate(link) or 0))


Arc = tuple[str, bool]  # (link name, forward: from the link's a to its b)


def usable_bps(link: Link) -> int:
    """What connections may take in each direction of a link row: the rule for
    `db.ledger.reserve`, the same as `LinkInfo.capacity`."""
    if link.spec is None:
        return link.capacity_bps
    return link_info(model.UnderlayLink.model_validate(link.spec)).capacity


# -- read ------------------------------------------------------------------------------------


def read(session: Session) -> Inventory:
    """The loaded Topology and its links' capacities (an empty one before the first load);
    links and hosts removed through the API are in the topology but not in service."""
    topo = _read_topology(session)
    gone = [
        set(session.scalars(select(t.name).where(t.removed.is_not(None)))) for t in (Link, Host)
    ]
    links = {link_name(x): link_info(x) for x in topo.links}
    return Inventory(topo, links, frozenset(gone[1])).avoiding(gone[0], gone[1])


def _rows(session: Session, table: type[Any]) -> list[Any]:
    return list(session.scalars(select(table).order_by(table.id)))


def _read_topology(session: Session) -> model.Topology:
    settings = session.get(TopologySettings, SETTINGS_ID)
    fields: dict[str, Any] = dict(settings.spec) if settings else {}
    fields.pop(LAB_NUMBERS, None)
    fields.pop(API_ORIGIN, None)
    fields["hosts"] = [{"name": h.name} for h in _rows(session, Host)]
    fields["links"] = [x.spec for x in _rows(session, Link) if x.spec is not None]
    fields["tenants"] = [t.spec for t in _rows(session, Tenant) if t.spec is not None]
    fields["networks"] = [n.spec for n in _rows(session, VirtualNetwork) if n.spec is not None]
    fields["routers"] = [r.spec for r in _rows(session, VirtualRouter) if r.spec is not None]
    fields["endhosts"] = [e.spec for e in _rows(session, EndHost)]
    return model.Topology.model_validate(fields)


# -- load ------------------------------------------------------------------------------------


def load(session: Session, topology: model.Topology, agents: Sequence[AgentAccess]) -> int:
    """Hold `topology` and the agents' access in the database; the number of objects added
    (0 when it was loaded already). Raises InventoryError / InventoryConflict, writing nothing.
    Runs in the caller's transaction; the caller commits."""
    topo = topology.model_copy(update={"connections": [], "management": None})
    _check(topo, agents)
    added = sum(map(len, _append(session, topo, inventory_origin.Origin.read(session)).values()))
    _update_agents(session, agents)
    _keep_lab_numbers(session, topology)
    session.flush()
    return added


def append(session: Session, topology: model.Topology) -> int:
    """Hold the objects `topology` has after those the database holds (the API's new
    networks and VRs: the held Topology with them appended); the number added. Raises
    InventoryError / InventoryConflict, writing nothing. The caller commits.

    Call `lock_for_append(session)` first and build `topology` from what is held after it:
    concurrent appends (on PostgreSQL, another controller's too) then go one at a time."""
    _check(topology, [])
    new = _append(session, topology)
    for kind, objects in new.items():
        if objects:
            inventory_origin.note_added(session, kind, map(_name, objects))
    session.flush()
    return sum(map(len, new.values()))


def lock_for_append(session: Session) -> None:
    """Hold the inventory's settings row until the transaction ends: appends made under
    it see each other (READ COMMITTED reads what the previous holder committed)."""
    query = select(TopologySettings).where(TopologySettings.id == SETTINGS_ID)
    session.execute(query.with_for_update())


def _append(
    session: Session, topo: model.Topology, file: inventory_origin.Origin | None = None
) -> dict[str, list[Any]]:
    """The objects of `topo` after those held, written. `file`: `topo` is the inventory
    file's, and what the API added and deleted (`file`) is left out of the comparison."""
    held = _read_topology(session)
    _check_settings(session, held, topo)
    new = {}
    for kind in KINDS:
        had, wanted = getattr(held, kind), getattr(topo, kind)
        if file is not None:
            had, wanted = _file_part(file, kind, had, wanted)
        new[kind] = _appended(kind, had, wanted)
    if file is not None:  # the file's new objects after everything held, the API's too
        topo = topo.model_copy(update={k: [*getattr(held, k), *new[k]] for k in KINDS})
        _check(topo, [])
    _check_undeclared(session, topo)
    _write(session, topo, new)
    return new


def _file_part(
    origin: inventory_origin.Origin, kind: str, held: list[Any], wanted: list[Any]
) -> tuple[list[Any], list[Any]]:
    had, rest, both = inventory_origin.file_part(origin, kind, held, wanted, _name)
    for in_file, by_api in both:
        if in_file != by_api:
            raise InventoryConflict(
                f"inventory: {kind} {_name(in_file)!r} was added through the API as "
                f"{_shown(by_api)}; the file has {_shown(in_file)}"
            )
    return had, rest


def _name(obj: Any) -> str:
    return getattr(obj, "name", None) or link_name(obj)


def _keep_lab_numbers(session: Session, topology: model.Topology) -> None:
    """The piece ids the lab gives its own connections (as it numbers them), which the
    controller's connection numbers must avoid. Not a conflict when they change: the lab's
    connections are the lab's."""
    ids = sorted(c.id for c in assign_connection_ids(topology).connections if c.id is not None)
    session.flush()
    settings = session.get(TopologySettings, SETTINGS_ID)
    assert settings is not None, "written by _write"
    if settings.spec.get(LAB_NUMBERS, []) != ids:
        settings.spec = {**settings.spec, LAB_NUMBERS: ids}


KINDS = ("hosts", "links", "tenants", "networks", "routers", "endhosts")


def _check(topo: model.Topology, agents: Sequence[AgentAccess]) -> None:
    problems = [str(p) for p in check(topo)]
    for i, link in enumerate(topo.links):
        if link.rate is None:
            problems.append(
                f"links[{i}] ({link_name(link)}): no rate; the controller admits guarantees"
                " only over links with a rate"
            )
    hosts = {h.name for h in topo.hosts}
    seen: set[str] = set()
    for i, agent in enumerate(agents):
        if agent.host not in hosts:
            problems.append(f"agents[{i}]: unknown host {agent.host!r}")
        if agent.host in seen:
            problems.append(f"agents[{i}]: a second agent for host {agent.host!r}")
        seen.add(agent.host)
    if problems:
        raise InventoryError("inventory: " + "; ".join(problems))


def _check_settings(session: Session, held: model.Topology, topo: model.Topology) -> None:
    if session.get(TopologySettings, SETTINGS_ID) is None:
        return
    for name in ("name", "underlay"):
        if getattr(held, name) != getattr(topo, name):
            raise InventoryConflict(
                f"inventory: {name} is {_shown(getattr(topo, name))} in the file but"
                f" {_shown(getattr(held, name))} in the database"
            )


def _appended(kind: str, held: Sequence[BaseModel], wanted: Sequence[BaseModel]) -> list[Any]:
    """The objects of `wanted` after `held`, which must be its unchanged first objects."""
    for i, old in enumerate(held):
        name = _name(old)
        if i >= len(wanted):
            raise InventoryConflict(
                f"inventory: {kind}[{i}] {name!r} is in the database but not in the file"
                " (objects are only ever added, at the end)"
            )
        if wanted[i] != old:
            new_name = _name(wanted[i])
            what = "differs" if new_name == name else f"is {new_name!r} in the file"
            raise InventoryConflict(
                f"inventory: {kind}[{i}] {name!r} {what}: database {_shown(old)},"
                f" file {_shown(wanted[i])}"
            )
    return list(wanted[len(held) :])


def _check_undeclared(session: Session, topo: model.Topology) -> None:
    """A tenant the database holds as undeclared (named by networks, or made through the
    API) cannot become declared: the locators of vnet.model.srv6 number the two kinds apart."""
    declared = {t.name for t in topo.tenants}
    rows = session.scalars(
        select(Tenant).where(Tenant.name.in_(declared), Tenant.spec.is_(None)).order_by(Tenant.id)
    )
    for row in rows:
        raise InventoryConflict(
            f"inventory: tenant {row.name!r} exists undeclared in the database; the file"
            " declares it under tenants, which would renumber its SRv6 locators"
        )


def _shown(value: Any) -> str:
    if isinstance(value, BaseModel):
        return str(value.model_dump(mode="json", exclude_defaults=True))
    return repr(value)


def _spec(obj: BaseModel) -> dict[str, Any]:
    return obj.model_dump(mode="json")


def _write(session: Session, topo: model.Topology, new: dict[str, list[Any]]) -> int:
    if session.get(TopologySettings, SETTINGS_ID) is None:
        spec = {"name": topo.name, "underlay": _spec(topo.underlay)}
        session.add(TopologySettings(id=SETTINGS_ID, spec=spec))
    ids = _Ids(session)
    rated = any(n.bandwidth is not None for n in new["networks"])
    crossed = network_links(topo) if rated else {}
    writers: dict[str, Callable[[Any], Any]] = {
        "hosts": lambda h: Host(name=h.name, agent_endpoint="", credentials_ref=""),
        "links": lambda x: Link(
            name=link_name(x),
            a_host_id=ids.host(x.a),
            b_host_id=ids.host(x.b),
            capacity_bps=x.rate,
            spec=_spec(x),
        ),
        # a tenant the API made before (spec None) was refused by _check_undeclared
        "tenants": lambda t: Tenant(name=t.name, spec=_spec(t)),
        "networks": lambda n: _network(session, ids, n, crossed.get(n.name, set())),
        "routers": lambda r: _router(topo, ids, r),
        "endhosts": lambda e: EndHost(
            tenant_id=ids.tenant(topo.network(e.network).tenant),
            network_id=ids.network(e.network),
            host_id=ids.host(e.host),
            name=e.name,
            spec=_spec(e),
        ),
    }
    added = 0
    for kind in KINDS:
        if kind == "networks":  # undeclared tenants first: networks refer to them
            for name in _undeclared(topo):
                if ids.tenant_or_none(name) is None:
                    session.add(Tenant(name=name, spec=None))
                    session.flush()
        for obj in new[kind]:
            session.add(writers[kind](obj))
            session.flush()  # later objects refer to this one's id
            added += 1
    return added


def _undeclared(topo: model.Topology) -> list[str]:
    declared = {t.name for t in topo.tenants}
    return sorted({n.tenant for n in topo.networks} - declared)


class _Ids:
    """Row ids by name, looked up when a new row refers to an older one."""

    def __init__(self, session: Session):
        self.session = session

    def _id(self, table: type[Any], name: str) -> int | None:
        return self.session.scalar(select(table.id).where(table.name == name))

    def host(self, name: str) -> int:
        found = self._id(Host, name)
        assert found is not None, "checked: links, VRs and end hosts name known hosts"
        return found

    def tenant_or_none(self, name: str) -> int | None:
        return self._id(Tenant, name)

    def tenant(self, name: str) -> int:
        found = self._id(Tenant, name)
        assert found is not None, "written before the networks that name it"
        return found

    def network(self, name: str) -> int:
        found = self._id(VirtualNetwork, name)
        assert found is not None, "checked: VRs and end hosts name known networks"
        return found


def _network(
    session: Session, ids: _Ids, net: model.VirtualNetwork, links: set[int]
) -> VirtualNetwork:
    """The network's row, with its guarantee on each link its VXLAN crosses (`links`: their
    indexes in the topology, which are the links' row order)."""
    row = VirtualNetwork(
        tenant_id=ids.tenant(net.tenant), name=net.name, vni=net.vni, spec=_spec(net)
    )
    if net.bandwidth is not None and links:
        link_ids = [x.id for x in _rows(session, Link) if x.spec is not None]
        for j in sorted(links):
            row.guarantees.append(GuaranteedLink(link_id=link_ids[j], bps=net.bandwidth))
    return row


def _router(topo: model.Topology, ids: _Ids, vr: model.VirtualRouter) -> VirtualRouter:
    tenant = router_tenant(topo, vr)
    return VirtualRouter(
        tenant_id=ids.tenant(tenant) if tenant is not None else None,
        network_id=ids.network(vr.interfaces[0].network) if vr.interfaces else None,
        host_id=ids.host(vr.host),
        name=vr.name,
        spec=_spec(vr),
    )


def _update_agents(session: Session, agents: Sequence[AgentAccess]) -> None:
    """Each host's agent endpoint and where its secret lives (never the secret)."""
    for agent in agents:
        host = session.scalar(select(Host).where(Host.name == agent.host))
        assert host is not None, "checked: agents name known hosts"
        endpoint = f"{agent.address}:{agent.netconf_port}"
        secret = agent.key_file or agent.password_file
        ref = f"file:{secret}" if secret else ""
        if (host.agent_endpoint, host.credentials_ref) != (endpoint, ref):
            host.agent_endpoint, host.credentials_ref = endpoint, ref
