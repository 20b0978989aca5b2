"""`vnet agent run --startup FILE`: the configuration an agent starts from.

FILE is an RFC 7951 JSON tree of vnet's module (what `<get-config>` returns
as JSON). It is decoded with the one codec and validated exactly as an edit
is (model invariants with exact paths, then YANG) before anything is stored:
a bad file stops the agent with the error, and nothing changes.

It applies when it changed since it was last applied, or when nothing is
stored yet; otherwise the stored configuration, with the changes made over
NETCONF/RESTCONF since, is kept. Whoever starts the agent (a lab) thus
hands over its share once, through this public interface, and never writes
the agent's state.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from vnet.agent.datastore import Datastore
from vnet.model.yang.decode import parse_json, tree_from_json

APPLIED = "startup.applied"  # the digest of the startup file last applied


def read_startup(data: bytes) -> dict[str, Any]:
    """The file's tree, decoded against the schema (RpcError with the path if it does not fit)."""
    return tree_from_json(parse_json(data))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pending(ds: Datastore, data: bytes) -> bool:
    """True if the startup file (its bytes) must be applied at this start."""
    marker = ds.config.state_dir / APPLIED
    if not ds.has_stored() or not marker.exists():
        return True
    return marker.read_text().strip() != _digest(data)


def validated(ds: Datastore, tree: dict[str, Any]) -> dict[str, Any]:
    """The tree as an edit would commit it (indexes assigned), or RpcError.

    The check that networks stay as the lab provisioned them guards edits
    against the owner's configuration; the startup file *is* that
    configuration, so it is validated like an edit by a datastore that
    provisions its networks (and touches no kernel).
    """
    config = ds.config.model_copy(update={"provision_networks": True})
    return Datastore(config, apply_to_kernel=False).prepare(tree)


async def start_datastore(ds: Datastore, path: Path | None) -> bool:
    """Start `ds` from the startup file if it is pending, else from what it stores;
    True if the file was applied. An invalid file raises RpcError before anything
    is stored."""
    data = path.read_bytes() if path is not None else None
    if data is None or not pending(ds, data):
        await ds.start()
        return False
    await ds.start(initial=validated(ds, read_startup(data)))
    # only once the datastore holds it: a failed start applies the file again next time
    _write_atomically(ds.config.state_dir / APPLIED, _digest(data))
    return True


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


__all__ = ["APPLIED", "pending", "read_startup", "start_datastore", "validated"]
