"""Moved to vnet.model.yang.schema; kept for the datastore's imports until it uses that."""

from __future__ import annotations

from vnet.model.yang.schema import (
    MODULE,
    NAMESPACE,
    PREFIX,
    REVISION,
    YANG_DIR,
    SchemaNode,
    context,
    qualified,
    root,
    validate,
)

__all__ = [
    "MODULE",
    "NAMESPACE",
    "PREFIX",
    "REVISION",
    "YANG_DIR",
    "SchemaNode",
    "context",
    "qualified",
    "root",
    "validate",
]
