"""The pieces memo (controller/pieces.py): a connection's pieces and the model's verdict on
it, remembered per topology, are what the model derives from nothing; a refusal is not
remembered; every `avoiding` view of an inventory shares its memo; it keeps a bounded
number of connections. Pure: the planner tests' triangle in memory."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from tests.controller_memory_support import ACME, voice, world
from tests.controller_topology_support import data
from vnet.controller import planner
from vnet.controller.db.models import Connection as DbConnection
from vnet.controller.inventory import Inventory, link_info, link_name
from vnet.controller.pieces import PiecesMemo
from vnet.controller.service import planning
from vnet.controller.service.core import Service
from vnet.model import build_topology
from vnet.model.connection import Connection
from vnet.model.host_pieces import connection_pieces
from vnet.model.srv6_check import Fixed, connection_problems
from vnet.model.topology import Topology

TOPO = build_topology(data())


def connection(port: int, path: list[str], **kw: object) -> Connection:
    fields = {
        "name": f"vc{port}",
        "id": port - 5000,
        "a": "pc1",
        "b": "pc3",
        "protocol": "udp",
        "dst_port": port,
        "bandwidth": "10mbit",
        "path": path,
        **kw,
    }
    return Connection.model_validate(fields)  # fmt: skip


def holding(conn: Connection) -> Topology:
    return TOPO.model_copy(update={"connections": [conn]})


@pytest.mark.parametrize("path", [["r1", "r3"], ["r1", "r2", "r3"]])
def test_what_it_remembers_is_what_the_model_derives(path: list[str]) -> None:
    memo = PiecesMemo(TOPO)
    conn = connection(5001, path)
    assert memo.problems(conn) == [] == connection_problems(holding(conn))
    first = memo.pieces(conn)
    assert first == connection_pieces(holding(conn))
    assert memo.pieces(conn.model_copy()) is first  # an equal connection: remembered


def test_the_locators_of_a_host_are_held_once_for_every_connection() -> None:
    memo = PiecesMemo(TOPO)
    a, b = (memo.pieces(connection(port, ["r1", "r2", "r3"])) for port in (5001, 5002))
    assert a.keys() == b.keys() == {"h1", "h2", "h3"}
    assert all(a[h].locators is b[h].locators and a[h].locators for h in a)


def test_what_the_topology_says_whatever_its_connections_is_derived_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Router numbers, networks' tenants and links' shares: once per memo, not per check or
    per pieces (each a pass over the whole topology), and the answers are the model's own."""
    made: list[Topology] = []
    real = Fixed.of

    def counted(topo: Topology, paths: Any = None) -> Fixed:
        made.append(topo)
        return real(topo, paths)

    memo = PiecesMemo(TOPO)
    monkeypatch.setattr(Fixed, "of", counted)
    conns = [connection(5001, ["r1", "r3"]), connection(5002, ["r1", "r2", "r3"], src_port=7)]
    for conn in conns:
        assert memo.problems(conn) == []
        assert memo.pieces(conn) == connection_pieces(holding(conn))
    assert made == [TOPO]


PORT = st.one_of(st.none(), st.integers(1, 65535))


@st.composite
def two_of_one_shape(draw: st.DrawFn) -> tuple[Connection, Connection]:
    """Two connections alike but for their names, ids and port numbers (each port given in
    both or in neither)."""
    path = draw(st.sampled_from([["r1", "r3"], ["r1", "r2", "r3"]]))
    protocol = draw(st.sampled_from(["udp", "tcp", None]))
    src, dst = (None, None) if protocol is None else (draw(PORT), draw(PORT))
    alike = {
        "a": "pc1",
        "b": "pc3",
        "protocol": protocol,
        "bandwidth": draw(st.sampled_from(["1mbit", "20mbit"])),
        "path": path,
        "bidirectional": draw(st.booleans()),
        "family": draw(st.sampled_from([None, "ipv4", "ipv6", "both"])),
    }
    ids = draw(st.lists(st.integers(1, 4095), min_size=2, max_size=2, unique=True))

    def one(k: int) -> Connection:
        ports = {
            "src_port": src and draw(st.integers(1, 65535)),
            "dst_port": dst and draw(st.integers(1, 65535)),
        }
        return Connection.model_validate({"name": f"c{ids[k]}", "id": ids[k], **alike, **ports})

    return one(0), one(1)


@settings(max_examples=150, deadline=None)
@given(two_of_one_shape())
def test_a_connection_like_one_derived_before_gets_the_models_own_pieces(
    pair: tuple[Connection, Connection],
) -> None:
    """The second of a shape is renumbered from the first's pieces, not derived: it must be
    exactly what the model derives for it (SIDs, names, ids, both directions' ports)."""
    first, second = pair
    memo = PiecesMemo(TOPO)
    assert memo.pieces(first) == connection_pieces(holding(first))
    assert memo.pieces(second) == connection_pieces(holding(second))


def test_only_the_first_of_a_shape_is_derived(monkeypatch: pytest.MonkeyPatch) -> None:
    derived: list[str] = []

    def counted(topo: Topology, *args: Any) -> Any:
        derived.append(topo.connections[0].name)
        return connection_pieces(topo, *args)

    monkeypatch.setattr("vnet.controller.pieces.connection_pieces", counted)
    memo = PiecesMemo(TOPO)
    for port in (5001, 5002, 5003):
        memo.pieces(connection(port, ["r1", "r2", "r3"]))
    memo.pieces(connection(5004, ["r1", "r3"]))  # another path: another shape
    assert derived == ["vc5001", "vc5004"]


def test_a_refusal_is_found_again_and_never_remembered_as_good() -> None:
    memo = PiecesMemo(TOPO)
    bad = connection(5002, ["r1", "r9"])
    found = memo.problems(bad)
    assert found and found == connection_problems(holding(bad))
    assert memo.problems(bad) == found


def test_connections_of_one_shape_are_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Name, id and port numbers aside, what the rules look at is the same: a connection like
    one that passed is not checked again; one on another path, at another rate or without
    its ports is, and a refusal still comes with its own name."""
    checked: list[str] = []

    def counted(topo: Topology, fixed: Fixed | None = None) -> list[Any]:
        checked.append(topo.connections[0].name)
        return connection_problems(topo, fixed)

    monkeypatch.setattr("vnet.controller.pieces.connection_problems", counted)
    memo = PiecesMemo(TOPO)
    assert memo.problems(connection(5001, ["r1", "r3"])) == []
    assert memo.problems(connection(5002, ["r1", "r3"], src_port=7)) == []
    assert memo.problems(connection(5003, ["r1", "r3"])) == []
    assert checked == ["vc5001", "vc5002"]
    for other in (
        connection(5004, ["r1", "r2", "r3"]),
        connection(5005, ["r1", "r3"], bandwidth="20mbit"),
        connection(5006, ["r1", "r3"], protocol=None, dst_port=None),
    ):
        assert memo.problems(other) == []
    assert checked == ["vc5001", "vc5002", "vc5004", "vc5005", "vc5006"]
    bad = connection(5007, ["r1", "r3"], protocol="icmp")  # ports without a protocol of them
    again = connection(5008, ["r1", "r3"], protocol="icmp")
    assert [p.subject for p in memo.problems(bad)] == ["connection 'vc5007'"]
    assert [p.subject for p in memo.problems(again)] == ["connection 'vc5008'"]


def test_it_keeps_the_last_connections_asked_about() -> None:
    memo = PiecesMemo(TOPO, size=2)
    a, b, c = (connection(5000 + k, ["r1", "r3"]) for k in (1, 2, 3))
    kept_a = memo.pieces(a)
    memo.pieces(b)
    assert memo.pieces(a) is kept_a  # asked again: now the newest
    memo.pieces(c)  # b, the oldest, goes
    assert memo.pieces(a) is kept_a
    assert memo.pieces(b) == connection_pieces(holding(b))


def test_a_derived_value_is_remembered_under_its_key() -> None:
    memo, calls = PiecesMemo(TOPO), []
    for _ in range(2):
        assert memo.derived(("k", 1), lambda: calls.append(1) or "v") == "v"
    assert calls == [1]


def test_every_view_of_an_inventory_shares_its_memo() -> None:
    inv = Inventory(TOPO, {link_name(x): link_info(x) for x in TOPO.links})
    around = inv.avoiding(links=["h1-h3"])
    assert around.pieces is inv.pieces and around.avoiding(hosts=["h2"]).pieces is inv.pieces
    assert Inventory(TOPO, dict(inv.links)).pieces is not inv.pieces


def test_a_view_avoiding_the_same_is_made_once_and_avoiding_nothing_is_the_inventory() -> None:
    inv = Inventory(TOPO, {link_name(x): link_info(x) for x in TOPO.links})
    assert inv.avoiding() is inv and inv.avoiding(hosts=["nowhere"]) is inv
    around = inv.avoiding(links=["h1-h3"])
    assert "h1-h3" not in around.links and set(around.links) == set(inv.links) - {"h1-h3"}
    assert inv.avoiding(links=("h1-h3",)) is around  # its views and tenants' views kept
    assert inv.avoiding(links=["h1-h3"], hosts=["h2"]).links == {}  # the triangle's last


def test_threads_asking_at_once_while_it_forgets_get_the_models_answers() -> None:
    """Planning runs in the database's worker threads: one thread's eviction must not break
    another's lookup."""
    memo = PiecesMemo(TOPO, size=3)
    asked = [connection(5001 + k % 7, ["r1", "r3"]) for k in range(120)]
    expected = {c.dst_port: connection_pieces(holding(c)) for c in asked[:7]}

    def ask(conns: list[Connection]) -> list[bool]:
        return [
            memo.pieces(c) == expected[c.dst_port] and memo.derived(c.dst_port, lambda: 1) == 1
            for c in conns
        ]

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(ask, [asked[k::4] for k in range(4)]))
    assert all(all(a) for a in answers)


def test_an_admitted_connections_current_pieces_are_the_plans_and_the_derivations(
    tmp_path: Path,
) -> None:
    """Admission remembers the plan it recorded (a reroute asks for the current pieces of
    every connection it moves): what is remembered is what deriving them from the stored
    path again gives, on a memo that never saw the connection."""
    w = world(tmp_path)

    async def scenario(svc: Service) -> None:
        await svc.create_connection(ACME, "acme", voice("v", 5201, "20mbit"))
        inv, policy = await svc.inventory(), svc.flows.policy
        conn = await svc.db.read(lambda s: s.scalars(select(DbConnection)).one())
        derivations: list[object] = []
        real = planner.plan_connection

        def counted(*args: Any, **kw: Any) -> Any:
            derivations.append(args)
            return real(*args, **kw)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(planner, "plan_connection", counted)
            remembered = planning.current_pieces(inv, "acme", conn, policy)
        assert derivations == [], "admission's plan was not remembered"
        fresh = Inventory(inv.topology, dict(inv.links))
        assert planning.current_pieces(fresh, "acme", conn, policy) == remembered
        assert set(remembered.pieces) == {"h1", "h3"}

    w.run(scenario)
