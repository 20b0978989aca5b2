"""The one builder of the XPath form of data paths: error paths (RFC 6241 error-path,
RFC 8040 in its XML form) and NACM rule paths name list entries by their keys,
`/vr:routers/vr:router[vr:name='r1']`. Every front-end, client and check builds them here,
so they agree on prefixes and on quoting a value that holds a quote."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vnet.model.yang.module import PREFIX


def leaf_text(value: Any) -> str:
    """A leaf value as YANG writes it (booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def quoted(value: Any) -> str:
    """An XPath literal: in single quotes, or double ones if the value holds a single one."""
    t = leaf_text(value)
    return f'"{t}"' if "'" in t else f"'{t}'"


def key_predicate(keys: Iterable[tuple[str, Any]], prefix: str | None = PREFIX) -> str:
    """[vr:name='r1'] (or [name='r1'] with prefix None, RFC 7951's form) for a list entry
    with these (key leaf, value) pairs, in the list's key order."""
    p = f"{prefix}:" if prefix else ""
    return "".join(f"[{p}{leaf}={quoted(value)}]" for leaf, value in keys)


def entry_path(container: str, entry: str, name: str, prefix: str = PREFIX) -> str:
    """/vr:routers/vr:router[vr:name='r1']: an entry, keyed by name, of a top-level list."""
    return f"/{prefix}:{container}/{prefix}:{entry}{key_predicate([('name', name)], prefix)}"
