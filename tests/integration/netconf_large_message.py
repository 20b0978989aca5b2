"""One NETCONF session sends a large <edit-config> while another sends <get> after <get>;
prints JSON: the edit's reply and duration, and the other session's <get> latencies.

Run where the agent's port is reachable (inside its namespace):
    python netconf_large_message.py ADDRESS PORT USER PASSWORD MEGABYTES
Speaks NETCONF 1.0 framing with asyncssh, independently of the agent's code.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import asyncssh

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
NS = "urn:vnet:yang:vnet-router"
EOM = b"]]>]]>"
HELLO = (
    f'<hello xmlns="{NC}"><capabilities><capability>urn:ietf:params:netconf:base:1.0'
    f"</capability></capabilities></hello>"
).encode() + EOM


def large_edit(megabytes: int) -> bytes:
    """A well-formed edit-config of about `megabytes` MB that the agent refuses once parsed
    (the router carries elements the YANG module does not know)."""
    item = b"<unknown-leaf>" + b"x" * 1000 + b"</unknown-leaf>"
    count = megabytes * 1024 * 1024 // len(item)
    return (
        f'<rpc message-id="big" xmlns="{NC}"><edit-config><target><running/></target>'
        f'<config><routers xmlns="{NS}"><router><name>big</name>'.encode()
        + item * count
        + b"</router></routers></config></edit-config></rpc>"
        + EOM
    )


class Session:
    def __init__(self, writer: asyncssh.SSHWriter, reader: asyncssh.SSHReader):
        self.w, self.r, self.buf = writer, reader, b""

    async def reply(self) -> bytes:
        while (end := self.buf.find(EOM)) < 0:
            data = await self.r.read(65536)
            if not data:
                raise EOFError("session closed by the agent")
            self.buf += data
        out, self.buf = self.buf[:end], self.buf[end + len(EOM) :]
        return out


async def open_session(conn: asyncssh.SSHClientConnection) -> Session:
    w, r, _ = await conn.open_session(subsystem="netconf", encoding=None)
    s = Session(w, r)
    w.write(HELLO)
    await s.reply()
    return s


async def gets(s: Session, stop: asyncio.Event, sent: list[tuple[float, float]]) -> None:
    """<get> after <get> until `stop`; `sent` gets (when sent, how long the reply took)."""
    n = 0
    while not stop.is_set():
        n += 1
        start = time.monotonic()
        s.w.write(f'<rpc message-id="g{n}" xmlns="{NC}"><get/></rpc>'.encode() + EOM)
        await s.reply()
        sent.append((start, time.monotonic() - start))
        await asyncio.sleep(0.02)


async def main(address: str, port: int, user: str, password: str, megabytes: int) -> dict:
    message = large_edit(megabytes)
    async with asyncssh.connect(
        address, port, username=user, password=password, known_hosts=None
    ) as conn:
        big, small = await open_session(conn), await open_session(conn)
        stop, sent = asyncio.Event(), []
        task = asyncio.create_task(gets(small, stop, sent))
        await asyncio.sleep(0.5)  # a baseline before the edit
        before = sorted(latency for _, latency in sent)
        start = time.monotonic()
        big.w.write(message)
        try:
            reply = (await big.reply()).decode(errors="replace")
        except EOFError as err:
            reply = f"EOF: {err}"
        end = time.monotonic()
        stop.set()
        await task  # the <get> in flight when the edit ended counts too
        during = [lat for at, lat in sent if at < end and at + lat > start]
        return {
            "bytes": len(message),
            "edit_seconds": round(end - start, 3),
            "edit_reply": reply[:400],
            "gets_during_edit": len(during),
            "max_get_latency_during_edit": round(max(during, default=0.0), 3),
            "median_get_latency_before": round(before[len(before) // 2], 4),
        }


if __name__ == "__main__":
    a, p, u, pw, mb = sys.argv[1:6]
    print(json.dumps(asyncio.run(main(a, int(p), u, pw, int(mb)))))
