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
# \Z, not $: "$" also matches before a trailing newline, which would let "r1\n" through.
NODE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\Z")

# The same rule in JSON Schema's (ECMA's) spelling, for the APIs' documents; there and in
# pydantic's (Rust's) regex "$" is the end of the text, as "\Z" is in Python's.
NAME_PATTERN = "^[A-Za-z][A-Za-z0-9_-]*$"
# Tenants are named like networks: letters, digits, '-' and '_', starting with a letter, at
# most as long as the YANG module's `tenant` leaf allows. Their names reach URLs, the console
# and the agents' configuration, so markup, '/' or '..' have no place in them.
MAX_TENANT_NAME = 32

# Lab names are part of every namespace name ("vnet-<lab>-<node>"); no dash,
# so that one lab's prefix can never be a prefix of another lab's.
MAX_LAB_NAME = 8
LAB_NAME_RE = re.compile(r"^[a-z][a-z0-9]*\Z")

# The kernel's dev_valid_name() refuses "/", ":" and white space; "%" makes the
# kernel treat the name as a template ("eth%d"); and only printable ASCII, because
# SNMP carries interface names as DisplayString (ASCII), and a name that is not
# breaks every walk that crosses its row.
IFNAME_RE = re.compile(r"^[\x21-\x7e]+\Z")
IFNAME_FORBIDDEN = "/:%"

# Names a VR's namespace already holds or the kernel keeps for itself: the loopback,
# the fallback devices of tunnel modules (created in every new namespace once the
# module is loaded), and the names of the sysctl directories net/*/conf/{all,default}.
RESERVED_IFNAMES = frozenset(
    {
        "lo",
        "all",
        "default",
        "tunl0",
        "gre0",
        "gretap0",
        "erspan0",
        "sit0",
        "ip6tnl0",
        "ip6gre0",
        "ip_vti0",
        "ip6_vti0",
    }
)


def ifname_problem(name: str) -> str | None:
    """Why `name` is not a valid kernel interface name, or None."""
    if not IFNAME_RE.match(name):
        return "must be printable ASCII without white space (the kernel and SNMP carry no other)"
    if len(name) > MAX_IFNAME:
        return f"is {len(name)} bytes; the kernel allows {MAX_IFNAME} (IFNAMSIZ)"
    if name in (".", "..") or any(c in name for c in IFNAME_FORBIDDEN):
        return "may not be '.' or '..' nor contain '/', ':' or '%'"
    if name in RESERVED_IFNAMES:
        return "is reserved: the kernel or vnet already uses it in every router's namespace"
    return None


def node_name_problem(name: str) -> str | None:
    """Why `name` cannot name a host, VR or end host, or None if it can."""
    if not NODE_NAME_RE.match(name):
        return _NAME_RULE
    if len(name) > MAX_NODE_NAME:
        return (
            f"is {len(name)} characters; at most {MAX_NODE_NAME} fit, because vnet "
            f"derives kernel interface names from it and IFNAMSIZ allows {MAX_IFNAME} bytes"
        )
    return None


def tenant_name_problem(name: str) -> str | None:
    """Why `name` cannot name a tenant, or None if it can."""
    return _rule_problem(name, NODE_NAME_RE, _NAME_RULE, MAX_TENANT_NAME)


def lab_name_problem(name: str) -> str | None:
    rule = "must be lower-case letters and digits, starting with a letter (no '-')"
    return _rule_problem(name, LAB_NAME_RE, rule, MAX_LAB_NAME)


_NAME_RULE = "must start with a letter and contain only letters, digits, '-' and '_'"


def _rule_problem(name: str, pattern: re.Pattern[str], rule: str, limit: int) -> str | None:
    if not pattern.match(name):
        return rule
    if len(name) > limit:
        return f"is {len(name)} characters; at most {limit}"
    return None
