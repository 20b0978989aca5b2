"""NETCONF framing is linear in the message size and bounded (issue 17, finding 4)."""

from __future__ import annotations

import asyncio

import pytest

from vnet.agent.netconf import framing
from vnet.agent.netconf.framing import FramingError, MessageReader, frame


class CountingBuffer(bytearray):
    """A receive buffer that counts how many bytes searches for the end mark look at."""

    scanned = 0

    def find(self, sub, start=0, *rest):  # type: ignore[no-untyped-def, override]
        CountingBuffer.scanned += len(self) - start
        return super().find(sub, start, *rest)


def feed(data: bytes, step: int) -> tuple[MessageReader, list[int]]:
    """A reader over `data` in `step`-byte reads; the list counts the bytes handed out."""
    given = [0]

    async def read(n: int) -> bytes:
        piece = data[given[0] : given[0] + min(n, step)]
        given[0] += len(piece)
        return piece

    return MessageReader(read), given


def test_the_end_mark_is_searched_once_per_byte() -> None:
    message = b"<rpc>" + b"x" * 4_000_000 + b"</rpc>"
    reader, _ = feed(frame(message, chunked=False), 4096)
    reader._buf = CountingBuffer()
    CountingBuffer.scanned = 0
    assert asyncio.run(reader.next()) == message
    # the old reader searched the whole buffer after every read: ~2e9 bytes here
    assert CountingBuffer.scanned < 2 * len(message)


@pytest.mark.parametrize("chunked", [False, True])
def test_a_message_over_the_limit_is_refused_before_it_is_all_read(chunked: bool) -> None:
    data = frame(b"y" * 10_000_000, chunked)
    reader, given = feed(data, 65536)
    reader.chunked = chunked
    reader.max_message = 1_000_000
    with pytest.raises(FramingError, match="larger than the limit of 1000000 bytes"):
        asyncio.run(reader.next())
    assert given[0] <= 1_000_000 + 2 * framing.READ_SIZE


@pytest.mark.parametrize("chunked", [False, True])
def test_a_message_at_the_limit_passes(chunked: bool) -> None:
    message = b"z" * 100_000
    reader, _ = feed(frame(message, chunked) + frame(b"<next/>", chunked), 999)
    reader.chunked = chunked
    reader.max_message = len(message)
    assert asyncio.run(reader.next()) == message
    assert asyncio.run(reader.next()) == b"<next/>"


def test_many_small_chunks_make_one_message() -> None:
    message = bytes(range(256)) * 400
    data = b"".join(b"\n#%d\n" % 10 + message[i : i + 10] for i in range(0, len(message), 10))
    reader, _ = feed(data + b"\n##\n", 7)
    reader.chunked = True
    assert asyncio.run(reader.next()) == message
