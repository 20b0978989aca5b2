"""The one bounded poll: returns the first truthy answer, gives up on time or on request."""

import asyncio
import time

import pytest

from vnet.tools.periodic import Periodic
from vnet.tools.wait import WaitTimeout, retry_until, wait_until, wait_until_async


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


class Busy(Exception):
    pass


def test_retry_until_tries_again_what_it_is_told_to_and_nothing_else() -> None:
    answers: list[BaseException | str] = [Busy(), Busy(), "locked"]

    async def attempt() -> str:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def busy(err: Exception) -> bool:
        return isinstance(err, Busy)

    deadline = time.monotonic() + 5
    assert asyncio.run(retry_until(attempt, deadline, busy, first=0.001)) == "locked"
    answers[:] = [Busy(), ValueError("refused")]
    with pytest.raises(ValueError, match="refused"):  # not to be tried again: at once
        asyncio.run(retry_until(attempt, deadline, busy, first=0.001))


def test_retry_until_gives_up_after_the_deadline_with_the_last_error() -> None:
    tries = []

    async def attempt() -> None:
        tries.append(time.monotonic())
        raise Busy(len(tries))

    start = time.monotonic()
    with pytest.raises(Busy):
        asyncio.run(retry_until(attempt, start + 0.1, lambda e: True, first=0.01, most=0.02))
    # tried again and again, the last time after the deadline; pauses of at most ~`most`
    assert tries[-1] - start >= 0.1 and len(tries) >= 3


def test_a_periodic_round_that_raises_does_not_end_the_task() -> None:
    async def scenario() -> list[int]:
        rounds: list[int] = []
        enough = asyncio.Event()

        async def work() -> None:
            rounds.append(len(rounds))
            if len(rounds) >= 3:
                enough.set()
            raise RuntimeError("a round failed")

        periodic = Periodic(work, 0.001, "test-periodic", at_start=True)
        periodic.start()
        try:
            await asyncio.wait_for(enough.wait(), timeout=5)
        finally:
            await periodic.stop()
        return rounds

    assert asyncio.run(scenario())[:3] == [0, 1, 2]
