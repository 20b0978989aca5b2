"""Naming rules shared by the model and everything that realises it.

Kernel interface names are limited to IFNAMSIZ-1 = 15 bytes, and several
names vnet derives embed a user-given name, so the limits below are chosen
so that every derived name fits.
"""

from __future__ import annotations

import re

IFNAMSIZ = 16
MAX_IFNAME = IFNAMSIZ - 1

# Host, VR and end-host names appear inside derived interface names such as
# "eh-<name>" and "ul-<host>", which must stay within 15 bytes.
MAX_NODE_NAME = 12
MAX_NETWORK_NAME = 32
NODE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

# Lab names are part of every namespace name ("vnet-<lab>-<node>"); no dash,
# so that one lab's prefix can never be a prefix of another lab's.
MAX_LAB_NAME = 8
LAB_NAME_RE = re.compile(r"^[a-z][a-z0-9]*$")

# The kernel's dev_valid_name(): not ".", "..", no "/", ":" or whitespace.
IFNAME_RE = re.compile(r"^[^/:\s]+$")


def node_name_problem(name: str) -> str | None:
    """Why `name` cannot name a host, VR or end host, or None if it can."""
    if not NODE_NAME_RE.match(name):
        return "must start with a letter and contain only letters, digits, '-' and '_'"
    if len(name) > MAX_NODE_NAME:
        return (
            f"is {len(name)} characters; at most {MAX_NODE_NAME} fit, because vnet "
            f"derives kernel interface names from it and IFNAMSIZ allows {MAX_IFNAME} bytes"
        )
    return None


def lab_name_problem(name: str) -> str | None:
    if not LAB_NAME_RE.match(name):
        return "must be lower-case letters and digits, starting with a letter (no '-')"
    if len(name) > MAX_LAB_NAME:
        return f"is {len(name)} characters; at most {MAX_LAB_NAME}"
    return None


def ifname_problem(name: str) -> str | None:
    """Why `name` is not a valid kernel interface name, or None."""
    if len(name.encode()) > MAX_IFNAME:
        return f"is {len(name.encode())} bytes; the kernel allows {MAX_IFNAME} (IFNAMSIZ)"
    if name in (".", "..") or not IFNAME_RE.match(name):
        return "may not be '.' or '..' nor contain '/', ':' or white space"
    return None
