"""Every protocol front-end the agent lists loads and has an async start()."""

from __future__ import annotations

import inspect

import pytest

from vnet.agent.frontends import FRONTENDS, starter


@pytest.mark.parametrize("name", sorted(FRONTENDS))
def test_every_listed_frontend_loads(name: str) -> None:
    start = starter(name)
    assert inspect.iscoroutinefunction(start)
    assert len(inspect.signature(start).parameters) == 2  # (datastore, config)
