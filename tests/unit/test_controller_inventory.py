"""The controller's inventory (issue 12, part 3): a topology file into the database and back,
exactly, idempotently, and refused whole when it conflicts (SQLite here; PostgreSQL in
tests/integration/test_controller_inventory_postgres.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from tests.controller_topology_support import GBIT, MBIT, agents, data, topology
from vnet.controller.db import (
    Connection,
    ConnectionState,
    EndHost,
    GuaranteedLink,
    Host,
    Tenant,
    VirtualRouter,
    add_connection,
    make_engine,
    reserve,
)
from vnet.controller.held import held_connections
from vnet.controller.inventory import InventoryConflict, InventoryError, load, read
from vnet.model.host_pieces import connection_pieces
from vnet.model.topology import Topology


@pytest.fixture
def url(tmp_path: Path, migrated: Callable[[Path], str]) -> str:
    return migrated(tmp_path / "state")


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    engine = make_engine(url)
    yield engine
    engine.dispose()


def counts(engine: Engine) -> dict[str, int]:
    with Session(engine) as session:
        return {
            table.__tablename__: session.scalar(select(func.count()).select_from(table)) or 0
            for table in (Host, Tenant, VirtualRouter, EndHost, GuaranteedLink)
        }


def without_lab_parts(topo: Topology) -> Topology:
    return topo.model_copy(update={"connections": [], "management": None})


def test_a_loaded_topology_comes_back_exactly(engine: Engine) -> None:
    topo = topology()
    with Session(engine) as session, session.begin():
        assert load(session, topo, agents()) == 3 + 3 + 2 + 6 + 5 + 4
    with Session(engine) as session:
        inventory = read(session)
        assert inventory.topology == without_lab_parts(topo)
        h1 = session.scalar(select(Host).where(Host.name == "h1"))
        assert h1 is not None
        assert (h1.agent_endpoint, h1.credentials_ref) == ("172.30.0.1:830", "file:/etc/vnet/h1.pw")
        o3 = session.scalar(select(VirtualRouter).where(VirtualRouter.name == "o3"))
        assert o3 is not None and o3.tenant is not None and o3.tenant.name == "other"
    link = inventory.links["h1-h3"]
    assert (link.a, link.b, link.rate) == ("h1", "h3", 100 * MBIT)
    assert link.capacity == 99 * MBIT  # 1 % kept for management and routing
    assert inventory.links["h1-h2"].capacity == GBIT - GBIT // 100
    assert inventory.view.capacity(next(a for a in inventory.view.arcs() if a.link == "h2-h3"))


def test_the_pieces_from_the_database_are_the_labs(engine: Engine) -> None:
    """The SIDs derive from the order of tenants and routers: read() must keep it."""
    conn = {"name": "v", "a": "pc1", "b": "pc3", "bandwidth": "10mbit", "path": ["r1", "r2", "r3"]}
    lab = topology({"connections": [conn]})
    with Session(engine) as session, session.begin():
        load(session, lab, agents())
    with Session(engine) as session:
        again = read(session).topology.model_copy(update={"connections": lab.connections})
    assert connection_pieces(again) == connection_pieces(lab)


def test_a_second_load_of_the_same_file_changes_nothing(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
    before = counts(engine)
    with Session(engine) as session, session.begin():
        assert load(session, topology(), agents()) == 0
        assert not session.dirty and not session.new
    assert counts(engine) == before


def test_a_longer_file_adds_at_the_end(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
    more = data()
    more["endhosts"].append(
        {"name": "pc4", "host": "h3", "network": "lan3", "ipv4": "10.3.0.104/24"}
    )
    with Session(engine) as session, session.begin():
        assert load(session, topology(more), agents()) == 1
    with Session(engine) as session:
        assert [e.name for e in read(session).topology.endhosts][-1] == "pc4"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["links"][2].update(rate="200mbit"), r"links\[2\] 'h1-h3' differs"),
        (lambda d: d["routers"].pop(3), r"routers\[3\] 'o1' is 'o3' in the file"),
        (lambda d: d["endhosts"].pop(), r"endhosts\[3\] 'opc' is in the database but not"),
        (lambda d: d.update(name="otherlab"), "name is 'otherlab' in the file but 'ctl'"),
        (lambda d: d["tenants"].reverse(), r"tenants\[0\] 'acme' is 'other' in the file"),
    ],
)
def test_a_conflicting_file_is_refused_and_changes_nothing(
    engine: Engine, change, message: str
) -> None:  # type: ignore[no-untyped-def]
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
    before = counts(engine)
    changed = data()
    change(changed)
    with Session(engine) as session, session.begin():
        with pytest.raises(InventoryConflict, match=message):
            load(session, topology(changed), agents())
        assert not session.dirty and not session.new
    assert counts(engine) == before
    with Session(engine) as session:
        assert read(session).topology == without_lab_parts(topology())


def test_bad_inventories_are_refused_precisely(engine: Engine) -> None:
    unrated = data()
    unrated["links"][1].pop("rate")
    stranger = [*agents(), agents()[0].model_copy(update={"host": "h9"})]
    with Session(engine) as session, session.begin():
        with pytest.raises(InventoryError, match=r"links\[1\] \(h2-h3\): no rate"):
            load(session, topology(unrated), agents())
        with pytest.raises(InventoryError, match=r"agents\[3\]: unknown host 'h9'"):
            load(session, topology(), stranger)
        with pytest.raises(InventoryError, match=r"agents\[3\]: a second agent for host 'h1'"):
            load(session, topology(), [*agents(), agents()[0]])
        assert not session.new
    assert counts(engine)["host"] == 0


def test_an_undeclared_tenant_keeps_its_place(engine: Engine) -> None:
    """Tenants named only by their networks are numbered after the declared ones, by name
    (vnet.model.srv6.tenant_numbers); the rebuilt topology must not declare them."""
    undeclared = data()
    undeclared["tenants"] = []  # a file declares all its tenants or none
    topo = topology(undeclared)
    with Session(engine) as session, session.begin():
        load(session, topo, agents())
    with Session(engine) as session, session.begin():
        assert read(session).topology == without_lab_parts(topo)
        assert load(session, topo, agents()) == 0
    declared = {**undeclared, "tenants": [{"name": "acme"}, {"name": "other"}]}  # both static
    with (
        Session(engine) as session,
        session.begin(),
        pytest.raises(InventoryConflict, match="tenant 'acme' exists undeclared"),
    ):
        load(session, topology(declared), agents())


def test_agents_may_move_without_a_conflict(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
    moved = [a.model_copy(update={"address": "172.31.0.9", "netconf_port": 8300}) for a in agents()]
    with Session(engine) as session, session.begin():
        assert load(session, topology(), moved) == 0
    with Session(engine) as session:
        endpoints = {h.name: h.agent_endpoint for h in session.scalars(select(Host))}
    assert endpoints == {"h1": "172.31.0.9:8300", "h2": "172.31.0.9:8300", "h3": "172.31.0.9:8300"}


def test_network_guarantees_are_recorded_per_link(engine: Engine) -> None:
    rated = data()
    rated["networks"][0]["bandwidth"] = "30mbit"  # core crosses every link between its VRs
    with Session(engine) as session, session.begin():
        load(session, topology(rated), agents())
    with Session(engine) as session:
        rows = list(session.scalars(select(GuaranteedLink)))
        assert sorted((g.link.name, g.bps) for g in rows) == [
            ("h1-h2", 30 * MBIT),
            ("h1-h3", 30 * MBIT),
            ("h2-h3", 30 * MBIT),
        ]


def test_live_connections_come_back_as_planning_sees_them(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
        acme = session.scalar(select(Tenant).where(Tenant.name == "acme"))
        assert acme is not None
        hops = [{"host": "h1", "router": "r1", "sid": None}, {"host": "h3", "router": "r3"}]
        live = Connection(
            tenant_id=acme.id, name="video", a="pc1", b="pc3", bandwidth_bps=10 * MBIT,
            protocol="udp", dst_port=5004, hops=hops, state=ConnectionState.ESTABLISHED,
        )  # fmt: skip
        add_connection(session, live)
        reserve(session, live, {("h1-h3", True): 11 * MBIT})
        gone = Connection(tenant_id=acme.id, name="old", a="pc1", b="pc3", bandwidth_bps=1)
        add_connection(session, gone)
        gone.state = ConnectionState.RELEASED
        live_id = live.id
    with Session(engine) as session:
        (got,) = held_connections(session)
    assert (got.connection_id, got.number, got.tenant, got.path) == (
        live_id,
        1,
        "acme",
        ("h1", "h3"),
    )
    assert got.demands == {("h1-h3", True): 11 * MBIT}
    assert got.request.protocol == "udp" and got.request.dst_port == 5004
    assert got.request.bandwidth == 10 * MBIT and got.request.path is None
    assert got.movable


def test_live_connections_by_id_are_those_alone_with_their_own_demands(
    engine: Engine,
) -> None:
    with Session(engine) as session, session.begin():
        load(session, topology(), agents())
        acme = session.scalar(select(Tenant.id).where(Tenant.name == "acme"))
        hops = [{"host": "h1", "router": "r1", "sid": None}, {"host": "h3", "router": "r3"}]
        ids = []
        for k in range(3):
            conn = Connection(
                tenant_id=acme, name=f"c{k}", a="pc1", b="pc3", bandwidth_bps=MBIT,
                hops=hops, state=ConnectionState.ESTABLISHED,
            )  # fmt: skip
            add_connection(session, conn)
            reserve(session, conn, {("h1-h3", True): (k + 1) * MBIT})
            ids.append(conn.id)
    with Session(engine) as session:
        every = held_connections(session)
        some = held_connections(session, [ids[2], ids[0]])
    assert [h.connection_id for h in some] == [ids[0], ids[2]]  # in id order, as every one
    assert some == [h for h in every if h.connection_id in (ids[0], ids[2])]
    assert [h.demands for h in some] == [{("h1-h3", True): MBIT}, {("h1-h3", True): 3 * MBIT}]
    with Session(engine) as session:
        assert held_connections(session, []) == []


def test_connection_numbers_avoid_the_labs_own_connections(engine: Engine) -> None:
    """The lab's connections (its file's, not the controller's) have pieces on the same VRs
    with ids 1, 2, ...: the controller's numbers go around them."""
    conn = {"name": "voice", "a": "pc1", "b": "pc3", "bandwidth": "1mbit", "path": ["r1", "r3"]}
    lab = topology(
        {"connections": [conn, {**conn, "name": "fax", "id": 3, "protocol": "udp", "dst_port": 9}]}
    )
    with Session(engine) as session, session.begin():
        load(session, lab, agents())
        assert load(session, lab, agents()) == 0 and not session.dirty
        acme = session.scalar(select(Tenant.id).where(Tenant.name == "acme"))
        numbers = []
        for k in range(3):
            mine = Connection(tenant_id=acme, name=f"c{k}", a="pc1", b="pc3", bandwidth_bps=1)
            numbers.append(add_connection(session, mine))
        assert numbers == [2, 4, 5]
        assert read(session).topology == without_lab_parts(lab)
