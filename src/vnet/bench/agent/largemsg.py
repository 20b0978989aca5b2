"""A large NETCONF <edit-config> on one session while another sends <get> after <get>
(issue 17: parsing a large message must not stop the agent serving other sessions).

Speaks NETCONF 1.0 framing with asyncssh, independently of the agent's code. It runs
as its own process inside the agent's namespace (`python -m vnet.bench.agent.largemsg
ADDRESS PORT USER PASSWORD MEGABYTES`, JSON on stdout), so the client's own parsing
never shares a CPU slice with the caller; `run_client` does that. The edit is
well-formed and refused once parsed (elements the YANG module does not know), so the
datastore stays as it was.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from vnet.bench.results import BenchResult
from vnet.model.yang.module import NAMESPACE as NS
from vnet.model.yang.module import NETCONF_NS as NC
from vnet.tools import processes

EOM = b"]]>]]>"
HELLO = (
    f'<hello xmlns="{NC}"><capabilities><capability>urn:ietf:params:netconf:base:1.0'
    f"</capability></capabilities></hello>"
).encode() + EOM
BASELINE_S = 0.5  # <get>s before the edit, for the latency without it
FIRST_ANSWER_S = 30.0  # at most this long for the first of them
GET_PAUSE_S = 0.02  # between two <get>s


GET_METRIC, EDIT_METRIC = "get_beside_large_edit", "large_edit"
BEFORE, DURING = "before the edit", "during the edit"


def declare(result: BenchResult, megabytes: int) -> None:
    result.declare(
        GET_METRIC,
        "ms",
        x_label="another session's <get>",
        plot="bar",
        description=f"<get> after <get> on one session, {GET_PAUSE_S * 1000:g} ms apart, before "
        f"and during a {megabytes} MB edit-config on another session of the same SSH "
        "connection (asyncssh, NETCONF 1.0 framing).",
    )
    result.declare(
        EDIT_METRIC,
        "s",
        x_label="one edit-config",
        plot="bar",
        description=f"The {megabytes} MB edit-config, sent to the reply (an rpc-error naming "
        "the unknown element: it is parsed in full and refused).",
    )


def measure(result: BenchResult, agent: Any, megabytes: int) -> None:
    """One large edit on `agent` (a started SandboxAgent); its samples into `result`."""
    port = agent.ports["netconf"]
    found = run_client(agent.host.namespace, port, agent.user, agent.password, megabytes)
    if "<rpc-error>" not in found["edit_reply"]:
        result.note(f"the large edit was not refused as expected: {found['edit_reply'][:200]}")
    result.add(GET_METRIC, "vnet", [s * 1000 for s in found["get_latencies_before"]], x=BEFORE)
    result.add(GET_METRIC, "vnet", [s * 1000 for s in found["get_latencies_during"]], x=DURING)
    result.record(EDIT_METRIC, "vnet", found["edit_seconds"], x=f"{megabytes} MB")


def run_client(
    namespace: str, port: int, user: str, password: str, megabytes: int, timeout: float = 600
) -> dict[str, Any]:
    """One large edit with <get>s alongside, from a process inside `namespace`."""
    argv = [*processes.python_module(__name__), "127.0.0.1", str(port), user, password]
    done = processes.run(namespace, [*argv, str(megabytes)], timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the large-message client failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def large_edit(megabytes: int) -> bytes:
    """A well-formed edit-config of about `megabytes` MB that the agent refuses once parsed."""
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
    """One NETCONF 1.0 channel: write bytes, read one ]]>]]>-framed reply."""

    def __init__(self, writer: Any, reader: Any):
        self.w, self.r, self.buf = writer, reader, bytearray()

    async def reply(self) -> bytes:
        searched = 0  # the end marker is looked for only in what is new
        while (end := self.buf.find(EOM, searched)) < 0:
            searched = max(0, len(self.buf) - len(EOM) + 1)
            data = await self.r.read(65536)
            if not data:
                raise EOFError("session closed by the agent")
            self.buf += data
        out = bytes(self.buf[:end])
        del self.buf[: end + len(EOM)]
        return out


async def open_session(conn: Any) -> Session:
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
        await asyncio.sleep(GET_PAUSE_S)


async def main(address: str, port: int, user: str, password: str, megabytes: int) -> dict:
    import asyncssh

    message = large_edit(megabytes)
    async with asyncssh.connect(
        address, port, username=user, password=password, known_hosts=None
    ) as conn:
        big, small = await open_session(conn), await open_session(conn)
        stop, sent = asyncio.Event(), []
        task = asyncio.create_task(gets(small, stop, sent))
        await asyncio.sleep(BASELINE_S)
        # a baseline of at least one answer: an agent just started on a loaded machine
        # answered its first <get> after BASELINE_S, and "before" was then empty
        waited_until = time.monotonic() + FIRST_ANSWER_S
        while not sent and not task.done() and time.monotonic() < waited_until:
            await asyncio.sleep(0.02)
        before = [latency for _, latency in sent]
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
            "median_get_latency_before": round(sorted(before)[len(before) // 2], 4)
            if before
            else 0,
            "get_latencies_before": before,
            "get_latencies_during": during,
        }


if __name__ == "__main__":
    a, p, u, pw, mb = sys.argv[1:6]
    print(json.dumps(asyncio.run(main(a, int(p), u, pw, int(mb)))))
