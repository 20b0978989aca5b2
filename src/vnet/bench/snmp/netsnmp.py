"""The Net-SNMP command-line tools, one process per operation, inside the agent's namespace."""

from __future__ import annotations

import shutil
import time
from typing import Any

from vnet.bench.snmp import SnmpBenchError
from vnet.bench.snmp.workload import AUTH_KEY, COMMUNITY_RO, COMMUNITY_RW, PRIV_KEY, USER
from vnet.lab.sandbox import SandboxAgent
from vnet.tools import processes


def cli_missing() -> str | None:
    missing = [t for t in ("snmpset", "snmpbulkget", "snmpbulkwalk") if not shutil.which(t)]
    return f"not installed: {', '.join(missing)} (apt-get install snmp)" if missing else None


def cli_auth(series: str, write: bool) -> list[str]:
    if series == "v2c":
        return ["-v2c", "-c", COMMUNITY_RW if write else COMMUNITY_RO]
    return [
        "-v3",
        "-l",
        "authPriv",
        "-u",
        USER,
        "-a",
        "SHA",
        "-A",
        AUTH_KEY,
        "-x",
        "AES",
        "-X",
        PRIV_KEY,
    ]


def cli(agent: SandboxAgent, argv: list[str]) -> float:
    t = time.perf_counter()
    done = processes.run(agent.host.namespace, ["env", "MIBS=", *argv], timeout=120)
    elapsed = time.perf_counter() - t
    if done.returncode != 0 or "Error" in done.stderr:
        raise SnmpBenchError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout[-300:]}")
    return elapsed


def cli_set_args(pairs: list[tuple[str, Any]]) -> list[str]:
    out = []
    for oid, value in pairs:
        kind = "i" if value.__class__.__name__ == "Integer32" else "s"
        out += [oid, kind, str(value)]
    return out
