"""A commit on its way to being acknowledged: in the kernel and the journal, its fsync pending."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vnet.agent.datastore.events import Event
from vnet.agent.datastore.persist import disk_error
from vnet.model.yang.errors import ErrorTag, RpcError

if TYPE_CHECKING:
    from vnet.agent.datastore.store import Datastore

log = logging.getLogger("vnet.agent.datastore")


@dataclass
class Written:
    position: int  # what the journal's fsync must reach (RunningFile.appended)
    epoch: int  # the datastore's epoch when written: a failed fsync undoes older epochs
    tree: dict[str, Any]  # the configuration it made running
    events: list[Event]  # told once it is durable


async def made_durable(ds: Datastore, commit: Written) -> None:
    """Wait for `commit`'s fsync (shared with the commits written meanwhile), then make it
    what readers see and tell its events; RpcError if it was undone instead."""
    try:
        await ds._group.wait(commit.position)
    except OSError as err:
        await _durability_lost(ds, commit)
        raise disk_error("saving the configuration", err, "the change was undone") from None
    if commit.epoch != ds._epoch:  # another commit's fsync failed: this one was undone
        raise RpcError(
            ErrorTag.OPERATION_FAILED,
            "saving the configuration failed; the change was undone",
        )
    if commit.position >= ds._durable_position:
        ds.durable, ds._durable_position = commit.tree, commit.position
    ds._note_uptimes(commit.events)
    ds.events.publish(commit.events)


async def _durability_lost(ds: Datastore, commit: Written) -> None:
    """An fsync failed: what the journal holds is unknown. Every commit not yet durable
    is undone (kernel and memory back to the last durable configuration), and that
    configuration is written anew as a snapshot."""
    async with ds.write_lock:
        if commit.epoch != ds._epoch:
            return  # another waiter of the same fsync did it
        ds._epoch += 1
        ds._publish_failure(commit.events, "saving the configuration failed")
        ds.running = ds.durable
        ds.validator.forget()
        if not ds.candidate_dirty:
            ds.candidate = ds.running
        try:
            ds.file.save(ds.running, ds._pending_rollback())
        except OSError:
            log.exception("writing the configuration after a failed fsync")
        if not ds.apply_to_kernel:
            return
        try:  # observe what the kernel holds: the undone commits are in it
            await ds._in_kernel_thread(ds._converge, ds._desired(ds.running), None)
        except Exception:
            log.exception("undoing the commits whose fsync failed")
            ds._actual = None
