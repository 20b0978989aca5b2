"""NETCONF framing, subtree filtering and edit-config semantics, without a server."""

from __future__ import annotations

import asyncio
import copy
import shutil
import subprocess
import sys

import pytest
from lxml import etree

from vnet.agent.netconf.edit import apply_edit
from vnet.agent.netconf.framing import FramingError, MessageReader, frame
from vnet.agent.netconf.subtree import apply_filter
from vnet.model.yang.errors import RpcError
from vnet.model.yang.module import YANG_DIR

NS = "urn:vnet:yang:vnet-router"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"


def read_all(data: bytes, chunked: bool, step: int) -> list[bytes]:
    async def go() -> list[bytes]:
        pos = 0

        async def read(n: int) -> bytes:
            nonlocal pos
            piece = data[pos : pos + step]
            pos += step
            return piece

        reader = MessageReader(read)
        reader.chunked = chunked
        out = []
        try:
            while True:
                out.append(await reader.next())
        except EOFError:
            return out

    return asyncio.run(go())


@pytest.mark.parametrize("step", [1, 2, 7, 1 << 20])
@pytest.mark.parametrize("chunked", [False, True])
def test_framing_round_trip_at_any_read_size(step: int, chunked: bool) -> None:
    messages = [b"<a/>", b"x" * 9000, b"<rpc>with ]]> inside</rpc>" if chunked else b"<b/>"]
    data = b"".join(frame(m, chunked) for m in messages)
    assert read_all(data, chunked, step) == messages


def test_rfc_6242_chunk_example() -> None:
    data = b'\n#4\n<rpc\n#18\n message-id="102"\n\n##\n'
    assert read_all(data, True, 3) == [b'<rpc message-id="102"\n']


@pytest.mark.parametrize("bad", [b"\n#0\nx\n##\n", b"\nX4\nabcd", b"\n#12345678901\n"])
def test_bad_chunk_headers_are_framing_errors(bad: bytes) -> None:
    with pytest.raises(FramingError):
        read_all(bad, True, 64)


DATA = f"""<data><routers xmlns="{NS}">
<router><name>r1</name><index>1</index><admin-state>up</admin-state>
  <interface><name>eth0</name><network>n1</network></interface></router>
<router><name>r2</name><index>2</index><admin-state>down</admin-state></router>
</routers></data>"""


def filtered(filter_xml: str) -> str:
    roots = list(etree.fromstring(DATA))
    kept = apply_filter(roots, etree.fromstring(f"<filter>{filter_xml}</filter>"))
    return "".join(etree.tostring(e, encoding=str) for e in kept)


def test_subtree_content_match_selects_one_entry() -> None:
    out = filtered(f'<routers xmlns="{NS}"><router><name>r2</name></router></routers>')
    assert "<name>r2</name>" in out and "r1" not in out and "<admin-state>down" in out


def test_subtree_selection_node_limits_the_fields() -> None:
    out = filtered(f'<routers xmlns="{NS}"><router><name/><index/></router></routers>')
    assert "<index>1</index>" in out and "<index>2</index>" in out
    assert "admin-state" not in out and "interface" not in out


def test_subtree_without_namespace_matches_and_empty_filter_selects_nothing() -> None:
    assert "<name>r1</name>" in filtered("<routers><router><name>r1</name></router></routers>")
    assert filtered("") == ""
    assert filtered(f'<routers xmlns="{NS}"><router><name>r9</name></router></routers>') == ""


NETWORKS = {"vnet-router:virtual-networks": {"network": [{"name": "n1", "tenant": "a", "vni": 10}]}}


def edit(tree: dict, body: str, default: str = "merge") -> dict:  # type: ignore[type-arg]
    config = etree.fromstring(f'<config xmlns:nc="{NC}">{body}</config>')
    return apply_edit(tree, config, default)


def vr(name: str, op: str = "", inner: str = "") -> str:
    attr = f' nc:operation="{op}"' if op else ""
    return f'<routers xmlns="{NS}"><router{attr}><name>{name}</name>{inner}</router></routers>'


def test_merge_create_replace_delete_remove() -> None:
    t = edit(NETWORKS, vr("r1", inner="<index>4</index><admin-state>down</admin-state>"))
    r = t["vnet-router:routers"]["router"][0]
    assert r == {"name": "r1", "index": 4, "admin-state": "down"}
    t = edit(t, vr("r1", inner="<admin-state>up</admin-state>"))
    assert t["vnet-router:routers"]["router"][0]["index"] == 4  # merge keeps the rest
    t = edit(t, vr("r1", op="replace", inner="<admin-state>up</admin-state>"))
    assert t["vnet-router:routers"]["router"][0] == {"name": "r1", "admin-state": "up"}
    with pytest.raises(RpcError) as info:
        edit(t, vr("r1", op="create"))
    assert info.value.tag == "data-exists"
    t = edit(t, vr("r1", op="delete"))
    assert "vnet-router:routers" not in t
    with pytest.raises(RpcError) as info:
        edit(t, vr("r1", op="delete"))
    assert info.value.tag == "data-missing"
    assert edit(t, vr("r1", op="remove")) == t


def test_default_operation_none_changes_only_what_an_operation_names() -> None:
    t = edit(NETWORKS, vr("r1", inner="<index>4</index>"))
    same = edit(t, vr("r1", inner="<index>9</index>"), default="none")
    assert same == t
    gone = edit(t, vr("r1", inner='<index nc:operation="delete">4</index>'), default="none")
    assert "index" not in gone["vnet-router:routers"]["router"][0]
    assert edit(t, vr("r2"), default="none") == t  # nothing created under "none"


def test_default_operation_replace_replaces_everything() -> None:
    t = edit(NETWORKS, vr("r1"), default="replace")
    assert "vnet-router:virtual-networks" not in t and len(t["vnet-router:routers"]["router"]) == 1


def test_errors_name_the_element() -> None:
    with pytest.raises(RpcError) as info:
        edit(NETWORKS, f'<routers xmlns="{NS}"><router><index>1</index></router></routers>')
    assert info.value.tag == "missing-element" and info.value.info["bad-element"] == "name"
    with pytest.raises(RpcError) as info:
        edit(NETWORKS, vr("r1", op="frobnicate"))
    assert info.value.tag == "bad-attribute"
    with pytest.raises(RpcError) as info:
        edit(NETWORKS, vr("r1", inner="<index>seven</index>"))
    assert info.value.path == "/vr:routers/vr:router[vr:name='r1']/vr:index"


YANG = next(YANG_DIR.glob("vnet-router@*.yang"))


@pytest.mark.skipif(shutil.which("yanglint") is None, reason="yanglint (libyang2-tools) missing")
def test_yang_module_is_clean_under_yanglint() -> None:
    done = subprocess.run(["yanglint", "-i", str(YANG)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_yang_module_is_clean_under_pyang_strict_and_lint() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pyang", "--strict", "--lint", "-p", str(YANG_DIR), str(YANG)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done.stderr


def test_an_edit_never_changes_the_given_tree_and_shares_what_it_does_not_touch() -> None:
    """Copy on write: the datastore hands apply_edit its running tree itself."""
    itf = "<interface><name>eth0</name><network>n1</network></interface>"
    t = NETWORKS
    for name in ("r1", "r2", "r3"):
        t = edit(t, vr(name, inner=itf))
    before = copy.deepcopy(t)
    body = (
        vr("r2", inner="<admin-state>down</admin-state>")
        + vr("r3", "delete")
        + vr("r4", "create", inner=itf)
    )
    out = edit(t, body)
    assert t == before, "the edit changed the tree it was given"
    old = t["vnet-router:routers"]["router"]
    new = out["vnet-router:routers"]["router"]
    assert [r["name"] for r in new] == ["r1", "r2", "r4"]
    assert new[0] is old[0], "an untouched entry is shared, not copied"
    assert new[1]["admin-state"] == "down" and "admin-state" not in old[1]
    assert new[1]["interface"] is old[1]["interface"]
    assert out["vnet-router:virtual-networks"] is t["vnet-router:virtual-networks"]


@pytest.mark.parametrize("seed", range(3))
def test_edits_of_each_others_results_answer_as_edits_of_copies(seed: int) -> None:
    """An edit of the tree an edit left reuses that edit's key index of the list (copied);
    the same edits of deep copies build every index afresh. Both give the same trees and
    the same refusals over a random history: creates, merges, replaces, deletes, and
    deletes of a VR's only interface (the entry is then rebuilt without it)."""
    import random

    rng = random.Random(seed)
    itf = "<interface><name>eth0</name><network>n1</network></interface>"
    chained = fresh = NETWORKS
    for _ in range(200):
        name = f"r{rng.randrange(12)}"
        body = rng.choice(
            [
                vr(name, "create", itf),
                vr(name, inner=f"<index>{rng.randrange(1, 50)}</index>"),
                vr(name, "replace", itf),
                vr(name, "delete"),
                vr(name, inner='<interface nc:operation="delete"><name>eth0</name></interface>'),
            ]
        ) + rng.choice(["", vr(f"r{rng.randrange(12)}", "remove")])
        outcomes = []
        for tree in (chained, copy.deepcopy(fresh)):
            try:
                outcomes.append(edit(tree, body))
            except RpcError as err:
                outcomes.append((err.tag, err.path))
        assert outcomes[0] == outcomes[1], body
        if isinstance(outcomes[0], dict):
            chained, fresh = outcomes
