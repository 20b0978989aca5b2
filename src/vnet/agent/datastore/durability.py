"""A commit on its way to being acknowledged: in the kernel and the journal, its fsync pending
(the datastore waits for it: `Datastore._made_durable`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vnet.agent.datastore.events import Event


@dataclass
class Written:
    position: int  # what the journal's fsync must reach (RunningFile.appended)
    epoch: int  # the datastore's epoch when written: a failed fsync undoes older epochs
    tree: dict[str, Any]  # the configuration it made running
    events: list[Event]  # told once it is durable
