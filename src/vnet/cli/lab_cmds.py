"""vnet lab up|down|status|list|exec"""

from __future__ import annotations

import json
from dataclasses import asdict

import click
from rich.table import Table

from vnet.cli import friendly_errors, needs_root
from vnet.lab import lab as labmod
from vnet.ui import DelayedProgress, console


@click.group()
def lab() -> None:
    """Emulate physical hosts on this machine and realise a topology file on them."""


def print_timings(steps: dict[str, float]) -> None:
    text = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in steps.items())
    console.print(f"[dim]timings: {text}[/dim]")


@lab.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Print the operations and change nothing.")
@needs_root
@friendly_errors
def up(file: str, dry_run: bool) -> None:
    """Bring the lab in FILE up, or bring a running one in line with FILE."""
    with DelayedProgress("applying") as bar:
        result = labmod.up(
            file, dry_run=dry_run, progress=lambda i, n, op: bar.update(i + 1, n, op.describe())
        )
    name = result.topology.name
    if dry_run:
        for op in result.ops:
            click.echo(op.describe())
        click.echo(f"# dry run: {len(result.ops)} operation(s) for lab {name!r}; nothing changed")
        return
    if result.ops:
        counts = result.desired.summary()
        console.print(
            f"lab [bold]{name}[/bold] is up: {len(result.ops)} operation(s) applied; "
            f"{counts['namespaces']} namespaces, {counts['links']} links, "
            f"{counts['addresses']} addresses, {counts['routes']} routes"
        )
    else:
        console.print(f"lab [bold]{name}[/bold] already matches {file}; nothing to do")
    print_timings(result.timings.steps)


@lab.command()
@click.argument("name", required=False)
@needs_root
@friendly_errors
def down(name: str | None) -> None:
    """Remove everything lab NAME created (the only lab, if NAME is omitted; NAME may be
    the lab's topology file)."""
    name = labmod.pick_lab(name)
    found = name in labmod.running_labs()
    with DelayedProgress("removing") as bar:
        result = labmod.down(name, progress=lambda i, n, op: bar.update(i + 1, n, op.describe()))
    for proc in result.stopped:
        console.print(f"stopped {proc.what} (pid {proc.pid})")
    for ns, pids in result.lingering.items():
        console.print(
            f"[yellow]note:[/yellow] {ns} still had processes vnet did not start "
            f"(pids {', '.join(map(str, pids))}); they were left running, cut off from the lab"
        )
    for ns in result.half_made:
        console.print(f"removed {ns}: a namespace's mount point a stopped process left unbound")
    if not (found or result.ops or result.stopped or result.half_made):
        others = ", ".join(labmod.running_labs()) or "none"
        console.print(f"[yellow]note:[/yellow] no lab named {name!r} was up (labs up: {others})")
        return
    console.print(f"lab [bold]{name}[/bold] is down: {len(result.ops)} operation(s)")
    print_timings(result.timings.steps)


@lab.command(name="list")
@needs_root
def list_labs() -> None:
    """List the labs that are up."""
    for name in labmod.running_labs():
        click.echo(name)


@lab.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for programs.")
@needs_root
@friendly_errors
def status(name: str | None, as_json: bool) -> None:
    """Show the nodes of lab NAME, their addresses and routes, and whether it matches its file."""
    st = labmod.status(labmod.pick_lab(name))
    if as_json:
        click.echo(json.dumps(asdict(st), indent=2))
        return
    table = Table(title=f"lab {st.name}  ({st.file or 'no file recorded'})")
    for col in ("node", "role", "interfaces and addresses", "routes"):
        table.add_column(col)
    for node in st.nodes:
        itfs = "\n".join(f"{i}: {' '.join(a) or '-'}" for i, a in sorted(node.interfaces.items()))
        table.add_row(node.name, node.role, itfs, "\n".join(node.routes) or "-")
    console.print(table)
    for host, a in sorted(st.agents.items()):
        state = "running" if a["running"] else "[red]not running[/red]"
        console.print(
            f"agent {host}: {state} (pid {a['pid']}), NETCONF {a['address']}:{a['netconf_port']}, "
            f"RESTCONF https://{a['address']}:{a['restconf_port']}, user {a['user']} "
            f"password {a['password']}  (from inside the lab: vnet vr --lab {st.name} "
            f"--host {host} ...)"
        )
    if c := st.controller:
        state = "running" if c["running"] else "[red]not running[/red]"
        console.print(
            f"controller: {state} (pid {c['pid']}), {c['url']} in namespace {c['namespace']}, "
            f"provider token {c['token_file']}  (vnet conn list --lab {st.name})"
        )
    if st.in_sync is True:
        console.print("kernel matches the file")
    elif st.in_sync is False:
        console.print(
            f"[yellow]{len(st.pending)} operation(s) pending[/yellow]; "
            "`vnet lab up FILE` applies them:"
        )
        for line in st.pending[:20]:
            console.print(f"  {line}")


@lab.command(name="exec", context_settings={"ignore_unknown_options": True})
@click.option("--lab", "lab_name", help="The lab (needed when several are up).")
@click.argument("node")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@needs_root
@friendly_errors
def exec_cmd(lab_name: str | None, node: str, command: tuple[str, ...]) -> None:
    """Run COMMAND inside NODE's network namespace: vnet lab exec red-a -- ping 10.2.0.2"""
    labmod.exec_in(labmod.pick_lab(lab_name), node, list(command))


def _add_fault_commands() -> None:
    from vnet.cli.lab_fault_cmds import host, link

    lab.add_command(link)
    lab.add_command(host)


_add_fault_commands()
