"""Topology files are bounded inputs: size, aliases, nesting, echoed values (issue 17 #4)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from vnet.lab import topology_file
from vnet.lab.topology_file import TopologyFileError, load_topology


def _one_line_error(path: Path) -> str:
    with pytest.raises(TopologyFileError) as info:
        load_topology(path)
    assert len(info.value.lines) == 1, info.value.lines
    return info.value.lines[0]


def test_an_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    start = time.monotonic()
    line = _one_line_error(path)
    assert time.monotonic() - start < 5
    assert line == f"{path}:2:10: not valid YAML: aliases (*name) are not allowed in topology files"


TOO_DEEP = f"nested more than {topology_file.MAX_NESTING} levels deep: too deep to be a topology"


def test_deep_nesting_is_refused_quickly_where_it_gets_too_deep(tmp_path: Path) -> None:
    """100k brackets: refused at the 64th level (the root mapping is the first), not
    parsed for 20 s into a RecursionError."""
    path = tmp_path / "deep.yaml"
    path.write_text("name: " + "[" * 100_000 + "]" * 100_000 + "\n")
    start = time.monotonic()
    line = _one_line_error(path)
    assert time.monotonic() - start < 5
    assert line == f"{path}:1:{len('name: ') + 63 + 1}: {TOO_DEEP}"


def test_deep_block_nesting_is_refused_where_it_gets_too_deep(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("".join("  " * i + f"k{i}:\n" for i in range(3000)) + "  " * 3000 + "x\n")
    assert _one_line_error(path).startswith(f"{path}:65:")
    assert _one_line_error(path).endswith(TOO_DEEP)


def test_nesting_just_below_the_limit_is_parsed(tmp_path: Path) -> None:
    """63 levels (the root and 62 brackets) are read: the file fails on its meaning."""
    path = tmp_path / "deep.yaml"
    path.write_text("name: " + "[" * 62 + "]" * 62 + "\n")
    assert _one_line_error(path) == f"{path}:1:1: name: Input should be a valid string"


def test_a_file_over_the_size_limit_is_refused_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(topology_file, "MAX_TOPOLOGY_BYTES", 1000)
    path = tmp_path / "big.yaml"
    path.write_text("name: " + "x" * 2000 + "\n")
    assert _one_line_error(path) == (f"{path}: larger than the limit of 1000 bytes for a topology")


def test_a_long_value_is_quoted_by_a_short_prefix_only(tmp_path: Path) -> None:
    path = tmp_path / "name.yaml"
    path.write_text("name: " + "x" * 1_000_000 + "\n")
    line = _one_line_error(path)
    assert len(line) < 400, len(line)
    assert "1000000 characters" in line
