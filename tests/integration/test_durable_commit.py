"""An acknowledged change is a durable change (issue 17, finding 1): with the agent's state
directory full (ENOSPC) or read-only (EROFS), an edit over NETCONF (ncclient), RESTCONF
(curl) and SNMP (Net-SNMP snmpset) is refused, and the VR is in neither the kernel nor
running, no temporary file is left, and it is still absent after a restart.

The state directory is a 1 MB tmpfs made for the test (filled, or covered by a read-only
bind mount of itself) and unmounted after it."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ncclient.operations.rpc import RPCError

from vnet.agent.datastore.persist import JOURNAL_FILE, RUNNING_FILE, STAGED_FILE
from vnet.lab.sandbox import HostSandbox, SandboxAgent
from vnet.substrate import nsfs
from vnet.tools.wait import wait_until

from .agent_support import NETWORK_XML, AgentUnderTest, running_agent
from .conftest import require_tools, unique_lab
from .faulty_vnet import HANG_ENV
from .snmp_support import NS, V2_RW, create_args, next_index, snmp, vr_xml
from .test_restconf import JSON_T, curl

SNMP = {"ro_communities": ["public"], "rw_communities": ["private"]}
KEPT = "keep"  # a VR made while the disk was fine: a refused delete must keep it


@contextlib.contextmanager
def agent_on_small_disk() -> Iterator[AgentUnderTest]:
    host = HostSandbox(scope=unique_lab())
    ports = {"netconf": AgentUnderTest.netconf_port, "restconf": AgentUnderTest.restconf_port}
    agent = SandboxAgent(
        host,
        {"ports": ports, "snmp": SNMP},
        user=AgentUnderTest.user,
        password=AgentUnderTest.password,
    )
    agent.state_dir.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "vnet-test", agent.state_dir], check=True
    )
    try:
        host.create()
        agent.start("netconf,restconf,snmp")
        yield AgentUnderTest(agent)
    finally:
        agent.stop()
        subprocess.run(["umount", agent.state_dir], check=False)
        problems = host.cleanup()
        assert not problems, f"the test left things behind: {problems}"


def fill(directory: Path) -> None:
    """Write a filler file until the file system says ENOSPC."""
    with (directory / "filler").open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC, err


def read_only(directory: Path) -> None:
    """A read-only bind mount over the directory: new writes get EROFS (the agent's open
    log file keeps working through the mount underneath)."""
    subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], check=True)


@contextlib.contextmanager
def broken_disk(a: AgentUnderTest, how: str) -> Iterator[None]:
    if how == "full":
        fill(a.state_dir)
    else:
        read_only(a.state_dir)
    try:
        yield
    finally:
        if how == "full":
            (a.state_dir / "filler").unlink()
        else:
            subprocess.run(["umount", str(a.state_dir)], check=True)


def running_routers(a: AgentUnderTest) -> list[str]:
    with a.netconf() as m:
        data = m.get_config("running").data
        return sorted(n.text for n in data.iterfind(f".//{{{NS}}}router/{{{NS}}}name"))


def router_json(name: str, address: str) -> str:
    itf = {"name": "eth0", "network": "n1", "ipv4": address}
    return json.dumps({"vnet-router:router": [{"name": name, "interface": [itf]}]})


def refused_edits(a: AgentUnderTest) -> dict[str, str]:
    """One create per protocol and a NETCONF delete, on the broken disk: what each answered."""
    answers = {}
    with a.netconf() as m:
        for what, config in (
            ("netconf create", vr_xml("vnc", extra=_itf("10.1.0.11/24"))),
            ("netconf delete", vr_xml(KEPT, op="delete")),
        ):
            with pytest.raises(RPCError) as info:
                m.edit_config(target="running", config=config)
            answers[what] = f"{info.value.tag}: {info.value.message}"
    r = curl(
        a, "POST", "/restconf/data/vnet-router:routers", router_json("vrc", "10.1.0.12/24"), JSON_T
    )
    answers["restconf"] = f"{r.status}: {r.body}"
    idx = next_index(a, V2_RW)
    done = snmp(a, "snmpset", V2_RW, *create_args(idx, "vsn", "10.1.0.13/24"), check=False)
    answers["snmp"] = f"{done.returncode}: {done.stdout}{done.stderr}"
    return answers


def _itf(address: str) -> str:
    return f"<interface><name>eth0</name><network>n1</network><ipv4>{address}</ipv4></interface>"


def assert_nothing_changed(a: AgentUnderTest, when: str, also: tuple[str, ...] = ()) -> None:
    """Only KEPT (and the VRs `also` made since) is in running and the kernel."""
    assert running_routers(a) == sorted([KEPT, *also]), f"running changed ({when})"
    for name in ("vnc", "vrc", "vsn"):
        assert not nsfs.exists(a.node_ns(name)), f"VR {name} is in the kernel ({when})"
    for name in (KEPT, *also):
        assert nsfs.exists(a.node_ns(name)), f"VR {name} is not in the kernel ({when})"


@pytest.mark.parametrize("how", ["full", "read-only"])
def test_a_refused_edit_changes_nothing_on_any_protocol(how: str) -> None:
    require_tools("curl", "snmpset", "snmpget")
    with agent_on_small_disk() as a:
        with a.netconf() as m:
            m.edit_config(target="running", config=NETWORK_XML)
            m.edit_config(target="running", config=vr_xml(KEPT, extra=_itf("10.1.0.10/24")))
        with broken_disk(a, how):
            answers = refused_edits(a)
            left = sorted(p.name for p in a.state_dir.iterdir() if "running" in p.name)
            # reads keep working on the broken disk
            assert_nothing_changed(a, f"after the refusals; they answered {answers}")
        assert set(left) <= {RUNNING_FILE, JOURNAL_FILE}, f"temporary files left: {left}"
        reason = "No space left on device" if how == "full" else "Read-only file system"
        for what in ("netconf create", "netconf delete"):
            assert answers[what].startswith("operation-failed:"), answers
            assert reason in answers[what] and "nothing was changed" in answers[what], answers
        assert answers["restconf"].startswith("500:") and reason in answers["restconf"], answers
        assert "commitFailed" in answers["snmp"], answers
        with a.netconf() as m:  # the repaired disk takes edits again, without a restart
            m.edit_config(target="running", config=vr_xml("later", extra=_itf("10.1.0.14/24")))
        a.sandbox.stop()
        a.sandbox.start("netconf,restconf,snmp")
        assert_nothing_changed(a, "after a restart", also=("later",))


def test_kill_9_in_the_middle_of_a_commit_is_undone_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent holds at a kernel step of a commit (the test hook), part of the VR in the
    kernel and nothing of it in the journal yet; kill -9; the next start takes the partial
    VR out of the kernel: the commit never happened."""
    with running_agent(tmp_path, frontends="netconf") as a:
        with a.netconf() as m:
            m.edit_config(target="running", config=NETWORK_XML)
        a.sandbox.stop()
        monkeypatch.setenv(HANG_ENV, "2")  # the agent's commits hold before their 3rd step
        a.sandbox.start("netconf")
        monkeypatch.delenv(HANG_ENV)
        m = a.netconf()  # not closed: the agent dies under it
        torn = vr_xml("torn", extra=_itf("10.1.0.20/24"))
        edit = threading.Thread(target=_edit_quietly, args=(m, torn))
        edit.start()
        wait_until(
            lambda: "holding at step 2" in a.sandbox.log.read_text(errors="replace"),
            30,
            "the agent holding in the middle of the commit",
        )
        assert nsfs.exists(a.node_ns("torn"))
        assert b"torn" not in (a.state_dir / JOURNAL_FILE).read_bytes()
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        edit.join(30)
        a.sandbox.start("netconf")
        assert running_routers(a) == []
        assert not nsfs.exists(a.node_ns("torn")), "the partial VR is still in the kernel"
        assert not (a.state_dir / STAGED_FILE).exists()


def _edit_quietly(m: Any, config: str) -> None:
    """The edit the agent dies in: its answer is a broken connection."""
    with contextlib.suppress(Exception):
        m.edit_config(target="running", config=config)


def test_kill_9_among_concurrent_commits_keeps_every_acknowledged_one(tmp_path: Path) -> None:
    """Four NETCONF sessions create VRs one edit at a time, so their commits share fsyncs
    (group commit); kill -9 while they run. After the restart every VR whose edit was
    answered <ok/> is in running and in the kernel."""
    writers, per_writer = 4, 40
    with running_agent(tmp_path, frontends="netconf") as a:
        with a.netconf() as m:
            m.edit_config(target="running", config=NETWORK_XML)
        acknowledged: list[str] = []
        stop = threading.Event()

        def write(w: int) -> None:
            with contextlib.suppress(Exception), a.netconf() as session:
                for k in range(per_writer):
                    if stop.is_set():
                        return
                    name, host = f"g{w}x{k}", 20 + w * per_writer + k
                    config = vr_xml(name, extra=_itf(f"10.1.0.{host}/24"))
                    session.edit_config(target="running", config=config)
                    acknowledged.append(name)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: len(acknowledged) >= 20, 120, "20 edits answered")
        finally:
            os.kill(a.proc.pid, signal.SIGKILL)
            stop.set()
            a.proc.wait(10)
            for t in threads:
                t.join(60)
        answered = list(acknowledged)
        a.sandbox.start("netconf")
        kept = running_routers(a)
        assert set(answered) <= set(kept), f"lost: {sorted(set(answered) - set(kept))}"
        for name in kept:
            assert nsfs.exists(a.node_ns(name)), f"VR {name} is running but not in the kernel"
