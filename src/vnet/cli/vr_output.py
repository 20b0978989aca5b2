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


# -- guarantees: underlay classes and connection pieces -------------------------------


def _stats(entry: dict[str, Any], key: str = "statistics") -> tuple[str, str, str]:
    s = entry.get(key, {})
    return (s.get("bytes", "-"), s.get("packets", "-"), s.get("drops", "-"))


def _rate(value: Any) -> str:
    from vnet.model import format_rate

    return format_rate(int(value)) if value is not None else "-"


def print_classes(interfaces: list[dict[str, Any]]) -> None:
    """Each underlay interface's HTB classes (reserved, per network, best effort) and counters."""
    from rich.table import Table

    from vnet.ui import console

    if not interfaces:
        return
    table = Table(title="underlay classes", title_justify="left")
    for col in ("interface", "class", "rate", "ceil", "bytes", "packets", "drops"):
        table.add_column(col, justify="right" if col in ("bytes", "packets", "drops") else "left")
    for itf in interfaces:
        name, rate = itf["name"], itf.get("rate")
        table.add_row(
            name,
            "reserved",
            _rate(itf.get("reserved")),
            _rate(rate),
            *_stats(itf, "reserved-statistics"),
        )
        for cls in itf.get("class", []):
            ceil = cls.get("ceil", cls.get("rate"))
            table.add_row(
                name, f"network {cls['network']}", _rate(cls.get("rate")), _rate(ceil), *_stats(cls)
            )
        table.add_row(name, "best effort", "-", _rate(rate), *_stats(itf, "best-effort-statistics"))
    console.print(table)


def connection_rows(connections: list[dict[str, Any]], router: str | None = None) -> list[tuple]:  # type: ignore[type-arg]
    """(connection, id, router, role, what, bandwidth, bytes, packets, drops) per piece."""
    rows = []
    for conn in connections:
        name, cid = conn["name"], str(conn.get("id", "?"))
        for ing in conn.get("ingress", []):
            flow = f"{ing.get('source')} -> {ing.get('destination')} {ing.get('protocol', 'any')}"
            ports = "".join(
                f" {w} {ing[k]}"
                for w, k in (("sport", "source-port"), ("dport", "destination-port"))
                if k in ing
            )
            segs = ",".join(ing.get("segment", []))
            rows.append(
                (
                    name,
                    cid,
                    ing["router"],
                    "ingress",
                    f"{flow}{ports} segs {segs}",
                    _rate(ing.get("bandwidth")),
                    *_stats(ing),
                )
            )
        for tr in conn.get("transit", []):
            rows.append(
                (name, cid, tr["router"], "transit", f"End {tr['sid']}", "-", "-", "-", "-")
            )
        for eg in conn.get("egress", []):
            action = "End.DX6" if ":" in str(eg.get("next-hop", "")) else "End.DX4"
            rows.append(
                (
                    name,
                    cid,
                    eg["router"],
                    "egress",
                    f"{action} {eg['sid']} -> {eg.get('next-hop')}",
                    "-",
                    "-",
                    "-",
                    "-",
                )
            )
    return [r for r in rows if router is None or r[2] == router]


def print_connections(connections: list[dict[str, Any]], router: str | None = None) -> None:
    """The connection pieces on this host (on one VR if `router`), with the shapers' counters."""
    from rich.table import Table

    from vnet.ui import console

    rows = connection_rows(connections, router)
    if not rows:
        console.print("no connection pieces" + (f" on {router}" if router else ""))
        return
    table = Table(title="connection pieces", title_justify="left")
    for col in (
        "connection",
        "id",
        "router",
        "role",
        "what",
        "bandwidth",
        "bytes",
        "packets",
        "drops",
    ):
        table.add_column(
            col, justify="right" if col in ("id", "bytes", "packets", "drops") else "left"
        )
    for row in rows:
        table.add_row(*row)
    console.print(table)
