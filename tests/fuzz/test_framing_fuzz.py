"""NETCONF framing under arbitrary input: messages come back as sent at any read size,
and garbage ends in a framing error or end of input, never in anything else."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from vnet.agent.netconf.framing import EOM, FramingError, MessageReader, frame


def read_messages(data: bytes, chunked: bool, step: int, limit: int = 1 << 20) -> list[bytes]:
    async def go() -> list[bytes]:
        pos = 0

        async def read(n: int) -> bytes:
            nonlocal pos
            piece = data[pos : pos + min(n, step)]
            pos += len(piece)
            return piece

        reader = MessageReader(read, max_message=limit)
        reader.chunked = chunked
        out: list[bytes] = []
        try:
            while True:
                out.append(await reader.next())
        except EOFError:
            return out

    return asyncio.run(go())


eom_messages = st.lists(st.binary(max_size=300).filter(lambda m: EOM not in m), max_size=5)


@given(eom_messages, st.integers(1, 64))
def test_end_of_message_framing_round_trips(messages: list[bytes], step: int) -> None:
    data = b"".join(frame(m, chunked=False) for m in messages)
    # a message ending in a prefix of the mark is ambiguous in RFC 6242 1.0 framing itself
    if all(not any(m.endswith(EOM[:k]) for k in range(1, len(EOM))) for m in messages):
        assert read_messages(data, False, step) == messages


@given(st.lists(st.binary(min_size=1, max_size=300), max_size=5), st.integers(1, 64))
def test_chunked_framing_round_trips(messages: list[bytes], step: int) -> None:
    data = b"".join(frame(m, chunked=True) for m in messages)
    assert read_messages(data, True, step) == messages


@given(st.binary(max_size=2000), st.booleans(), st.integers(1, 64), st.integers(1, 500))
def test_garbage_ends_in_a_framing_error_or_end_of_input(
    data: bytes, chunked: bool, step: int, limit: int
) -> None:
    try:
        messages = read_messages(data, chunked, step, limit)
    except FramingError:
        return
    assert all(len(m) <= limit for m in messages)
