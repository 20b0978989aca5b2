"""Hypothesis profiles: `make test` runs each property a few dozen times (seconds),
`make fuzz` (HYPOTHESIS_PROFILE=fuzz) thousands of times. A failure prints the
smallest input that breaks it: it becomes a regression test in tests/unit."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz", max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
