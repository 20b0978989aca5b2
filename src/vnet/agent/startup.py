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
import json
import os
from pathlib import Path
from typing import Any

from vnet.agent.datastore import Datastore
from vnet.model.yang.decode import parse_json, tree_from_json

APPLIED = "startup.applied"  # the digest of the startup file last applied


def read_startup(path: Path) -> dict[str, Any]:
    """The file's tree, decoded against the schema (RpcError with the path if it does not fit)."""
    return tree_from_json(parse_json(path.read_bytes()))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pending(ds: Datastore, path: Path) -> bool:
    """True if the startup file must be applied at this start."""
    marker = ds.config.state_dir / APPLIED
    if not ds.path.exists() or not marker.exists():
        return True
    return marker.read_text().strip() != _digest(path)


def validated(ds: Datastore, tree: dict[str, Any]) -> dict[str, Any]:
    """The tree as an edit would commit it (indexes assigned), or RpcError.

    The check that networks stay as the lab provisioned them guards edits
    against the owner's configuration; the startup file *is* that
    configuration, so it is validated like an edit by a datastore that
    provisions its networks (and touches no kernel).
    """
    config = ds.config.model_copy(update={"provision_networks": True})
    return Datastore(config, apply_to_kernel=False).prepare(tree)


def apply_startup(ds: Datastore, path: Path) -> bool:
    """Store the startup configuration for `ds.start()` to realise; False if not pending."""
    if not pending(ds, path):
        return False
    digest = _digest(path)
    tree = validated(ds, read_startup(path))
    ds.config.state_dir.mkdir(parents=True, exist_ok=True)
    _write_atomically(ds.path, json.dumps(tree, indent=1))
    _write_atomically(ds.config.state_dir / APPLIED, digest)
    return True


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


__all__ = ["APPLIED", "apply_startup", "pending", "read_startup", "validated"]
