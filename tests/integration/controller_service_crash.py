"""A controller that dies between commit and confirm (`python -m
tests.integration.controller_service_crash LAB URL TMP`): its Service creates a connection
and, the moment the journal says COMMITTED (every agent holds a confirmed commit that is not
confirmed yet), kills itself with SIGKILL, as a crash would: no cleanup, no confirm."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from sqlalchemy.orm import Session

from vnet.controller.service import flows
from vnet.model.controller_api import ConnectionRequest

from .controller_service_support import ACME, Lab, make_service

_journal_committed = flows.mark_committed


def committed_then_die(session: Session, request_ids: list[str]) -> None:
    _journal_committed(session, request_ids)
    session.commit()  # COMMITTED is in the journal, as the real step leaves it
    print("committed", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


async def main(lab: Lab, url: str) -> None:
    service = make_service(lab, url)
    await service.start(background=False)
    flows.mark_committed = committed_then_die  # type: ignore[assignment]
    request = ConnectionRequest(
        name="crash",
        a="pc1",
        b="pc3",
        protocol="udp",
        dst_port=5301,
        bandwidth="5mbit",
        path=["h1", "h2", "h3"],
    )
    await service.create_connection(ACME, "acme", request)
    print("not killed", flush=True)


if __name__ == "__main__":
    name, url, tmp = sys.argv[1:4]
    asyncio.run(main(Lab(name, Path(tmp) / f"{name}.yaml", Path(tmp)), url))
