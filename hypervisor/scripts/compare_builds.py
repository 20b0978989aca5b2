"""Before/after of hypervisor builds in ONE lab: `vnet bench sdn`'s PACKET_OUT rate step,
run through the same pieces the bench uses (OvsLab, perfbench cp, the hypervisor launcher),
the switch alone and each build interleaved, round after round, so load on a shared machine
falls on every series alike.

    .venv/bin/python hypervisor/scripts/compare_builds.py RATE TENANTS SECONDS ROUNDS \\
        ovs=ovs before=/path/to/old/hypervisor after=target/release/hypervisor

Prints one JSON line per run: p50/p90/p99 latency (µs), lost/sent, CPU % of a core
(OVS, then the hypervisor), the load average after the run. Needs root.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from vnet.bench.sdn.hypervisor import HvConfig, hypervisor
from vnet.bench.sdn.lab import OvsLab
from vnet.bench.sdn.perfbench import Setup, perfbench_binary, run_perfbench


def one(lab: OvsLab, pb: Path, label: str, binary: str, rate: int, tenants: int, dur: float) -> None:
    via = "ovs" if binary == "ovs" else "hv"
    setup = Setup("packet-out-rate", via, True, tenants, rate)
    cpu = {"ovs-vswitchd": lab.pids["ovs-vswitchd"]}

    def go() -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            return run_perfbench(
                lab, pb, setup, duration=dur, trim=dur / 6, version="1.3",
                cpu_pids=list(cpu.values()), records=Path(tmp),
            )

    if via == "ovs":
        rep = go()
    else:
        with hypervisor(lab, Path(binary), HvConfig(tenants), dur + 60) as hv:
            cpu["hypervisor"] = hv.pid
            rep = go()
    lat, tot = rep["totals"]["latency"], rep["totals"]
    cpus = {c["pid"]: round(c["percent_of_core"], 1) for c in rep.get("cpu", [])}
    print(json.dumps({
        "series": label, "p50": round(lat["p50_us"]), "p90": round(lat.get("p90_us", 0)),
        "p99": round(lat["p99_us"]), "lost": tot["lost"], "sent": tot["sent"],
        "cpu_pct": [cpus.get(p) for p in cpu.values()],
        "load": Path("/proc/loadavg").read_text().split()[0],
    }), flush=True)


def main() -> None:
    rate, tenants, dur, rounds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    series = dict(a.split("=", 1) for a in sys.argv[5:])  # label=binary, or label=ovs
    pb = perfbench_binary()
    with OvsLab() as lab:
        for _ in range(rounds):
            for label, binary in series.items():
                one(lab, pb, label, binary, rate, tenants, dur)


if __name__ == "__main__":
    main()
