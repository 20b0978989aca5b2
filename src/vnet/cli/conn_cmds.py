"""vnet conn list|show: the connection pieces and underlay classes an agent holds.

A client of the agent like `vnet vr` (same options: --lab/--host, or --address,
--user/--password, e.g. a tenant administrator's): it reads the `srv6` and
`underlay` containers over NETCONF or RESTCONF, with the kernel's counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from vnet.cli.vr_cmds import agent_options, run_client
from vnet.cli.vr_output import print_classes, print_connections, print_json

if TYPE_CHECKING:
    from vnet.client import AgentClient

SRV6 = "vnet-router:srv6"
UNDERLAY = "vnet-router:underlay"


@click.group()
def conn() -> None:
    """Connections (SRv6 pieces) and bandwidth classes on an agent's host.

    \b
    Find the agent as for `vnet vr`: --lab NAME --host H, or --address/--user/--password.
    """


@conn.command(name="list")
@agent_options
@run_client
def list_(client: AgentClient, as_json: bool) -> None:
    """Every connection piece on the host and every underlay class, with counters."""
    tree = client.guarantees(state=True)
    if as_json:
        print_json(tree)
        return
    print_connections(tree.get(SRV6, {}).get("connection", []))
    print_classes(tree.get(UNDERLAY, {}).get("interface", []))


@conn.command()
@click.argument("name")
@agent_options
@run_client
def show(client: AgentClient, as_json: bool, name: str) -> None:
    """One connection's pieces on the host: steering, segments, SIDs, shaper counters."""
    from vnet.client import ClientError

    found = [
        c
        for c in client.guarantees(state=True).get(SRV6, {}).get("connection", [])
        if c["name"] == name
    ]
    if not found:
        raise ClientError(
            "data-missing",
            f"connection {name!r} has no pieces on this host",
            f"/vr:srv6/vr:connection[vr:name='{name}']",
        )
    if as_json:
        print_json(found[0])
    else:
        print_connections(found)
