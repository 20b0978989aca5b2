"""Where the lab's process helpers live now: `vnet.tools.processes` (one home).

Kept so that modules not yet moved over keep importing; new code imports
`vnet.tools.processes`.
"""

from vnet.tools.processes import (
    ProcessRecord,
    is_running,
    record,
    run,
    spawn,
    start_time,
    stop,
    stop_child,
)

__all__ = [
    "ProcessRecord",
    "is_running",
    "record",
    "run",
    "spawn",
    "start_time",
    "stop",
    "stop_child",
]
