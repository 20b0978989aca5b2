"""FRRouting daemons inside a namespace: started as our children, recorded, stopped by PID.

One instance per node: its daemons share a directory (configuration files,
PID files, the zebra API socket, the vty sockets) that vtysh reaches without
entering the namespace. The daemons run in the foreground as children of the
caller (no -d), so a death is seen at once and nothing outlives its owner
unnoticed; they drop to the `frr` user, as Debian's package runs them, so the
directory belongs to that user and its parents are traversable.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path
from typing import Any

from vnet.tools import processes, procfs
from vnet.tools.durable import replace_durably
from vnet.tools.errors import ToolError

FRR_LIBEXEC = Path("/usr/lib/frr")
VTYSH = "vtysh"
FRR_USER = "frr"
# where instances live: below /run so the frr user can traverse to them (an agent's
# state directory is private to root); one folder per owner scope, then per node
RUN_ROOT = Path("/run/vnet-frr")
RECORDS = "processes.json"
ZSERV = "zserv.api"  # zebra's API socket, in the instance's directory
# bfdd's control socket, there too: its default is one path for the whole machine
# (/var/run/frr/bfdd.sock), which every VR's bfdd took over from the one started before
BFDCTL = "bfdd.sock"


def installed() -> str | None:
    """None if FRR can run here, else what is missing."""
    if not (FRR_LIBEXEC / "zebra").exists():
        return f"FRRouting is not installed ({FRR_LIBEXEC / 'zebra'} is missing; apt install frr)"
    if shutil.which(VTYSH) is None:
        return "vtysh is not on PATH (apt install frr)"
    try:
        pwd.getpwnam(FRR_USER)
    except KeyError:
        return f"the user {FRR_USER!r} that FRR runs as does not exist"
    return None


def instance_dir(scope: str, node: str) -> Path:
    return RUN_ROOT / scope / node


def prepare_dir(directory: Path, files: dict[str, str]) -> None:
    """Write the daemons' configuration files into a fresh directory the frr user owns."""
    directory.mkdir(parents=True, exist_ok=True)
    for parent in (RUN_ROOT, *[p for p in directory.parents if RUN_ROOT in p.parents]):
        parent.chmod(0o755)
    user = pwd.getpwnam(FRR_USER)
    os.chown(directory, user.pw_uid, user.pw_gid)
    directory.chmod(0o750)
    for name, text in files.items():
        path = directory / name
        path.write_text(text)
        os.chown(path, user.pw_uid, user.pw_gid)


def start_daemon(ns: str, daemon: str, directory: Path) -> subprocess.Popen[bytes]:
    """Start one daemon in the foreground inside `ns` (and its cgroup, by spawn)."""
    argv = [
        str(FRR_LIBEXEC / daemon),
        "-f",
        str(directory / f"{daemon}.conf"),
        "-i",
        str(directory / f"{daemon}.pid"),
        "-z",
        str(directory / ZSERV),
        "--vty_socket",
        str(directory),
        "-P",
        "0",  # no vty TCP port: vtysh uses the socket
    ]
    if daemon == "bfdd":
        argv += ["--bfdctl", str(directory / BFDCTL)]
    with open(directory / f"{daemon}.out", "ab") as out:
        return processes.spawn(ns, argv, stdout=out, stderr=subprocess.STDOUT)


def zebra_listening(ns: str, directory: Path) -> bool:
    """Whether the instance's zebra accepts its clients: a daemon that finds nobody there
    tries again only 10 s later (FRR's zclient), and its routes wait as long."""
    return procfs.unix_listening(ns, str(directory / ZSERV))


def save_records(directory: Path, records: list[processes.ProcessRecord]) -> None:
    # whole or not at all: a torn file would hide the daemons from `stop_recorded`
    replace_durably(directory / RECORDS, json.dumps([r.to_dict() for r in records]).encode())


def stop_recorded(directory: Path) -> int:
    """Stop the daemons an owner recorded in `directory` (a crashed owner's leftovers) and
    remove the directory; how many were still running."""
    stopped = 0
    try:
        records = json.loads((directory / RECORDS).read_text())
    except (OSError, ValueError):
        records = []
    for r in records:
        stopped += processes.stop(processes.ProcessRecord(**r))
    shutil.rmtree(directory, ignore_errors=True)
    return stopped


def stop_scope(scope: str) -> int:
    """Every instance recorded under an owner's scope (a lab's agent), stopped and removed."""
    root = RUN_ROOT / scope
    if not root.is_dir():
        return 0
    stopped = sum(stop_recorded(d) for d in root.iterdir() if d.is_dir())
    shutil.rmtree(root, ignore_errors=True)
    return stopped


def vtysh_json(directory: Path, commands: list[str], timeout: float = 3) -> list[Any]:
    """`show ... json` commands of an instance in one vtysh run, each parsed (in order);
    ToolError if it does not answer in time or answers something else than JSON."""
    argv = [VTYSH, "--vty_socket", str(directory)]
    for command in commands:
        argv += ["-c", command]
    out = processes.check_output(argv, timeout=timeout)
    decoder, parsed, at = json.JSONDecoder(), [], 0
    try:
        while len(parsed) < len(commands):
            while at < len(out) and out[at].isspace():
                at += 1
            value, at = decoder.raw_decode(out, at)
            parsed.append(value)
    except ValueError as err:
        raise ToolError(f"vtysh {commands!r}: not JSON at {at}: {out[at : at + 200]!r}") from err
    return parsed


def ospf_neighbors(answer: Any) -> list[tuple[str, dict[str, Any]]]:
    """The (router id, entry) pairs of `show ip ospf neighbor json`: FRR 8.4 gives each
    router id one entry, or a list of them when it is a neighbour on several networks."""
    out = []
    for rid, entries in ((answer or {}).get("neighbors") or {}).items():
        out += [(rid, e) for e in (entries if isinstance(entries, list) else [entries])]
    return out


def neighbor_state(entry: dict[str, Any]) -> str:
    """An OSPF neighbour's state without its role ("Full/DR" is "Full"), either version."""
    return str(entry.get("nbrState") or entry.get("state", "")).split("/")[0]
