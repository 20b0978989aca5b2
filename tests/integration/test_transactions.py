"""Failures leave the kernel as it was: injected errors, kill -9, bad input;
and teardown removes exactly what vnet made."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from vnet.lab import lab as labmod
from vnet.lab import probes
from vnet.lab.topology_file import load_topology
from vnet.substrate import (
    ApplyError,
    Kernel,
    lab_placement,
    namespace,
    nsfs,
    observe,
    plan,
    realize,
)
from vnet.substrate.namespace import REMNANT_AGE
from vnet.tools import processes

from .conftest import VNET, Labs, lab_namespaces, require_tools, vnet
from .faulty_vnet import fail_at


def pending(path: Path) -> list[str]:
    """What `lab up` would still do: empty when the kernel matches the file."""
    topo = load_topology(path)
    where = lab_placement(topo.name)
    with Kernel() as k:
        return [
            op.describe()
            for op in plan(realize(topo, where), observe(k, where.scope, where.prefix).state)
        ]


def snapshot(name: str) -> object:
    where = lab_placement(name)
    with Kernel() as k:
        return observe(k, where.scope, where.prefix).state


@pytest.mark.parametrize("step", [0, 30, 60])
def test_injected_failure_on_a_new_lab_leaves_nothing(labs: Labs, step: int) -> None:
    name, path = labs.file("two-tenants.yaml")
    with pytest.raises(ApplyError) as info:
        labmod.up(path, fault=fail_at(step))
    assert info.value.step == step
    assert lab_namespaces(name) == [], "rollback left namespaces"


def test_injected_failure_while_changing_a_running_lab_restores_it(labs: Labs) -> None:
    """Remove a router (its namespace goes) and add an end host, then fail at the last step."""
    name, path = labs.file("two-tenants.yaml")
    labmod.up(path)
    before = snapshot(name)
    labs.rewrite(
        path,
        lambda s: s.replace("  - name: blue-r1\n", "  - name: blue-r9\n").replace(
            "endhosts:\n",
            "endhosts:\n  - {name: red-c, host: h2, network: red-lan2, ipv4: 10.2.0.9/24}\n",
        ),
    )
    steps = len(pending(path))
    assert steps > 5
    with pytest.raises(ApplyError):
        labmod.up(path, fault=fail_at(steps - 1))
    assert snapshot(name) == before, "the running lab was not restored"
    assert probes.fping(f"vnet-{name}-blue-a", "10.2.0.3", count=2).received == 2


def test_cli_reports_the_failed_step_and_exit_code(labs: Labs) -> None:
    name, path = labs.file("two-tenants.yaml")
    done = vnet("lab", "up", str(path), env={"VNET_TEST_FAIL_AT_STEP": "12"}, check=False)
    assert done.returncode == 1
    assert "step 13 failed" in done.stderr and "undone" in done.stderr
    assert lab_namespaces(name) == []


def _start_and_kill_mid_apply(path: Path, step: int) -> None:
    proc = subprocess.Popen(
        [VNET, "lab", "up", str(path)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "VNET_TEST_HANG_AT_STEP": str(step)},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "holding at step" in line, line
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(5)


def test_kill_9_during_apply_then_up_again_reconciles(labs: Labs) -> None:
    require_tools("fping")
    name, path = labs.file("two-tenants.yaml")
    _start_and_kill_mid_apply(path, 25)
    assert lab_namespaces(name), "the crash should have left a partial lab"
    assert pending(path), "a partial lab differs from the file"
    labmod.up(path)
    assert pending(path) == []
    assert probes.fping(f"vnet-{name}-red-a", "10.2.0.2", count=2).received == 2


def test_kill_9_during_apply_then_down_removes_everything(labs: Labs) -> None:
    name, path = labs.file("two-tenants.yaml")
    _start_and_kill_mid_apply(path, 40)
    assert lab_namespaces(name)
    vnet("lab", "down", name)
    assert lab_namespaces(name) == []


def test_crash_remnant_mount_point_is_cleaned(labs: Labs) -> None:
    """A crash between creating /run/netns/X and binding it leaves an empty file."""
    name, path = labs.file("two-tenants.yaml")
    remnant = Path(nsfs.path(f"vnet-{name}-red-a"))
    remnant.parent.mkdir(exist_ok=True)
    remnant.touch()
    old = time.time() - 2 * REMNANT_AGE  # a crash's remnant is old; a young one is let be
    os.utime(remnant, (old, old))
    labmod.up(path)
    assert pending(path) == []


def test_a_mount_point_being_bound_is_not_taken_for_a_remnant(labs: Labs) -> None:
    """Agents of one lab share its prefix and start together: a scan that sees another's
    mount point between its creation and its binding must leave it alone (it deleted it)."""
    name, _ = labs.file("two-tenants.yaml")
    young = Path(nsfs.path(f"vnet-{name}-being-made"))
    young.parent.mkdir(exist_ok=True)
    young.touch()
    try:
        with Kernel() as k:
            scan = namespace.read(k, f"vnet-{name}-")
            assert young.name not in scan.remnants and young.exists()
            old = time.time() - 2 * REMNANT_AGE
            os.utime(young, (old, old))
            assert young.name in namespace.read(k, f"vnet-{name}-").remnants
    finally:
        young.unlink(missing_ok=True)


def test_teardown_touches_nothing_foreign(labs: Labs) -> None:
    """A look-alike namespace without vnet's mark, a foreign namespace with its own veth
    pair, and a process of someone else inside a lab node all survive `lab down`."""
    name, path = labs.file("two-tenants.yaml")
    foreign = f"fgn-{name}"
    lookalike = f"vnet-{name}-intruder"
    for ns in (foreign, lookalike):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(
            ["ip", "-n", foreign, "link", "add", "fa", "type", "veth", "peer", "name", "fb"],
            check=True,
        )
        labmod.up(path)
        squatter = processes.spawn(f"vnet-{name}-red-a", ["sleep", "30"])
        try:
            result = labmod.down(name)
            assert squatter.poll() is None, "down must not kill processes it did not start"
            assert f"vnet-{name}-red-a" in result.lingering
        finally:
            processes.stop_child(squatter)
        assert lab_namespaces(name) == [lookalike]
        links = subprocess.run(
            ["ip", "-n", foreign, "-br", "link"], capture_output=True, text=True, check=True
        ).stdout
        assert "fa@fb" in links and "fb@fa" in links
    finally:
        for ns in (foreign, lookalike):
            subprocess.run(["ip", "netns", "del", ns], check=False)


def test_bad_file_is_rejected_before_anything_is_created(labs: Labs) -> None:
    name, path = labs.file(
        "two-tenants.yaml", lambda s: s.replace("ipv4: 10.2.0.254/24", "ipv4: 10.9.0.254/24")
    )
    done = vnet("lab", "up", str(path), check=False)
    assert done.returncode == 2
    assert f"{path}:" in done.stderr and "outside" in done.stderr
    assert "nothing was created" in done.stderr
    # this lab's own names only: other labs (a parallel worker's) come and go meanwhile
    assert lab_namespaces(name) == [] and name not in labmod.running_labs()


def test_dry_run_prints_exactly_what_up_does(labs: Labs) -> None:
    name, path = labs.file("two-tenants.yaml")
    dry = vnet("lab", "up", "--dry-run", str(path)).stdout.splitlines()
    assert lab_namespaces(name) == [], "a dry run must change nothing"
    printed = [line for line in dry if not line.startswith("#")]
    applied = [op.describe() for op in labmod.up(path).ops]
    assert printed == applied


def test_em_testbed_reaches_end_to_end_in_both_tenants(labs: Labs) -> None:
    require_tools("fping")
    name, path = labs.file("em-testbed.yaml")
    t = time.perf_counter()
    labmod.up(path)
    assert time.perf_counter() - t < 60
    for src, dst in (("hs", "10.10.255.1"), ("hs", "fd00:10:ff::1"), ("b-hs", "10.20.255.1")):
        result = probes.fping(f"vnet-{name}-{src}", dst, count=2)
        assert result.received == 2, f"{src} -> {dst}"
    # the tenants share only the substrate
    assert probes.fping(f"vnet-{name}-hs", "10.20.255.1", count=2).received == 0


def test_ipv6_underlay_carries_tenants_at_mtu_1430(labs: Labs) -> None:
    require_tools("fping", "ping")
    name, path = labs.file(
        "two-tenants.yaml", lambda s: s.replace("hosts:\n", "underlay: {family: ipv6}\nhosts:\n", 1)
    )
    labmod.up(path)
    assert pending(path) == []
    red_a = f"vnet-{name}-red-a"
    assert probes.fping(red_a, "10.2.0.2", count=2).received == 2
    assert probes.fping(red_a, "fd00:2::2", count=2).received == 2
    assert probes.df_ping(red_a, "10.2.0.2", 1430 - 28)
    vxlan = subprocess.run(
        ["ip", "-n", f"vnet-{name}-h1", "-d", "link", "show", "vx102"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "local fd00:200::1" in vxlan and "mtu 1430" in vxlan
