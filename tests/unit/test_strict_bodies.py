"""The one strict reader of request bodies (vnet.model.strict), the rate parser's whole
numbers and ASCII digits, and tenant names: the rules both the controller's API and the
agent's RESTCONF rely on."""

from __future__ import annotations

import copy

import pytest

from tests.unit.test_model import BASE
from vnet.model import TopologyError, build_topology, strict
from vnet.model.errors import format_loc
from vnet.model.names import tenant_name_problem
from vnet.model.rate import RATE_MAX, parse_rate

ARABIC_INDIC_123 = "\u0661\u0662\u0663"
FULL_WIDTH_12 = "\uff11\uff12"


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_xml(depth: int) -> bytes:
    return (b"<a>" * depth) + (b"</a>" * depth)


# -- JSON ----------------------------------------------------------------------------------
def test_json_within_the_bounds_reads_as_json() -> None:
    text = '{"a": [1, -2, 3.5, "x", true, null], "b": {"c": 18446744073709551615}}'
    assert strict.parse_json(text) == {
        "a": [1, -2, 3.5, "x", True, None],
        "b": {"c": 2**64 - 1},
    }
    # whole numbers spelled with a fraction or exponent are integers, as in JSON Schema
    whole = strict.parse_json("[14326.0, 1e3, -2.50e1, 0.5]")
    assert whole == [14326, 1000, -25, 0.5]
    assert [type(n) for n in whole] == [int, int, int, float]
    assert strict.parse_json(deep_json(strict.MAX_DEPTH)) is not None


@pytest.mark.parametrize(
    ("text", "reason", "field"),
    [
        ('{"name": "a", "name": "b"}', "given twice", "name"),
        ('{"x": {"vni": 1, "vni": 1}}', "given twice", "vni"),
        ('{"vni": ' + "9" * 5000 + "}", "5000 digits", None),
        ('{"vni": 1' + "0" * 30 + "}", "31 digits", None),
        ('{"rate": 1.' + "5" * 100 + "}", "digits", None),
        ('{"rate": 1e999}', "too large", None),
        ('{"rate": 1e30}', "too large", None),
        ('{"rate": NaN}', "NaN is not a JSON number", None),
        ('{"rate": -Infinity}', "Infinity is not a JSON number", None),
        (deep_json(strict.MAX_DEPTH + 1), f"more than {strict.MAX_DEPTH} deep", None),
        (deep_json(100_000), f"more than {strict.MAX_DEPTH} deep", None),
        ('{"a": 1', "not valid JSON", None),
    ],
)
def test_json_outside_the_bounds_is_refused_precisely(
    text: str, reason: str, field: str | None
) -> None:
    with pytest.raises(strict.BodyError) as refused:
        strict.parse_json(text.encode())
    assert reason in refused.value.reason
    assert refused.value.field == field


def test_json_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(strict.BodyError, match="not UTF-8"):
        strict.parse_json(b'{"a": "\xff"}')


# -- integers written as text --------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [("42", 42), (" -7 ", -7), ("+3", 3), ("0", 0)])
def test_integer_text_in_ascii_digits(text: str, value: int) -> None:
    assert strict.integer_text(text) == value


@pytest.mark.parametrize(
    "text", [ARABIC_INDIC_123, FULL_WIDTH_12, "1_000", "1.5", "", "0x10", "9" * 5000]
)
def test_integer_text_refuses_other_digits_and_sizes(text: str) -> None:
    with pytest.raises(strict.BodyError):
        strict.integer_text(text, field="vni")


# -- XML ------------------------------------------------------------------------------------
def test_xml_within_the_bounds() -> None:
    assert strict.parse_xml(deep_xml(strict.MAX_DEPTH)).tag == "a"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (deep_xml(strict.MAX_DEPTH + 1), f"more than {strict.MAX_DEPTH} deep"),
        (deep_xml(100_000), "not well-formed"),  # libxml2's own limit comes first
        (b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>', "document type declaration"),
        ('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE a><a/>'.encode("utf-16"), "document"),
        (b"<a><b></a>", "not well-formed"),
    ],
)
def test_xml_outside_the_bounds_is_refused(body: bytes, reason: str) -> None:
    with pytest.raises(strict.BodyError) as refused:
        strict.parse_xml(body)
    assert reason in refused.value.reason


# -- rates -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "bits"),
    [("1.5gbit", 1_500_000_000), ("0.1mbit", 100_000), (3.0, 3), (RATE_MAX, RATE_MAX)],
)
def test_rates_are_exact_whole_numbers(value: object, bits: int) -> None:
    assert parse_rate(value) == bits  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (1.5, "whole number"),
        ("1.5", "whole number"),
        ("0.5bit", "whole number"),
        (f"{ARABIC_INDIC_123}mbit", "not a rate"),
        (FULL_WIDTH_12, "not a rate"),
        (10**30, "above the largest"),
        (1e30, "above the largest"),
        pytest.param(10**5000, "above the largest", id="5000-digit-int"),
        ("1" * 100, "not a rate"),
    ],
)
def test_rates_that_are_not_whole_ascii_bounded_numbers_are_refused(
    value: object, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_rate(value)  # type: ignore[arg-type]


# -- tenant names ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["acme", "beta-2", "T_1", "a" * 32])
def test_tenant_names_like_networks(name: str) -> None:
    assert tenant_name_problem(name) is None


@pytest.mark.parametrize(
    "name", ["<b>x</b>", "a/../acme", "\U0001f600", "1acme", "", "a b", "a" * 33, "acme\n"]
)
def test_tenant_names_outside_the_rule(name: str) -> None:
    assert tenant_name_problem(name) is not None


def test_a_lab_file_tenant_outside_the_rule_is_refused_at_its_place() -> None:
    data = copy.deepcopy(BASE)
    data["tenants"] = [{"name": "a"}, {"name": "a/../b"}]
    with pytest.raises(TopologyError) as refused:
        build_topology(data)
    assert [format_loc(p.loc) for p in refused.value.problems] == ["tenants[1].name"]
