"""How the controller's answers look: tables for people (rich, as `vnet vr`), JSON for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from vnet.cli.vr_output import print_json
from vnet.model.controller_api import (
    ConnectionAnswer,
    ConnectionEvent,
    ConnectionView,
    NetworkView,
    TenantView,
)


def _rate(bits: int | None) -> str:
    from vnet.model import format_rate

    return format_rate(bits) if bits else "-" if bits is None else "0"


def dump(value: BaseModel | Sequence[BaseModel]) -> None:
    """One answer or a list of them, as the API's JSON."""
    if isinstance(value, BaseModel):
        print_json(value.model_dump(mode="json"))
    else:
        print_json([v.model_dump(mode="json") for v in value])


def _flow(c: ConnectionView) -> str:
    ports = "".join(
        f" {word} {port}" for word, port in (("sport", c.src_port), ("dport", c.dst_port)) if port
    )
    return f"{c.protocol or 'any'}{ports}"


def _arrow(c: ConnectionView) -> str:
    return f"{c.a} {'<->' if c.bidirectional else '->'} {c.b}"


def _table(title: str | None, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    from rich.table import Table

    from vnet.ui import console

    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*(str(x) for x in row))
    console.print(table)


def print_rows(title: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    _table(title, columns, rows)


def print_connections(conns: list[ConnectionView]) -> None:
    from vnet.ui import console

    if not conns:
        console.print("no connections")
        return
    _table(
        None,
        ("tenant", "name", "status", "end hosts", "flow", "bandwidth", "path", "gen"),
        [
            (
                c.tenant,
                c.name,
                c.status,
                _arrow(c),
                _flow(c),
                _rate(c.bandwidth),
                " -> ".join(c.path) or "-",
                c.generation,
            )
            for c in sorted(conns, key=lambda c: (c.tenant, c.name))
        ],
    )


def print_connection(c: ConnectionView, history: list[ConnectionEvent] | None = None) -> None:
    from vnet.ui import console

    created = f", created {c.created:%Y-%m-%d %H:%M:%S}" if c.created else ""
    console.print(
        f"[bold]{c.tenant}/{c.name}[/bold] {c.status}: {_arrow(c)} {_flow(c)} "
        f"{_rate(c.bandwidth)}, generation {c.generation}{created}"
    )
    if c.path:
        console.print(f"path {' -> '.join(c.path)}; segments {', '.join(c.segments) or '-'}")
    if c.hops:
        rows = [(h.host, h.router, h.sid or "(ingress)") for h in c.hops]
        _table("hops", ("host", "router", "SID"), rows)
    if history:
        rows = [(f"{e.at:%Y-%m-%d %H:%M:%S}", e.kind, e.detail) for e in history]
        _table("history", ("at", "event", "detail"), rows)


def print_answer(answer: ConnectionAnswer, verb: str) -> None:
    """`established` with its path, and every connection moved to make room."""
    from vnet.ui import console

    c = answer.connection
    console.print(
        f"connection [bold]{c.tenant}/{c.name}[/bold] {verb}: {_arrow(c)} {_rate(c.bandwidth)} "
        f"over {' -> '.join(c.path) or '?'}"
    )
    for m in answer.moved:
        console.print(
            f"  moved {m.tenant}/{m.connection} make-before-break: "
            f"{' -> '.join(m.old_path)}  =>  {' -> '.join(m.new_path)}"
        )


def print_tenants(tenants: list[TenantView]) -> None:
    _table(None, ("tenant",), [(t.name,) for t in sorted(tenants, key=lambda t: t.name)])


def print_networks(nets: list[NetworkView]) -> None:
    from vnet.ui import console

    if not nets:
        console.print("no virtual networks")
        return
    _table(
        None,
        ("tenant", "network", "VNI", "guarantees"),
        [
            (
                n.tenant,
                n.name,
                n.vni,
                ", ".join(f"{link} {_rate(bps)}" for link, bps in sorted(n.guarantees.items()))
                or "-",
            )
            for n in sorted(nets, key=lambda n: (n.tenant, n.name))
        ],
    )
