"""Ingress pieces that claim the same packets on one VR are found through an index
(host_guarantees_check._Claims), with the answer the definition gives: two claims overlap
when protocol, source port and destination port are each equal or open on one side."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from vnet.model.host_guarantees_check import _Claims

Fields = tuple[str | None, int | None, int | None]
fields = st.tuples(
    st.sampled_from([None, "udp", "tcp"]),
    st.sampled_from([None, 1000, 1001]),
    st.sampled_from([None, 5000, 5001, 5002]),
)


def overlaps(a: Fields, b: Fields) -> bool:
    return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def by_definition(claims: list[Fields]) -> list[str | None]:
    """What each claim in turn answers: the first earlier accepted claim it overlaps."""
    made: list[tuple[Fields, str]] = []
    out: list[str | None] = []
    for k, mine in enumerate(claims):
        owner = next((name for theirs, name in made if overlaps(mine, theirs)), None)
        out.append(owner)
        if owner is None:
            made.append((mine, f"c{k}"))
    return out


@given(st.lists(fields, max_size=30))
def test_the_index_answers_as_the_definition(claims: list[Fields]) -> None:
    index = _Claims()
    assert [index.claim(c, f"c{k}") for k, c in enumerate(claims)] == by_definition(claims)


def test_claims_between_the_same_ends_cost_the_same_with_many_made() -> None:
    """20,000 connections between two addresses, one port each: checked in well under a
    second (a scan of every earlier claim took minutes at this size)."""
    index = _Claims()
    began = time.process_time()
    for port in range(20_000):
        assert index.claim(("udp", None, port), f"c{port}") is None
    assert index.claim((None, None, 7), "late") == "c7"
    assert time.process_time() - began < 2.0
