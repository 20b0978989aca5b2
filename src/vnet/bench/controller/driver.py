"""Sending the requests: `concurrency` in flight over HTTP, as the controller's applications do.

The controller listens in the lab's management namespace, so every socket is opened from
a thread that entered it (setns changes the calling thread only); asyncio and httpx keep
up to `concurrency` requests in flight from that one thread (a closed loop: the next
request leaves when one is answered). The client's clock (perf_counter) spans sending the
request to reading the whole answer; the controller's `Server-Timing` header splits it.
The reads between runs go through vnet.client's ControllerClient.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from vnet.bench.controller.schedule import Create, Modify, Request
from vnet.bench.controller.timing import ServerTimingError, Split, split
from vnet.client.controller import ControllerClient, tls_verify
from vnet.model.controller_api import API_PREFIX, IDEMPOTENCY_HEADER
from vnet.tools.netns import entered

T = TypeVar("T")
TIMEOUT = 120.0  # seconds for one answer; 100 requests in line on a busy machine take long
REFUSED = 409  # no capacity: a valid answer ("rejected, and why"), not an error


@dataclass(frozen=True)
class Access:
    """How to reach one running controller."""

    url: str  # e.g. https://172.30.0.253:8480
    token: str  # the provider administrator's token
    namespace: str | None  # where to connect from
    verify: bool | str = True  # the controller's certificate (a file), or the system's CAs
    lab: str = ""  # the lab it runs in (its faults are injected by this name)

    def client(self) -> ControllerClient:
        """A synchronous client for the reads between runs (links, end hosts, connections)."""
        return ControllerClient(
            self.url, self.token, namespace=self.namespace, timeout=TIMEOUT, verify=self.verify
        )


@dataclass(frozen=True)
class Answer:
    name: str  # the connection the request was about
    sent: float  # perf_counter when it left
    done: float  # perf_counter when the answer (or the failure) was in
    status: int  # HTTP status; 0 when no answer came
    split: Split | None  # None unless answered with success
    error: str | None = None

    @property
    def end_to_end_ms(self) -> float | None:
        return None if self.split is None else self.split.end_to_end


def in_namespace(namespace: str | None, work: Callable[[], Awaitable[T]]) -> T:
    """Run `work()` to completion on a new event loop in a thread inside `namespace`."""
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            with entered(namespace):
                outcome["value"] = asyncio.run(work())  # type: ignore[arg-type]
        except BaseException as err:  # handed to the caller's thread below
            outcome["error"] = err

    thread = threading.Thread(target=body, name="bench-controller-client")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


def _client(access: Access, concurrency: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(
        base_url=access.url + API_PREFIX,
        headers={"Authorization": f"Bearer {access.token}"},
        limits=limits,
        timeout=TIMEOUT,
        verify=tls_verify(access.verify),
    )


def _send(client: httpx.AsyncClient, request: Request) -> Awaitable[httpx.Response]:
    where = f"/tenants/{request.tenant}/connections"
    if isinstance(request, Create):
        body = request.body.model_dump(mode="json", exclude_none=True)
        return client.post(where, json=body, headers={IDEMPOTENCY_HEADER: request.key})
    if isinstance(request, Modify):
        body = request.body.model_dump(mode="json", exclude_none=True)
        return client.patch(f"{where}/{request.name}", json=body)
    return client.delete(f"{where}/{request.name}")


async def _one(client: httpx.AsyncClient, request: Request) -> Answer:
    name = request.body.name if isinstance(request, Create) else request.name
    sent = time.perf_counter()
    try:
        response = await _send(client, request)
    except httpx.HTTPError as err:
        return Answer(name, sent, time.perf_counter(), 0, None, f"{type(err).__name__}: {err}")
    done = time.perf_counter()
    status = response.status_code
    if not response.is_success:
        return Answer(name, sent, done, status, None, " ".join(response.text.split())[:300])
    try:
        timing = split(response.headers.get("server-timing"), (done - sent) * 1000)
    except ServerTimingError as err:
        return Answer(name, sent, done, status, None, str(err))
    return Answer(name, sent, done, status, timing)


async def _drive(access: Access, requests: Sequence[Request], concurrency: int) -> list[Answer]:
    queue = list(reversed(requests))
    answers: list[Answer] = []

    async def worker(client: httpx.AsyncClient) -> None:
        while queue:
            answers.append(await _one(client, queue.pop()))

    async with _client(access, concurrency) as client:
        await asyncio.gather(*(worker(client) for _ in range(min(concurrency, len(requests)))))
    return answers


def drive(access: Access, requests: Sequence[Request], concurrency: int) -> list[Answer]:
    """Every request answered (or failed), with `concurrency` in flight."""
    return in_namespace(access.namespace, lambda: _drive(access, requests, concurrency))


def span(answers: Sequence[Answer]) -> float:
    """Seconds from the first request sent to the last answer in."""
    return max(a.done for a in answers) - min(a.sent for a in answers)
