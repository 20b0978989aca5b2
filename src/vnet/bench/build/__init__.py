"""vnet bench build: time to create and to remove N virtual routers (2 interfaces each).

Drives the lab exactly as `vnet lab up/down` does (measure.py); the floor series makes
the same namespaces, links, addresses and routes with plain `ip -batch` in the same run
(floor.py). --json writes the shared results schema (`vnet.bench.result/1`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vnet.bench.contract import Benchmark, Defaults, Option

if TYPE_CHECKING:
    from vnet.bench.progress import BenchOptions
    from vnet.bench.results import BenchResult

METRICS = {
    # name: (unit, description)
    "up": ("s", "`lab up` of all VRs (series ip -batch: the floor), one sample per run."),
    "down": (
        "s",
        "`lab down` of all VRs, one sample per run; it meets the kernel still destroying the "
        "floor's namespaces, made and removed just before.",
    ),
    "per VR": ("ms", "Kernel operations that belong to one VR (namespace, veths, addresses)."),
    "kernel settle": ("s", "How long the kernel kept destroying namespaces after `down`."),
    "operations up": ("", "Kernel operations of `up`."),
    "operations down": ("", "Kernel operations of `down`."),
    "re-apply operations": ("", "What applying the same topology again plans (0: idempotent)."),
    "peak RSS": ("MB", "The benchmark process's peak resident memory."),
}
SERIES = "lab"
FLOOR = "ip -batch"  # the same objects by plain iproute2 batches, one namespace at a time


class BuildBench(Benchmark):
    name = "build"
    help = "Time to create and to remove VRS virtual routers with 2 interfaces each."
    defaults = Defaults(repeat=1, quick_repeat=1)
    options = (
        Option(
            "--vrs", "vrs", "int", required=True, minimum=1, maximum=65000, help="How many VRs."
        ),
        Option(
            "--hosts",
            "hosts",
            "int",
            default=1,
            minimum=1,
            maximum=64,
            show_default=True,
            help="Emulated physical hosts; VRs are spread over them.",
        ),
    )

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        from vnet.bench.build.measure import peak_rss_mb, run_once
        from vnet.bench.progress import BenchProgress
        from vnet.bench.results import BenchResult

        vrs, hosts = plan["vrs"], plan["hosts"]
        result = BenchResult.start(
            "build",
            parameters={**common.as_parameters(), "vrs": vrs, "hosts": hosts},
            baseline=FLOOR,
        )
        for metric, (unit, description) in METRICS.items():
            result.declare(metric, unit, description=description)
        with BenchProgress("build", total=common.repeat, quiet=common.quiet) as progress:
            for i in range(common.repeat):
                progress.log(f"run {i + 1}/{common.repeat}: {vrs} VRs on {hosts} host(s) ...")
                run = run_once(vrs, hosts)
                for metric, value in (
                    ("up", run.up_seconds),
                    ("down", run.down_seconds),
                    ("kernel settle", run.settle_seconds),
                    ("operations up", run.ops_up),
                    ("operations down", run.ops_down),
                    ("re-apply operations", run.reapply_ops),
                ):
                    result.record(metric, SERIES, value)
                result.record("up", FLOOR, run.floor_seconds)
                for ms in run.per_vr_ms:
                    result.record("per VR", SERIES, ms)
                progress.advance()
        result.record("peak RSS", SERIES, peak_rss_mb())
        return result

    def headline(self, result: BenchResult) -> str:
        from vnet.bench.build.summary import headline

        return headline(result)
