"""The guard of the integration tests' shared labs (tests/integration/world_support.py): what
it counts as a leak, without a lab (the agents' answers are given as text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from tests.integration.world_support import RunningGuard

NS = "urn:vnet:yang:vnet-router"
BASE = f'<data><routers xmlns="{NS}"><router><name>r1</name></router></routers>{{srv6}}</data>'
LOCATOR = f'<srv6 xmlns="{NS}"><locator><prefix>fc00:1:1::/48</prefix></locator></srv6>'
LEFT = (
    f'<srv6 xmlns="{NS}"><locator><prefix>fc00:1:1::/48</prefix></locator>'
    "<connection><name>vc7</name></connection></srv6>"
)


@dataclass
class FakeLab:
    """Each host answers get-config with the text in `running`."""

    name: str = "t0"
    hosts: tuple[str, ...] = ("h1", "h2")
    running: dict[str, str] = field(default_factory=dict)

    def connect(self, host: str) -> Any:
        lab = self

        class Session:
            def __enter__(self) -> Session:
                return self

            def __exit__(self, *exc: object) -> None:
                return None

            def get_config(self, source: str) -> SimpleNamespace:
                return SimpleNamespace(data_xml=lab.running[host])

        return Session()


def lab_with(**srv6: str) -> FakeLab:
    return FakeLab(running={h: BASE.format(srv6=srv6.get(h, "")) for h in ("h1", "h2")})


def test_a_lab_as_found_passes_and_a_locator_left_is_not_a_leak() -> None:
    lab = lab_with()
    guard = RunningGuard(lab)
    before = guard.running()
    guard.check(before, "test a")
    lab.running["h1"] = BASE.format(srv6=LOCATOR)  # the controller never removes a locator
    guard.check(before, "test b")


def test_a_connection_left_fails_the_test_naming_host_and_entry() -> None:
    lab = lab_with()
    guard = RunningGuard(lab)
    before = guard.running()
    lab.running["h2"] = BASE.format(srv6=LEFT)
    with pytest.raises(AssertionError, match=r"test c left the shared lab t0 changed on h2") as e:
        guard.check(before, "test c")
    assert "+      <name>vc7</name>" in str(e.value)


def test_cleaning_another_tests_leftovers_is_allowed_adding_is_not() -> None:
    lab = lab_with()
    guard = RunningGuard(lab)  # pristine: as the session built it
    lab.running["h1"] = BASE.format(srv6=LEFT)  # an earlier test failed and left vc7
    before = guard.running()
    lab.running["h1"] = BASE.format(srv6="")  # this one's reconciliation removed it
    guard.check(before, "test d")
    lab.running["h2"] = BASE.format(srv6=LEFT)
    with pytest.raises(AssertionError, match="test e left the shared lab t0 changed on h1, h2"):
        guard.check(before, "test e")
