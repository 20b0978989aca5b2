"""Make-before-break as host changes (service/steps.py) and reconciliation's diff
(reconcile.differences): which host gets what, in which step."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Network

from vnet.controller.admission.pieces import Ends, Hop, host_pieces
from vnet.controller.service.reconcile import Expected, differences
from vnet.controller.service.steps import (
    BREAK,
    SWITCH,
    install,
    make_before_break,
    off_failed_path,
    remove,
)

ENDS = Ends(
    source=IPv4Address("10.0.1.1"),
    destination=IPv4Address("10.0.2.2"),
    lan_network="lan1",
    egress_network="lan2",
    protocol="udp",
    destination_port=5001,
)


def hop(host: str) -> Hop:
    n = int(host[1:])
    return Hop(host, f"r{n}", IPv6Network(f"fc00:0:{n}::/48"), "core")


def pieces(path: list[str], bandwidth: int = 10_000_000):  # type: ignore[no-untyped-def]
    return host_pieces("vc7", 7, bandwidth, [hop(h) for h in path], ENDS)


def test_path_change_makes_transit_first_then_switches_ingress_then_breaks() -> None:
    old, new = pieces(["h1", "h2", "h4"]), pieces(["h1", "h3", "h4"])
    make, switch, brk = make_before_break(old, new)
    # 1. the new transit host gets its End SID; the ingress is not touched yet
    assert [c.host for c in make] == ["h3"]
    assert make[0].put[0].transit == new["h3"].transit and not make[0].put[0].ingress
    # 2. the ingress steers into the new segment list
    assert [c.host for c in switch] == ["h1"]
    assert switch[0].put[0].ingress == new["h1"].ingress
    # 3. the old transit host loses the connection
    assert [(c.host, c.delete) for c in brk] == [("h2", ("vc7",))]


def test_a_move_off_a_failed_path_makes_and_switches_in_one_step_then_breaks() -> None:
    old, new = pieces(["h1", "h2", "h4"]), pieces(["h1", "h3", "h4"])
    (switch, put), (brk, gone) = off_failed_path(old, new)
    # 1. the new transit and the ingress's new segment list together: nothing to keep
    assert (switch, [c.host for c in put]) == (SWITCH, ["h1", "h3"])
    assert put[0].put[0] == new["h1"] and put[1].put[0] == new["h3"]
    # 2. the old transit host, perhaps the one that failed, in a step of its own
    assert (brk, [(c.host, c.delete) for c in gone]) == (BREAK, [("h2", ("vc7",))])


def test_a_move_off_a_failed_path_on_hosts_of_the_new_one_is_a_single_step() -> None:
    """A failed direct link: the new transit and the ingress in one step; the egress host's
    pieces are the same on either path, so it is not asked."""
    old, new = pieces(["h1", "h3"]), pieces(["h1", "h2", "h3"])
    assert new["h3"] == old["h3"]
    assert [(phase, [c.host for c in step]) for phase, step in off_failed_path(old, new)] == [
        (SWITCH, ["h1", "h2"])
    ]


def test_bandwidth_change_on_the_same_path_is_one_ingress_switch() -> None:
    old, new = pieces(["h1", "h2"]), pieces(["h1", "h2"], 20_000_000)
    todo = make_before_break(old, new)
    assert len(todo) == 1
    assert [c.host for c in todo[0]] == ["h1"]
    assert todo[0][0].put[0].ingress[0].bandwidth == 20_000_000


def test_nothing_to_do_when_the_pieces_are_the_same() -> None:
    assert make_before_break(pieces(["h1", "h2"]), pieces(["h1", "h2"])) == []


def test_install_and_remove_touch_every_host_of_the_path() -> None:
    new = pieces(["h1", "h2", "h3"])
    assert [c.host for c in install(new)] == ["h1", "h2", "h3"]
    assert [(c.host, c.delete) for c in remove(new)] == [(h, ("vc7",)) for h in ("h1", "h2", "h3")]


def test_reconcile_removes_extra_puts_back_missing_and_leaves_others_alone() -> None:
    want = pieces(["h1", "h2"])["h1"]
    stray = want.model_copy(update={"name": "vc99", "id": 99})
    foreign = want.model_copy(update={"name": "voice", "id": 5})  # not the controller's
    busy = want.model_copy(update={"name": "vc12", "id": 12})  # a request is changing it
    expected = Expected(pieces={"vc7": want}, busy={"vc12"})
    change, drift = differences("h1", [stray, foreign, busy], expected)
    assert change is not None
    assert change.delete == ("vc99",) and change.put == (want,)
    assert {(d.connection, d.what) for d in drift} == {("vc99", "extra"), ("vc7", "missing")}


def test_reconcile_replaces_a_different_piece_and_is_quiet_when_equal() -> None:
    want = pieces(["h1", "h2"])["h1"]
    changed = want.model_copy(
        update={"ingress": [want.ingress[0].model_copy(update={"bandwidth": 1_000_000})]}
    )
    change, drift = differences("h1", [changed], Expected(pieces={"vc7": want}))
    assert change is not None and change.put == (want,)
    assert [d.what for d in drift] == ["different"]
    assert differences("h1", [want], Expected(pieces={"vc7": want})) == (None, [])


def test_segment_lists_name_the_new_transit() -> None:
    new = pieces(["h1", "h3", "h4"])
    assert new["h1"].ingress[0].segments[0] in IPv6Network("fc00:0:3::/48")


class _Answers:
    """Which hosts answer, for the watcher (its agents and reconciler in one)."""

    def __init__(self) -> None:
        self.up: set[str] = set()
        self.reconciled: list[list[str]] = []
        self.agents = self

    async def reachable(self, host: str) -> bool:
        if host == "h9":
            raise OSError("no route")  # an error counts as not reachable
        return host in self.up

    async def all_hosts(self, hosts: list[str]) -> dict[str, list[object]]:
        self.reconciled.append(hosts)
        return {h: [] for h in hosts}


def test_the_watcher_reconciles_a_host_when_it_answers_again() -> None:
    import asyncio

    from vnet.controller.service.reconcile import Watcher

    answers = _Answers()
    watcher = Watcher(answers, ["h1", "h2", "h9"], 1.0)  # type: ignore[arg-type]
    watcher.reachable = {"h1": True, "h2": True}  # as the reconciliation at start left them
    answers.up = {"h1"}
    asyncio.run(watcher.check())  # h2 gone: nothing to do yet
    assert answers.reconciled == [] and watcher.reachable == {"h1": True, "h2": False, "h9": False}
    answers.up = {"h1", "h2"}
    asyncio.run(watcher.check())  # h2 back: reconciled, once
    asyncio.run(watcher.check())
    assert answers.reconciled == [["h2"]] and watcher.reachable["h2"] is True
