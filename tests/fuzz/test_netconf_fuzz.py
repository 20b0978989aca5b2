"""A bounded NETCONF XML fuzzer: <rpc>s built from the protocol's and the module's names,
then mutated (cut, spliced, bytes flipped), go through a real session over a datastore
that skips the kernel. Every message must get exactly one well-formed <rpc-reply>, and
never an "internal error" (which is how the session reports an unexpected exception)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from tests.nokernel_support import NoKernelDatastore, admin_config
from vnet.agent.netconf.framing import EOM
from vnet.agent.netconf.session import Session

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
NS = "urn:vnet:yang:vnet-router"

texts = st.one_of(
    st.sampled_from(["r1", "n1", "eth0", "10.1.0.1/24", "up", "down", "7", "-1", "", "fd00::1/64"]),
    st.text(max_size=10).map(lambda t: "".join(c for c in t if c.isprintable())),
)
leaf_names = st.sampled_from(
    ["name", "index", "admin-state", "network", "ipv4", "ipv6", "destination", "next-hop", "x"]
)
operations = st.sampled_from(["merge", "replace", "create", "delete", "remove", "none", "bogus"])


@st.composite
def router_xml(draw: st.DrawFn) -> str:
    op = draw(st.one_of(st.just(""), operations.map(lambda o: f' nc:operation="{o}"')))
    leaves = "".join(
        f"<{n}>{t}</{n}>" for n, t in draw(st.lists(st.tuples(leaf_names, texts), max_size=4))
    )
    itfs = "".join(
        f"<interface><name>{a}</name><network>{b}</network><ipv4>{c}</ipv4></interface>"
        for a, b, c in draw(st.lists(st.tuples(texts, texts, texts), max_size=2))
    )
    return f'<router xmlns:nc="{NC}"{op}>{leaves}{itfs}</router>'


@st.composite
def rpc_body(draw: st.DrawFn) -> str:
    target = draw(st.sampled_from(["running", "candidate", "startup", "x"]))
    entries = "".join(draw(st.lists(router_xml(), max_size=3)))
    config = f'<config><routers xmlns="{NS}">{entries}</routers></config>'
    return draw(
        st.sampled_from(
            [
                f"<get-config><source><{target}/></source></get-config>",
                f'<get><filter type="subtree"><routers xmlns="{NS}"/></filter></get>',
                f"<edit-config><target><{target}/></target>{config}</edit-config>",
                f"<edit-config><target><{target}/></target><test-option>test-only</test-option>{config}</edit-config>",
                f"<lock><target><{target}/></target></lock>",
                f"<unlock><target><{target}/></target></unlock>",
                "<commit/>",
                "<discard-changes/>",
                f"<validate><source><{target}/></source></validate>",
                "<kill-session><session-id>999</session-id></kill-session>",
                "<get-schema/>",
                "<unknown-op/>",
            ]
        )
    )


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    msg_id = draw(
        st.one_of(
            st.just(' message-id="1"'), st.just(""), texts.map(lambda t: f' message-id="{t}"')
        )
    )
    text = f'<rpc xmlns="{NC}"{msg_id}>{draw(rpc_body())}</rpc>'.encode()
    mutation = draw(st.sampled_from(["none", "cut", "splice", "flip"]))
    if mutation == "none" or not text:
        return text
    at = draw(st.integers(0, len(text) - 1))
    if mutation == "cut":
        return text[:at]
    if mutation == "splice":
        return text[:at] + draw(st.binary(max_size=8)) + text[at:]
    return text[:at] + bytes([text[at] ^ draw(st.integers(1, 255))]) + text[at + 1 :]


def replies(batch: list[bytes]) -> list[bytes]:
    out: list[bytes] = []

    async def main(state_dir: Path) -> None:
        ds = NoKernelDatastore.with_networks(admin_config(state_dir))

        async def read(n: int) -> bytes:
            return b""

        session = Session(ds, "admin", read, out.append, lambda: None)
        for message in batch:
            await session.handle(message)
        ds._kx.shutdown(wait=False)

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
    return out


@given(st.lists(messages(), min_size=1, max_size=4))
def test_every_rpc_gets_one_well_formed_reply_and_no_internal_error(batch: list[bytes]) -> None:
    out = replies(batch)
    assert len(out) == len(batch)
    for framed in out:
        assert framed.endswith(EOM)
        reply = etree.fromstring(framed[: -len(EOM)])
        assert etree.QName(reply).localname == "rpc-reply"
        assert b"internal error" not in framed, framed
