"""Names the kernel or SNMP cannot carry are refused by the model, at their exact place.

Issue 17, finding 5: `lo` failed only in the kernel, and a name with a zero-width
space was created and then broke every SNMP walk crossing its row.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vnet.model import TopologyError, build_topology
from vnet.model.names import ifname_problem, lab_name_problem, node_name_problem

from .test_model import BASE


def _problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(TopologyError) as info:
        build_topology(data)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    "name",
    [
        "lo",
        "all",
        "default",
        "sit0",
        "eth\u200b1",  # zero-width space: looks like eth1, is not ASCII
        "\u00e9th0",
        "eth 1",
        "eth\t1",
        "eth1\n",
        "eth%d",
        "a/b",
        "a:b",
        "..",
        "x" * 16,
    ],
)
def test_interface_names_the_kernel_or_snmp_cannot_carry_are_refused(name: str) -> None:
    assert ifname_problem(name) is not None
    data = copy.deepcopy(BASE)
    data["routers"][0]["interfaces"][1]["name"] = name
    lines = _problems(data)
    assert len(lines) == 1, lines
    assert lines[0].startswith("routers[0].interfaces[1].name (router 'r1'): interface name")


@pytest.mark.parametrize("name", ["eth9", "wan-1", "x" * 15, "up_link.7", "lo0", "lo1"])
def test_ordinary_interface_names_are_accepted(name: str) -> None:
    assert ifname_problem(name) is None
    data = copy.deepcopy(BASE)
    data["routers"][0]["interfaces"][1]["name"] = name
    build_topology(data)


@pytest.mark.parametrize("name", ["r1\n", "r\u200b1", "r\u00e91", "r 1"])
def test_node_names_that_become_kernel_names_are_ascii_without_a_trailing_newline(
    name: str,
) -> None:
    assert node_name_problem(name) is not None
    data = copy.deepcopy(BASE)
    data["routers"][0]["name"] = name
    assert any(line.startswith("routers[0].name:") for line in _problems(data))


@pytest.mark.parametrize("name", ["lab\n", "l\u00e4b"])
def test_lab_names_are_ascii_without_a_trailing_newline(name: str) -> None:
    assert lab_name_problem(name) is not None


def test_network_names_may_not_end_in_a_newline() -> None:
    data = copy.deepcopy(BASE)
    data["networks"][1]["name"] = "n2\n"
    for r in data["routers"]:
        r["interfaces"][1]["network"] = "n2\n"
    assert any(line.startswith("networks[1].name") for line in _problems(data))
