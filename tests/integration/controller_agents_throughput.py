"""Throughput of the controller's transactions across agents, grouped and one by one
(issue 12, part 6; the goal: >= 100 creates/s at 100 simultaneous requests on 4 hosts).

Not a test (no speed assertions in tests): a measurement on a real lab of N hosts in a
line, each request putting one connection's pieces on every host (the longest path),
`on_committed` empty (the database is not part of this figure). Run as root:

    .venv/bin/python -m tests.integration.controller_agents_throughput --hosts 4 \\
        --requests 100 --concurrency 1 10 100
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from vnet.controller.agents.netconf import NetconfSouthbound
from vnet.controller.agents.realise import Agents, HostChange

from .conftest import Labs
from .controller_agents_support import Lab, start_lab


async def run_series(
    lab: Lab, group: bool, requests: int, concurrency: int, series: str
) -> dict[str, float]:
    names = [f"vt{series}{i}" for i in range(requests)]
    changes = lab.changes(*names, bandwidth="1mbit")
    agents = Agents(NetconfSouthbound(lab.endpoints()), confirm_timeout=60, group=group)
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(request: str, change: list[HostChange]) -> None:
        async with gate:
            start = time.perf_counter()
            await agents.transaction(request, change)
            latencies.append(time.perf_counter() - start)

    try:
        await agents.transaction("warm-up", [HostChange(h, delete=("none",)) for h in lab.hosts])
        groups_before = agents.groups
        start = time.perf_counter()
        await asyncio.gather(*(one(f"req-{n}", changes[n]) for n in names))
        elapsed = time.perf_counter() - start
        groups = agents.groups - groups_before
        release = [HostChange(h, delete=tuple(names)) for h in lab.hosts]
        await agents.transaction(f"release-{series}", release)
    finally:
        await agents.close()
    latencies.sort()
    return {
        "per_s": requests / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000,
        "transactions": groups,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        labs = Labs(Path(tmp))
        lab_iter = start_lab(labs, args.hosts)
        lab = next(lab_iter)
        try:
            print(f"{args.hosts} hosts, {args.requests} requests per series, path over all hosts")
            print("grouped  concurrency  requests/s  p50 ms  p99 ms  transactions")
            for repeat in range(args.repeat):
                for concurrency in args.concurrency:
                    for group in (False, True):
                        series = f"{repeat}{concurrency}{int(group)}"
                        r = asyncio.run(run_series(lab, group, args.requests, concurrency, series))
                        print(
                            f"{'yes' if group else 'no':7}  {concurrency:11}  {r['per_s']:10.1f}"
                            f"  {r['p50_ms']:6.1f}  {r['p99_ms']:6.1f}  {r['transactions']:12.0f}",
                            flush=True,
                        )
        finally:
            labs.cleanup()


if __name__ == "__main__":
    main()
