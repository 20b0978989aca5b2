"""Lab crash safety (issue 17, finding 3): `vnet lab up` killed with SIGKILL right after it
spawned an agent (each agent in turn), then `vnet lab down` stops every agent the lab
started and removes everything; `vnet lab up` after such a crash works too. `lab up`
killed inside the write of its record leaves a staging file that `lab down` removes, and
the mount point of a namespace an agent was stopped in the middle of making goes too."""

from __future__ import annotations

import errno
import signal
from pathlib import Path

import pytest

from vnet.lab import lab as labmod
from vnet.lab import record as records
from vnet.substrate import nsfs, rtquery
from vnet.substrate.kernel import Kernel, NetlinkError, NotANamespace
from vnet.tools.wait import WaitTimeout, wait_until

from .conftest import Labs, lab_namespaces, vnet
from .faulty_vnet import KILL_ENV, KILL_IN_WRITE_ENV

HOSTS = 2  # examples/managed.yaml: an agent on h1 and on h2


def agent_processes(lab: str) -> dict[int, str]:
    """Every process (PID -> command line) started for this lab's agents, found by the
    agents' configuration paths in their command lines."""
    marker = f"{records.RECORD_DIR}/{lab}/agents/"
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in argv:
            found[int(proc.name)] = argv
    return found


def none_left(lab: str) -> None:
    try:
        wait_until(lambda: not agent_processes(lab), 10, "the lab's agents gone", interval=0.1)
    except WaitTimeout:
        raise AssertionError(f"agents still running: {agent_processes(lab)}") from None


def crash_up(path: Path, after_spawn: int) -> None:
    done = vnet("lab", "up", str(path), env={KILL_ENV: str(after_spawn)}, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.mark.parametrize("after_spawn", range(HOSTS))
def test_down_after_a_crash_right_after_a_spawn_stops_every_agent(
    labs: Labs, after_spawn: int
) -> None:
    name, path = labs.file("managed.yaml")
    crash_up(path, after_spawn)
    vnet("lab", "down", name)
    none_left(name)
    assert lab_namespaces(name) == []


def test_up_after_a_crash_right_after_a_spawn_works(labs: Labs) -> None:
    name, path = labs.file("managed.yaml")
    crash_up(path, 0)
    vnet("lab", "up", str(path))
    status = labmod.status(name)
    assert {h: a["running"] for h, a in status.agents.items()} == {"h1": True, "h2": True}
    assert len(agent_processes(name)) == HOSTS, agent_processes(name)
    vnet("lab", "down", name)
    none_left(name)


def test_down_after_a_crash_in_the_record_write_leaves_no_staging_file(labs: Labs) -> None:
    name, path = labs.file("managed.yaml")
    done = vnet("lab", "up", str(path), env={KILL_IN_WRITE_ENV: "1"}, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    staging = records.RECORD_DIR / f"{name}.json.tmp"
    assert staging.exists() and staging.stat().st_size == 0  # what the crash leaves
    vnet("lab", "down", name)
    none_left(name)
    assert lab_namespaces(name) == []
    left = sorted(p.name for p in records.RECORD_DIR.iterdir() if p.name.startswith(name))
    assert left == [], left


def test_down_removes_the_mount_point_a_stopped_agent_left_unbound(labs: Labs) -> None:
    # what `lab down` left in a CI run: the agent of h1, stopped while its first reconcile
    # made r1, left r1's mount point unbound, too young to be taken for a crash's remnant
    name, path = labs.file("managed.yaml")
    vnet("lab", "up", str(path))
    unbound, unmarked = f"vnet-{name}-r8", f"vnet-{name}-intruder"
    Path(nsfs.path(unbound)).touch()  # what dying between the two steps leaves
    nsfs.create(unmarked)  # a namespace, but not marked: not known to be the lab's
    try:
        done = vnet("lab", "down", name)
        assert f"removed {unbound}" in done.stdout
        assert lab_namespaces(name) == [unmarked]
    finally:
        nsfs.remove(unmarked)


def test_a_namespace_has_its_mark_before_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes an unmarked namespace impossible: the mark is set inside the new namespace
    before it is bound to its name (a process stopped in between leaves no namespace), and a
    mark the kernel refuses leaves no name behind."""
    name = "vnet-tmark-r1"
    seen: list[bool] = []
    ask = rtquery.acknowledged_here

    def marking(request: bytes) -> int:
        seen.append(nsfs.exists(name) and _is_namespace(name))  # bound already?
        return ask(request)

    monkeypatch.setattr(rtquery, "acknowledged_here", marking)
    with Kernel() as kernel:
        kernel.create_namespace(name, {}, "vnet:tmark:router:r1")
        try:
            assert seen == [False]
            assert kernel.namespace_mark(name) == "vnet:tmark:router:r1"
        finally:
            kernel.delete_namespace(name)
        monkeypatch.setattr(rtquery, "acknowledged_here", lambda request: errno.EPERM)
        with pytest.raises(NetlinkError):
            kernel.create_namespace(name, {}, "vnet:tmark:router:r1")
    assert nsfs.list_names("vnet-tmark-") == []


def _is_namespace(name: str) -> bool:
    with Kernel() as kernel:
        try:
            kernel.namespace_mark(name)
        except NotANamespace:
            return False
    return True
