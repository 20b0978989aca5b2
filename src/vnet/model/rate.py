"""Bandwidth values as people write them ("100mbit", "1.5gbit", "2G") and as bits/s."""

from __future__ import annotations

import math
import re
from decimal import Decimal

# tc's units (man tc: bit, kbit, mbit, gbit, tbit), plus "bps"-style
# spellings that people type by habit: both mean bits per second here.
_UNITS = {
    "": 1,
    "bit": 1,
    "bps": 1,
    "k": 1_000,
    "kbit": 1_000,
    "kbps": 1_000,
    "m": 1_000_000,
    "mbit": 1_000_000,
    "mbps": 1_000_000,
    "g": 1_000_000_000,
    "gbit": 1_000_000_000,
    "gbps": 1_000_000_000,
    "t": 1_000_000_000_000,
    "tbit": 1_000_000_000_000,
}
# ASCII digits only (re.ASCII): `\d` and float() also read '١٠٠' and '１００' as 100
_RATE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$", re.ASCII)
_MAX_RATE_TEXT = 64  # characters: no rate is longer, and Decimal reads 10**6 digits slowly
RATE_MAX = 2**64 - 1  # bit/s: the YANG module's `rate` (uint64)


def parse_rate(value: str | int | float) -> int:
    """Bits per second from a rate like "100mbit"; raise ValueError with the reason.

    A rate is a whole number of bit/s: 1.5 (bit/s) is refused rather than cut to 1, while
    "1.5gbit" is exactly 1 500 000 000 (read as a decimal, not a binary float)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        # a list, a mapping, null... from a file: a located problem, not a TypeError
        raise ValueError("a rate must be a number or a string like '100mbit'")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"a rate must be a finite number, got {value!r}")
    if isinstance(value, int):
        bits = Decimal(value)
    elif isinstance(value, float):
        bits = Decimal(repr(value))
    else:
        bits = _rate_text(value)
    if bits != bits.to_integral_value():
        raise ValueError(f"{value!r} is not a whole number of bit/s")
    if bits <= 0:
        raise ValueError(f"a rate must be positive, got {value!r}")
    if bits > RATE_MAX:
        # not echoed: a 5000-digit int has no repr (Python's 4300-digit limit)
        raise ValueError(f"the rate is above the largest, {RATE_MAX} bit/s (64 bits)")
    return int(bits)


def _rate_text(value: str) -> Decimal:
    m = _RATE_RE.match(value) if len(value) <= _MAX_RATE_TEXT else None
    if not m:
        raise ValueError(
            f"{value[:_MAX_RATE_TEXT]!r} is not a rate; write e.g. '100mbit' or '1gbit'"
        )
    unit = m.group(2).lower()
    if unit not in _UNITS:
        raise ValueError(
            f"unknown rate unit {m.group(2)!r} in {value!r}; use bit, kbit, mbit, gbit"
        )
    return Decimal(m.group(1)) * _UNITS[unit]


def format_rate(bits: int) -> str:
    """The shortest exact tc-style spelling of a rate in bits/s."""
    for unit, scale in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bits % scale == 0:
            return f"{bits // scale}{unit}"
    return f"{bits}bit"
