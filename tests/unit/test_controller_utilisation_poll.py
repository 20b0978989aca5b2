"""The utilisation poller works out each host's underlay interfaces once, not on every
poll (per poll it went over every link for every host: hosts x links each second), and its
rates still come from the counters' growth per link direction."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from vnet.controller.service import utilisation

LINKS = {"h1-h2": ("h1", "h2"), "h2-h3": ("h2", "h3"), "h1-h3": ("h1", "h3")}


class Counting:
    """Each host's class counters, growing by 1000 bytes on every interface per poll."""

    def __init__(self) -> None:
        self.polls = 0

    async def class_bytes(self, host: str) -> dict[tuple[str, str], int]:
        peers = {b if a == host else a for a, b in LINKS.values() if host in (a, b)}
        return {(f"ul-{p}", "tenant"): 1000 * self.polls for p in sorted(peers)}


def test_a_poll_goes_over_no_link_list_and_measures_every_direction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agents = Counting()
    poller = utilisation.UtilisationPoller(agents, LINKS, 1.0)  # type: ignore[arg-type]
    calls: list[Any] = []
    real = utilisation.arcs_of
    monkeypatch.setattr(utilisation, "arcs_of", lambda *a: calls.append(a) or real(*a))

    async def polls() -> None:
        for _ in range(3):
            await poller.poll()
            agents.polls += 1

    asyncio.run(polls())
    assert calls == []
    directions = {(name, fwd) for name in LINKS for fwd in (True, False)}
    assert set(poller.rates) == directions
    assert all(rate > 0 for rate in poller.rates.values())
