"""Per-node resources in the model: parsing, limits and exact error paths (issue 14, part 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vnet.lab.topology_file import TopologyFileError, parse_topology_text
from vnet.model.resources import Resources, format_size, parse_cpu_list, parse_size

TOPO = """\
hosts: [{name: h1}]
tenants: [{name: t}]
networks: [{name: n1, tenant: t, vni: 10, ipv4: 10.0.0.0/24}]
routers:
  - name: r1
    host: h1
    interfaces: [{network: n1, ipv4: 10.0.0.1/24}]
    resources: {ROUTER}
endhosts:
  - name: e1
    host: h1
    network: n1
    ipv4: 10.0.0.2/24
    resources: {HOST}
"""


def _topo(router: str = "{cpu: 1}", host: str = "{cpu: 0.5, cpuset: '0', memory: 512MiB}"):
    return parse_topology_text(
        TOPO.replace("{ROUTER}", router).replace("{HOST}", host), Path("t.yaml")
    )


def test_a_topology_file_carries_resources_per_node() -> None:
    topo = _topo()
    assert topo.routers[0].resources == Resources(cpu=1)
    eh = topo.endhosts[0].resources
    assert eh is not None and (eh.cpu, eh.cpuset, eh.memory) == (0.5, "0", 512 * 1024**2)
    assert eh.describe() == "cpu 0.5, cpuset 0, memory 512MiB"


def test_resources_are_optional() -> None:
    topo = parse_topology_text(
        TOPO.replace("    resources: {ROUTER}\n", "").replace("    resources: {HOST}\n", ""),
        Path("t.yaml"),
    )
    assert topo.routers[0].resources is None and topo.endhosts[0].resources is None


@pytest.mark.parametrize(
    ("router", "where", "why"),
    [
        ("{cpu: 0.001}", "routers[0].resources.cpu", "greater than or equal to 0.01"),
        ("{cpu: -1}", "routers[0].resources.cpu", "greater than or equal to 0.01"),
        ("{memory: 1MiB}", "routers[0].resources.memory", "greater than or equal to 4194304"),
        ("{memory: 12 parsecs}", "routers[0].resources.memory", "unknown size unit"),
        ("{cpuset: '3-1'}", "routers[0].resources.cpuset", "ascend"),
        ("{cpuset: 'all'}", "routers[0].resources.cpuset", "not a list of CPUs"),
        ("{cpu: 2, cpuset: '0'}", "routers[0].resources", "more than the 1 CPU(s)"),
        ("{cpus: 2}", "routers[0].resources.cpus", "unknown field"),
    ],
)
def test_bad_resources_name_the_exact_place(router: str, where: str, why: str) -> None:
    with pytest.raises(TopologyFileError) as info:
        _topo(router=router)
    text = str(info.value)
    assert where in text and why in text, text
    assert "nothing was created" in text


def test_sizes_and_cpu_lists() -> None:
    assert parse_size("512MiB") == parse_size("512M") == 512 * 1024**2
    assert parse_size("1GB") == 10**9 and parse_size(4096) == 4096
    assert parse_size("1.5GiB") == 3 * 512 * 1024**2
    assert format_size(512 * 1024**2) == "512MiB" and format_size(1000) == "1000"
    assert parse_cpu_list("0, 2-3") == "0,2-3" and parse_cpu_list(1) == "1"
    for bad in ("", "1,1", "0-", "5000", True):
        with pytest.raises(ValueError):
            parse_cpu_list(bad)
    with pytest.raises(ValueError):
        parse_size(True)
