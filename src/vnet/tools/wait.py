"""One bounded poll for everything that waits for a condition (FRR topotests' run_and_expect),
and one bounded retry with backoff for an attempt that may be refused for a while."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """`what` did not happen within the time allowed; `last` is the predicate's last answer."""

    def __init__(self, what: str, timeout: float, last: object = None):
        self.what = what
        self.timeout = timeout
        self.last = last
        detail = f" (last seen: {last!r})" if last not in (None, False) else ""
        super().__init__(f"{what}: not within {timeout:g} s{detail}")


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.02,
    give_up: Callable[[], str | None] | None = None,
) -> T:
    """Call `predicate` until it returns something truthy and return that; at most `timeout` s.

    `give_up` is asked between tries and ends the wait at once with its reason (say,
    the process that should become ready has exited). The predicate is always tried
    once more at the deadline, so a slow machine does not lose a last-moment success.
    """
    polls = _polls(predicate, timeout, what, interval, give_up)
    while True:
        try:
            pause = next(polls)
        except StopIteration as done:
            answer: T = done.value  # the generator's return value
            return answer
        time.sleep(pause)


async def wait_until_async(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    interval: float = 0.02,
    give_up: Callable[[], str | None] | None = None,
) -> T:
    """wait_until for a coroutine: it sleeps with asyncio, so the event loop keeps serving."""
    polls = _polls(predicate, timeout, what, interval, give_up)
    while True:
        try:
            pause = next(polls)
        except StopIteration as done:
            answer: T = done.value  # the generator's return value
            return answer
        await asyncio.sleep(pause)


def _polls(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    interval: float,
    give_up: Callable[[], str | None] | None,
) -> Generator[float, None, T]:
    """The one poll loop: yields how long to pause before the next try, returns the answer."""
    deadline = time.monotonic() + timeout
    while True:
        late = time.monotonic() >= deadline
        result = predicate()
        if result:
            return result
        if give_up is not None and (reason := give_up()):
            raise WaitTimeout(f"{what}: {reason}", timeout, result)
        if late:
            raise WaitTimeout(what, timeout, result)
        yield max(0.0, min(interval, deadline - time.monotonic()))


FIRST_BACKOFF, MAX_BACKOFF = 0.005, 0.25  # seconds


async def retry_until(
    attempt: Callable[[], Awaitable[T]],
    deadline: float,
    retry: Callable[[Exception], bool],
    first: float = FIRST_BACKOFF,
    most: float = MAX_BACKOFF,
) -> T:
    """`await attempt()` until it returns, and return that. An exception that `retry`
    accepts is tried again after a pause that starts at `first` seconds and doubles up to
    `most`, with jitter (competitors part ways), while time.monotonic() is before
    `deadline`; any other exception, or one raised after the deadline, goes up."""
    delay = first
    while True:
        try:
            return await attempt()
        except Exception as err:
            if not retry(err) or time.monotonic() > deadline:
                raise
        await asyncio.sleep(delay * random.uniform(0.5, 1.5))
        delay = min(delay * 2, most)
