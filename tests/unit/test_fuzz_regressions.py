"""Inputs the fuzzers (tests/fuzz) found crashing, kept as regression tests (issue 17)."""

from __future__ import annotations

import pytest

from vnet.model import TopologyError, build_topology


@pytest.mark.parametrize("rate", [[], {}, float("inf"), float("nan")])
def test_a_bandwidth_that_is_no_rate_is_a_located_problem(rate: object) -> None:
    """Found by test_model_fuzz: {'networks': [{'bandwidth': []}]} raised a TypeError."""
    with pytest.raises(TopologyError) as err:
        build_topology({"networks": [{"bandwidth": rate}]})
    assert ("networks", 0, "bandwidth") in [p.loc for p in err.value.problems]
