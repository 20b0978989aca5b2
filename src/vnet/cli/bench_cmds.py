"""vnet bench ...: every benchmark drives vnet through its public interfaces."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vnet.cli import LazyGroup, friendly_errors, needs_root
from vnet.ui import console


@click.group(
    cls=LazyGroup,
    lazy={
        "report": "vnet.bench.report:report_cmd",
        "qos": "vnet.bench.qos:qos",
        "dataplane": "vnet.bench.dataplane:dataplane",
        "forwarding": "vnet.bench.forwarding:forwarding",
        "netconf": "vnet.bench.netconf:netconf",
        "snmp": "vnet.bench.snmp:snmp",
        "sdn": "vnet.bench.sdn:sdn",
    },
)
def bench() -> None:
    """Measure vnet: build times, data plane, forwarding, QoS, SDN control plane."""


@bench.command()
@click.option("--vrs", type=click.IntRange(1, 65000), required=True, help="How many VRs.")
@click.option(
    "--hosts",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Emulated physical hosts; VRs are spread over them.",
)
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the results as JSON to this file.",
)
@needs_root
@friendly_errors
def build(vrs: int, hosts: int, repeat: int, json_path: Path | None) -> None:
    """Time to create and to remove VRS virtual routers with 2 interfaces each."""
    from vnet.bench.build import run_once, summarize_runs
    from vnet.bench.results import environment

    runs = []
    for i in range(repeat):
        console.print(f"[dim]run {i + 1}/{repeat}: {vrs} VRs on {hosts} host(s) ...[/dim]")
        runs.append(run_once(vrs, hosts))
    summary = summarize_runs(runs)
    console.print(
        f"{vrs} VRs: up {summary['up_seconds']:.3f} s ({summary['ops_up']} operations), "
        f"down {summary['down_seconds']:.3f} s "
        f"(kernel busy {summary['kernel_settle_seconds']:.1f} s more); "
        f"per VR p50 {summary['per_vr_p50_ms']:.2f} ms, "
        f"p99 {summary['per_vr_p99_ms']:.2f} ms; peak RSS {summary['peak_rss_mb']:.0f} MB; "
        f"re-apply planned {summary['reapply_ops']} operation(s)"
    )
    if json_path:
        summary["environment"] = environment()
        json_path.write_text(json.dumps(summary, indent=2))
        console.print(f"wrote {json_path}")
