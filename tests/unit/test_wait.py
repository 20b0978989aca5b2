"""The one bounded poll: returns the first truthy answer, gives up on time or on request."""

import asyncio
import time

import pytest

from vnet.tools.wait import WaitTimeout, wait_until, wait_until_async


def test_returns_the_first_truthy_answer() -> None:
    answers = iter([0, None, "", 7, 8])
    assert wait_until(lambda: next(answers), timeout=1, what="a number", interval=0) == 7


def test_times_out_with_what_and_the_last_answer() -> None:
    start = time.monotonic()
    with pytest.raises(WaitTimeout, match=r"the port: not within 0.05 s \(last seen: \[\]\)"):
        wait_until(lambda: [], timeout=0.05, what="the port", interval=0.01)
    assert time.monotonic() - start < 1


def test_give_up_ends_the_wait_at_once_with_its_reason() -> None:
    with pytest.raises(WaitTimeout, match="agent ready: exited with 1"):
        wait_until(lambda: False, timeout=30, what="agent ready", give_up=lambda: "exited with 1")


def test_tries_once_more_at_the_deadline() -> None:
    calls = []

    def slow() -> bool:
        calls.append(1)
        time.sleep(0.03)
        return len(calls) >= 2

    assert wait_until(slow, timeout=0.01, what="slow", interval=0) is True


def test_the_async_wait_returns_the_answer_or_times_out() -> None:
    answers = iter([0, None, 7])
    assert asyncio.run(wait_until_async(lambda: next(answers), 1, "a number", 0)) == 7
    with pytest.raises(WaitTimeout, match=r"the server: not within 0\.05 s"):
        asyncio.run(wait_until_async(lambda: False, 0.05, "the server", 0.01))
