"""A long-running process's heap once it has started (the agent's and the controller's)."""

from __future__ import annotations

import contextlib
import ctypes
import gc

# objects allocated (net) between two young collections; full ones come 100 young ones
# apart, so their rate falls by as much
YOUNG_THRESHOLD = 10_000


def settle_after_start() -> None:
    """Leave start-up garbage behind: collect it, freeze what stays, trim the heap.

    The modules, schemas, inventory and front-ends made at start-up live as long as the
    process; frozen, the cyclic garbage collector no longer walks them in every full
    collection (measured on this machine: pauses of 100+ ms of CPU in the middle of an
    agent's request; 140-150 ms in the controller, in the middle of a failure's reroute).
    glibc keeps freed memory for reuse; after start-up most of it is not needed again, and
    trimming it lowers the idle RSS by a few MiB.

    Young collections are then made rarer (YOUNG_THRESHOLD): a request makes tens of
    thousands of short-lived container objects (ORM rows, models, parsed trees), and with
    Python's default of 700 the collector ran a full collection every few seconds of work,
    10-30 ms each (measured in the controller during a reroute of 100 connections).
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
