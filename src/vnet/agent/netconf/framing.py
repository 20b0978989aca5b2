"""NETCONF message framing over SSH (RFC 6242): end-of-message and chunked.

Linear in the message size (issue 17, finding 4): bytes are appended to one
buffer and consumed from its front, the end-of-message mark is searched only in
what arrived since the last search, and a message larger than the session's
limit ends the session as soon as that is known, before it is all buffered.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

EOM = b"]]>]]>"
END_OF_CHUNKS = b"\n##\n"
MAX_MESSAGE = 64 * 1024 * 1024  # the default limit; the agent's config may set another
READ_SIZE = 65536
_CHUNK_HEADER = re.compile(rb"\n#([1-9][0-9]{0,9})\n")
_HEADER_PREFIX = re.compile(rb"\n(#([1-9][0-9]{0,9})?)?")
_LONGEST_HEADER = 13  # "\n#" + 10 digits + "\n"


class FramingError(Exception):
    """The peer broke the framing; RFC 6242 says to close the session."""


Reader = Callable[[int], Awaitable[bytes]]


class MessageReader:
    def __init__(self, read: Reader, max_message: int = MAX_MESSAGE):
        self._read = read
        self._buf = bytearray()  # deleting from the front of a bytearray is O(1) amortized
        self.max_message = max_message
        self.chunked = False

    async def _more(self) -> None:
        data = await self._read(READ_SIZE)
        if not data:
            raise EOFError
        self._buf += data

    def _too_large(self) -> FramingError:
        return FramingError(f"message larger than the limit of {self.max_message} bytes")

    async def next(self) -> bytes:
        return await (self._next_chunked() if self.chunked else self._next_eom())

    async def _next_eom(self) -> bytes:
        searched = 0  # the mark cannot end before here: no rescanning of older bytes
        while (end := self._buf.find(EOM, searched)) < 0:
            searched = max(0, len(self._buf) - len(EOM) + 1)
            if searched > self.max_message:
                raise self._too_large()
            await self._more()
        if end > self.max_message:
            raise self._too_large()
        message = bytes(self._buf[:end])
        del self._buf[: end + len(EOM)]
        return message

    async def _next_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            size = await self._chunk_header()
            if size is None:
                return b"".join(parts)
            total += size
            if total > self.max_message:
                raise self._too_large()
            while len(self._buf) < size:
                await self._more()
            parts.append(bytes(self._buf[:size]))
            del self._buf[:size]

    async def _chunk_header(self) -> int | None:
        """Consume "\\n#<size>\\n" (returns size) or the end mark "\\n##\\n" (returns None)."""
        while True:
            if self._buf.startswith(END_OF_CHUNKS):
                del self._buf[: len(END_OF_CHUNKS)]
                return None
            if m := _CHUNK_HEADER.match(self._buf):
                size = int(m.group(1))  # before the deletion: the match reads the buffer
                del self._buf[: m.end()]
                return size
            head = bytes(self._buf[:_LONGEST_HEADER])
            if not END_OF_CHUNKS.startswith(head[:4]) and not _could_be_header(head):
                raise FramingError(f"bad chunk header {head[:_LONGEST_HEADER]!r}")
            await self._more()


def _could_be_header(head: bytes) -> bool:
    return _HEADER_PREFIX.fullmatch(head) is not None


def frame(message: bytes, chunked: bool) -> bytes:
    if not chunked:
        return message + EOM
    return b"\n#%d\n" % len(message) + message + END_OF_CHUNKS
