"""NETCONF message framing over SSH (RFC 6242): end-of-message and chunked."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

EOM = b"]]>]]>"
MAX_MESSAGE = 64 * 1024 * 1024
_CHUNK_HEADER = re.compile(rb"\n#([1-9][0-9]{0,9})\n")


class FramingError(Exception):
    """The peer broke the framing; RFC 6242 says to close the session."""


Reader = Callable[[int], Awaitable[bytes]]


class MessageReader:
    def __init__(self, read: Reader):
        self._read = read
        self._buf = b""
        self.chunked = False

    async def _more(self) -> None:
        data = await self._read(65536)
        if not data:
            raise EOFError
        self._buf += data
        if len(self._buf) > MAX_MESSAGE:
            raise FramingError("message larger than 64 MiB")

    async def next(self) -> bytes:
        return await (self._next_chunked() if self.chunked else self._next_eom())

    async def _next_eom(self) -> bytes:
        while (end := self._buf.find(EOM)) < 0:
            await self._more()
        message, self._buf = self._buf[:end], self._buf[end + len(EOM) :]
        return message

    async def _next_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = await self._chunk_header()
            if size is None:
                return b"".join(parts)
            while len(self._buf) < size:
                await self._more()
            parts.append(self._buf[:size])
            self._buf = self._buf[size:]

    async def _chunk_header(self) -> int | None:
        """Consume "\n#<size>\n" (returns size) or the end mark "\n##\n" (returns None)."""
        while True:
            if self._buf.startswith(b"\n##\n"):
                self._buf = self._buf[4:]
                return None
            if m := _CHUNK_HEADER.match(self._buf):
                self._buf = self._buf[m.end() :]
                return int(m.group(1))
            head = self._buf[:13]  # the longest header: "\n#" + 10 digits + "\n"
            if not b"\n##\n".startswith(head[:4]) and not _could_be_header(head):
                raise FramingError(f"bad chunk header {head!r}")
            await self._more()


def _could_be_header(head: bytes) -> bool:
    return re.fullmatch(rb"\n(#([1-9][0-9]{0,9})?)?", head) is not None


def frame(message: bytes, chunked: bool) -> bytes:
    if not chunked:
        return message + EOM
    return b"\n#%d\n" % len(message) + message + b"\n##\n"
