"""Topology files: examples load; errors point at file:line:column."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from vnet.lab.topology_file import TopologyFileError, load_topology, parse_topology_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_two_tenants_example() -> None:
    topo = load_topology(EXAMPLES / "two-tenants.yaml")
    assert {n.tenant for n in topo.networks} == {"red", "blue"}
    assert len(topo.hosts) == 2


def test_em_testbed_has_the_papers_path() -> None:
    """Paper 001 Fig. 7/8: R1 -> MR1 -> MR5 -> MR12 -> MR7 -> MR2 -> R2, hop by hop adjacent."""
    topo = load_topology(EXAMPLES / "em-testbed.yaml")
    path = ["R1", "MR1", "MR5", "MR12", "MR7", "MR2", "R2"]
    nets = {r.name: {i.network for i in r.interfaces} for r in topo.routers}
    for a, b in itertools.pairwise(path):
        assert nets[a] & nets[b], f"{a} and {b} share no network"
    tenants = {n.tenant for n in topo.networks}
    assert tenants == {"alpha", "beta"}
    assert {r.host for r in topo.routers if r.name.startswith("MR")} == {"mininet"}


BAD = """\
name: t
hosts:
  - name: h1
networks:
  - {name: n1, tenant: a, vni: 10, ipv4: 10.0.0.0/24}
routers:
  - name: r1
    host: h1
    interfaces:
      - {network: n1, ipv4: 10.0.9.1/24}
"""


def test_error_points_at_the_line() -> None:
    with pytest.raises(TopologyFileError) as info:
        parse_topology_text(BAD, Path("bad.yaml"))
    (line,) = info.value.lines
    assert line.startswith("bad.yaml:10:")
    assert "routers[0].interfaces[0].ipv4" in line and "outside" in line
    assert "nothing was created" in str(info.value)


def test_yaml_syntax_error_has_a_position() -> None:
    with pytest.raises(TopologyFileError) as info:
        parse_topology_text("hosts:\n  - name: [h1\n", Path("x.yaml"))
    assert info.value.lines[0].startswith("x.yaml:")
    assert "not valid YAML" in info.value.lines[0]


def test_missing_file() -> None:
    with pytest.raises(TopologyFileError, match="cannot read"):
        load_topology("/nonexistent/topology.yaml")


def test_top_level_must_be_a_mapping() -> None:
    with pytest.raises(TopologyFileError, match="expected a mapping"):
        parse_topology_text("- a\n- b\n", Path("list.yaml"))


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff", "x.yaml:1:1: not UTF-8"),
        (b"name: t\nhosts: caf\xe9\n", "x.yaml:2:11: not UTF-8"),
        (b"name: a\x00b\n", "not valid YAML"),
    ],
)
def test_binary_or_non_utf8_file_is_one_clear_problem(
    tmp_path: Path, content: bytes, expect: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(content)
    with pytest.raises(TopologyFileError) as info:
        load_topology(path)
    (line,) = info.value.lines
    assert line.startswith(str(path)) and expect.split("x.yaml")[-1] in line, line
