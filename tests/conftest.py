"""How the suite is shared out among pytest-xdist's workers (`make test`: `-n N --dist
loadscope`): a module goes to one worker whole, so its fixtures of module scope (a lab, a
controller) are built once; but a module in SPLIT is cut into that many parts, each on a
worker of its own: it is long enough that building its fixtures again costs less than
waiting for it on one worker. (xdist's own `loadgroup` cannot do this with pytest 9: the
group it appends to a test's id is lost, and every test goes out on its own.)

Each pytest process also collects its garbage as the controller and the agent do once started
(vnet.tools.heap): young collections rarer, and what collection made frozen. With Python's
defaults, full collections over the growing heap of collected modules and tests took 2 of
the 7 s of a worker's collection, and 5 s of `make check`'s minute."""

from __future__ import annotations

import gc
import zlib
from pathlib import Path
from typing import Any

import pytest

from vnet.tools.heap import YOUNG_THRESHOLD

SPLIT = {"test_controller_faults": 2}


def pytest_configure(config: pytest.Config) -> None:
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()  # the modules, tests and their parameters live as long as the process


def scope_of(nodeid: str) -> str:
    """The unit a worker takes whole: the test's file (not the text before the last `::`,
    which a parameter such as an IPv6 address may contain), or a part of a file in SPLIT."""
    module = nodeid.split("::", 1)[0]
    parts = SPLIT.get(Path(module).stem, 1)
    if parts == 1:
        return module
    return f"{module}#{zlib.crc32(nodeid.encode()) % parts}"  # stable across the workers


@pytest.hookimpl(trylast=True)  # after tests/integration/conftest.py has marked its tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadscope` the modules go out in this order: those with labs marked
    slow, the other integration modules, then the unit tests and fuzzers, which fill the
    workers' last minutes. xdist's own order (most tests first) sent the integration modules
    of one or two long tests last, each then running on one worker while the others idled."""
    if config.getvalue("dist") != "loadscope":
        return
    items.sort(key=_dealing_order)  # stable: a module's own order is kept


def _dealing_order(item: pytest.Item) -> int:
    if "integration" not in item.nodeid:
        return 2
    return 0 if item.get_closest_marker("slow") else 1


@pytest.hookimpl(optionalhook=True)  # a hook of xdist: unknown when it is not loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the collection's order (see above) is the order

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ModuleScheduling(config, log)
