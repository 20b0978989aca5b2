"""How the suite is shared out among pytest-xdist's workers (`make test`: `-n N --dist
loadgroup`). A module whose tests borrow a fixture of module scope (a lab, a controller)
goes to one worker whole, so the fixture is built once; the tests of every other module are
handed out one by one. A module in SPLIT is cut into that many parts, each built on its own
worker: it is long enough that building its fixtures again costs less than waiting for it."""

from __future__ import annotations

from pathlib import Path

import pytest

SPLIT = {"test_controller_faults": 2}
SHARED_SCOPES = {"module", "class", "package"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    counts: dict[str, int] = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = Path(str(item.fspath)).stem
        if not borrows_shared_fixture(item):
            continue
        index = counts.get(module, 0)
        counts[module] = index + 1
        parts = SPLIT.get(module, 1)
        group = module if parts == 1 else f"{module}-{index % parts}"
        item.add_marker(pytest.mark.xdist_group(group))


def borrows_shared_fixture(item: pytest.Item) -> bool:
    """True if the test uses a fixture that lives longer than one test but not the session
    (each worker has a session of its own: its session fixtures are its own)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.scope in SHARED_SCOPES
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )
