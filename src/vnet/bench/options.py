"""Parsing the comma-separated lists benchmarks take as options; OptionError names the flag."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from vnet.bench.contract import OptionError


def parse_list(text: str, convert: Callable[[str], Any], what: str, flag: str) -> list[Any]:
    try:
        values = [convert(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError as err:
        raise OptionError(flag, f"not a comma-separated list of {what}: {text!r}") from err
    if not values:
        raise OptionError(flag, f"no {what} given")
    return values


def parse_kinds(text: str, known: Sequence[str], flag: str = "--kinds") -> list[str]:
    kinds = parse_list(text, str, "path kinds", flag)
    unknown = [k for k in kinds if k not in known]
    if unknown:
        raise OptionError(flag, f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return kinds
