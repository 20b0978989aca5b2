"""`vnet net vr` against a lab's controller process (issue 12, part 4), on SQLite and
PostgreSQL: the example's three hosts have equal links, so the ledger decides: after a
connection holds capacity on h1-h2, a VR without a host goes to h3. It then runs there
(read with an independent NETCONF session; pc1 on h1 pings it across lan1's VXLAN).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from vnet.lab.access import agent_endpoint
from vnet.lab.probes import fping

from .agent_support import netconf_connect
from .conftest import vnet
from .world_support import SpendableLab

ROUTERS_FILTER = ("subtree", '<routers xmlns="urn:vnet:yang:vnet-router"/>')


def routers_on(name: str, host: str) -> set[str]:
    """VR names in `host`'s running configuration, read with raw ncclient."""
    ep = agent_endpoint(name, host)
    with netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password) as m:
        data = m.get_config("running", filter=ROUTERS_FILTER).data_ele
    return {
        el.text or ""
        for router in data.iter("{urn:vnet:yang:vnet-router}router")
        for el in router.findall("{urn:vnet:yang:vnet-router}name")
    }


@pytest.fixture
def lab(controller_example_labs: SpendableLab) -> Iterator[tuple[str, Path]]:
    """The session's lab of examples/controller.yaml on each database (test_lab_controller.py
    borrows the same), spent afterwards: the test's VR stays (no API removes a VR)."""
    yield controller_example_labs.borrow()
    controller_example_labs.spend()


def test_vr_placed_by_the_ledger_through_the_cli(lab: tuple[str, Path]) -> None:
    name, _ = lab
    vnet("conn", "request", "hold", "pc1", "pc2", "--bandwidth", "30mbit", "--lab", name)
    try:
        made = vnet(
            "net", "vr", "rx", "--interface", "lan1=10.50.1.50/24", "--lab", name, "--json",
            timeout=60,
        )  # fmt: skip
        view = json.loads(made.stdout)
        assert (view["host"], view["tenant"], view["networks"]) == ("h3", "acme", ["lan1"])
        assert "rx" in routers_on(name, "h3")
        assert "rx" not in routers_on(name, "h1") | routers_on(name, "h2")
        listed = json.loads(vnet("net", "list", "--lab", name, "--json").stdout)
        assert "lan1" in {n["name"] for n in listed}
        assert fping(f"vnet-{name}-pc1", "10.50.1.50", count=3, timeout_ms=1000).received > 0
        again = vnet(
            "net", "vr", "rx", "--interface", "lan1=10.50.1.51/24", "--lab", name, check=False,
        )  # fmt: skip
        assert again.returncode == 1 and "'rx' is used by a VR" in again.stderr, again.stderr
    finally:  # the VR goes with the lab (spent)
        vnet("conn", "release", "hold", "--lab", name, check=False)
