"""How `vnet vr` shows virtual routers: tables for people, RFC 7951 JSON for scripts."""

from __future__ import annotations

import json
from typing import Any

import click


def _itf_text(itf: dict[str, Any]) -> str:
    addrs = " ".join(a for a in (itf.get("ipv4"), itf.get("ipv6")) if a)
    status = itf.get("oper-status")
    return (
        f"{itf['name']}→{itf.get('network', '?')}"
        + (f" {addrs}" if addrs else "")
        + (f" ({status})" if status else "")
    )


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def print_table(routers: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from vnet.ui import console

    if not routers:
        console.print("no virtual routers")
        return
    table = Table(show_lines=False)
    for col in ("index", "name", "admin", "oper", "interfaces", "routes"):
        table.add_column(col, justify="right" if col == "index" else "left")
    for r in sorted(routers, key=lambda r: int(r.get("index", 0))):
        routes = [f"{x['destination']} via {x['next-hop']}" for x in r.get("route", [])]
        table.add_row(
            str(r.get("index", "")),
            r["name"],
            r.get("admin-state", "up"),
            r.get("oper-state", "?"),
            "\n".join(_itf_text(i) for i in r.get("interface", [])) or "-",
            "\n".join(routes) or "-",
        )
    console.print(table)


def print_router(r: dict[str, Any]) -> None:
    from rich.table import Table

    from vnet.ui import console

    console.print(
        f"[bold]{r['name']}[/bold]  index {r.get('index', '?')}  "
        f"admin {r.get('admin-state', 'up')}  oper {r.get('oper-state', '?')}  "
        f"uptime {r.get('uptime', 0)} s  routes in table {r.get('route-count', '?')}"
    )
    itfs = Table(title="interfaces", title_justify="left")
    cols = (
        "name",
        "network",
        "ipv4",
        "ipv6",
        "status",
        "in pkts",
        "in bytes",
        "out pkts",
        "out bytes",
        "errors",
        "drops",
    )
    for c in cols:
        itfs.add_column(
            c, justify="right" if c.startswith(("in ", "out ", "err", "drop")) else "left"
        )
    for i in r.get("interface", []):
        s = i.get("statistics", {})
        errors = int(s.get("in-errors", 0)) + int(s.get("out-errors", 0))
        drops = int(s.get("in-discards", 0)) + int(s.get("out-discards", 0))
        itfs.add_row(
            i["name"],
            i.get("network", ""),
            i.get("ipv4", ""),
            i.get("ipv6", ""),
            i.get("oper-status", "?"),
            s.get("in-packets", "-"),
            s.get("in-octets", "-"),
            s.get("out-packets", "-"),
            s.get("out-octets", "-"),
            str(errors) if s else "-",
            str(drops) if s else "-",
        )
    console.print(itfs)
    if r.get("route"):
        routes = Table(title="static routes", title_justify="left")
        routes.add_column("destination")
        routes.add_column("next hop")
        for x in r["route"]:
            routes.add_row(x["destination"], x["next-hop"])
        console.print(routes)
