"""The controller gives up on an agent that stops answering (SIGSTOP by its PID) within its
endpoint timeout at every step: the RPC on the session it had open, then the connect of a
new one (the TCP connection is accepted by the kernel, the SSH banner never comes); the
error names the host, and another host's requests are answered meanwhile."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from vnet.client import Endpoint
from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.agents.realise import AgentError, Agents

from .agent_support import AgentUnderTest, running_agent

TIMEOUT = 3.0  # s: the endpoints' timeout
BOUND = TIMEOUT * 1.5  # an answer after this long waited for something besides the timeout
PROMPT = 1.5  # s: an answering agent's reply, on a loaded machine


@pytest.fixture(scope="module")
def two_agents(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[AgentUnderTest, AgentUnderTest]]:
    tmp = tmp_path_factory.mktemp("timeouts")
    with (
        running_agent(tmp / "a", frontends="netconf") as hanging,
        running_agent(tmp / "b", frontends="netconf") as answering,
    ):
        yield hanging, answering


def endpoint(agent: AgentUnderTest, host: str) -> Endpoint:
    return Endpoint(
        address=agent.address,
        port=agent.netconf_port,
        user=agent.user,
        password=agent.password,
        namespace=agent.namespace,
        timeout=TIMEOUT,
        host=host,
    )


@contextmanager
def stopped(agent: AgentUnderTest) -> Iterator[None]:
    os.kill(agent.proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(agent.proc.pid, signal.SIGCONT)


async def outcome(call: asyncio.Task[object]) -> BaseException | None:
    try:
        await call
    except Exception as err:
        return err
    return None


def test_a_stopped_agent_is_given_up_within_the_timeout_and_others_answer(
    two_agents: tuple[AgentUnderTest, AgentUnderTest],
) -> None:
    hanging, answering = two_agents

    async def run() -> list[tuple[float, BaseException | None, float]]:
        clock = asyncio.get_running_loop()
        agents = Agents(
            NetconfSouthbound({"hung": endpoint(hanging, "hung"), "up": endpoint(answering, "up")})
        )
        seen = []
        try:
            await agents.connections("hung")  # a session open before the agent stops
            with stopped(hanging):
                for _ in ("the RPC on the open session", "the connect of a new session"):
                    started = clock.time()
                    hung = asyncio.create_task(agents.connections("hung"))
                    await agents.connections("up")  # answered while "hung" waits
                    up_took = clock.time() - started
                    err = await outcome(hung)
                    seen.append((clock.time() - started, err, up_took))
        finally:
            await agents.close()
        return seen

    for step, (took, err, up_took) in zip(("RPC", "connect"), asyncio.run(run()), strict=True):
        assert isinstance(err, AgentError), f"{step}: {err!r}"
        assert err.host == "hung", err
        assert took < BOUND, f"{step}: gave up after {took:.1f} s, timeout {TIMEOUT} s: {err}"
        assert up_took < PROMPT, f"{step}: the other host answered after {up_took:.1f} s"
