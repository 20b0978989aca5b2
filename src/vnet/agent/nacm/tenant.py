"""The tenant template: "tenant T's administrator manages T's VRs (their interfaces and
routes) and T's SRv6 connections, reads T's networks, and reads nothing else" (not the
host's underlay classes or SRv6 locators: those are the operator's), and never stops
or undoes another tenant: no <lock> of the datastores every tenant shares (nor a
confirmed commit, which holds them as a lock does: Nacm.authorise_commit).

It is an ordinary rule-list; a user the agent's configuration marks with
`tenant: T` is in its group, and the list is evaluated after the rule-lists
of the datastore, so an operator can still permit or deny more for that user.
"""

from __future__ import annotations

from typing import Any


def group(tenant: str) -> str:
    return f"tenant-{tenant}"


def rule_list(tenant: str) -> dict[str, Any]:
    """The template for `tenant`, as an `ietf-netconf-acm` rule-list entry."""
    return {
        "name": f"tenant-{tenant}-template",
        "group": [group(tenant)],
        "rule": [
            {
                "name": "own-routers",
                "module-name": "vnet-router",
                "path": f"/vr:routers/vr:router[vr:tenant='{tenant}']",
                "access-operations": "*",
                "action": "permit",
                "comment": "a VR is the tenant's when all its interfaces are on its networks",
            },
            {
                "name": "own-connections",
                "module-name": "vnet-router",
                "path": f"/vr:srv6/vr:connection[vr:tenant='{tenant}']",
                "access-operations": "*",
                "action": "permit",
                "comment": "a connection is the tenant's when all networks of its pieces are",
            },
            {
                "name": "own-networks",
                "module-name": "vnet-router",
                "path": f"/vr:virtual-networks/vr:network[vr:tenant='{tenant}']",
                "access-operations": "read",
                "action": "permit",
            },
            {
                "name": "no-lock",
                "module-name": "ietf-netconf",
                "rpc-name": "lock",
                "access-operations": "exec",
                "action": "deny",
                "comment": "a lock (and a confirmed commit) would stop every other tenant",
            },
            {
                "name": "nothing-else",
                "module-name": "*",
                "path": "/",
                "access-operations": "*",
                "action": "deny",
            },
        ],
    }
