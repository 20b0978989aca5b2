"""A create when every connection number is held by a live connection is refused with 409
numbers-exhausted and changes nothing (it was an unhandled exception: a 500). The limit is
made small for the test; the service and its database are real, the hosts in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controller_memory_support import ACME, database_state, voice, world
from vnet.controller.db import numbers
from vnet.controller.errors import Rejected
from vnet.controller.service.core import Service


def test_a_create_beyond_the_last_number_is_refused_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(numbers, "NUMBER_MAX", 2)
    w = world(tmp_path, check_yang=False)

    async def scenario(svc: Service) -> None:
        for port in (6000, 6001):
            await svc.create_connection(ACME, "acme", voice(f"c{port}", port, "1mbit"))
        before = database_state(w.url)
        with pytest.raises(Rejected) as refused:
            await svc.create_connection(ACME, "acme", voice("c6002", 6002, "1mbit"))
        assert (refused.value.status, refused.value.code) == (409, "numbers-exhausted")
        assert "all 2 connection numbers are in use" in str(refused.value)
        assert database_state(w.url) == before

    w.run(scenario)
