"""Per-VR resources through a real agent: a NETCONF edit (ncclient) puts the limits into
the kernel's cgroups, RESTCONF (curl) shows the VR's CPU time and memory use as state,
a bad value is refused at its exact path, and deleting the VR removes its group
(issue 14, part 2)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from ncclient.operations.rpc import RPCError

from vnet.tools import cgroupfs, processes

from .agent_support import NETWORK_XML, AgentUnderTest, running_agent
from .conftest import require_tools

NS = "urn:vnet:yang:vnet-router"


def router_xml(name: str, resources: str) -> str:
    return (
        f'<config><routers xmlns="{NS}"><router><name>{name}</name><interface>'
        "<name>eth0</name><network>n1</network><ipv4>10.1.0.5/24</ipv4></interface>"
        f"<resources>{resources}</resources></router></routers></config>"
    )


def delete_xml(name: str) -> str:
    return (
        f'<config><routers xmlns="{NS}" xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0">'
        f'<router nc:operation="delete"><name>{name}</name></router></routers></config>'
    )


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    require_tools("curl")
    hs = cgroupfs.layout()
    missing = [c for c in ("cpu", "memory") if c not in hs]
    if missing:
        pytest.skip(f"this host offers no cgroup controller for {', '.join(missing)}")
    with running_agent(tmp_path_factory.mktemp("resources")) as a:
        with a.netconf() as m:
            m.edit_config(target="running", config=NETWORK_XML)
        yield a


def _groups(agent: AgentUnderTest, vr: str) -> list[Path]:
    return cgroupfs.node_groups(agent.node_ns(vr))


def _read(d: Path, v1: str, v2: str) -> str:
    h = next(h for h in cgroupfs.layout().values() if d.parent == h.parent)
    return (d / (v2 if h.version == 2 else v1)).read_text().strip()


def test_limits_reach_the_kernel_and_state_shows_the_use(agent: AgentUnderTest) -> None:
    with agent.netconf() as m:
        m.edit_config(
            target="running", config=router_xml("rc", "<cpu>0.5</cpu><memory>268435456</memory>")
        )
    groups = _groups(agent, "rc")
    try:
        hs = cgroupfs.layout()
        by_mount = {d.parent.parent: d for d in groups}
        cpu_dir, mem_dir = by_mount[hs["cpu"].mount], by_mount[hs["memory"].mount]
        quota = _read(cpu_dir, "cpu.cfs_quota_us", "cpu.max").split()[0]
        assert quota == "50000", groups
        assert _read(mem_dir, "memory.limit_in_bytes", "memory.max") == "268435456"
        # something that runs in the VR is counted
        processes.run(
            agent.node_ns("rc"),
            ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"],
            timeout=30,
        )
        got = processes.run(
            agent.namespace,
            ["curl", "-sS", "-k", "-u", f"{agent.user}:{agent.password}",
             f"https://{agent.address}:{agent.restconf_port}/restconf/data/vnet-router:routers/router=rc"],
            timeout=30,
        )  # fmt: skip
        res = json.loads(got.stdout)["vnet-router:router"][0]["resources"]
        assert float(res["cpu"]) == 0.5 and res["memory"] == "268435456", res
        assert int(res["cpu-time"]) > 0 and int(res["memory-used"]) >= 0, res
    finally:
        with agent.netconf() as m:
            m.edit_config(target="running", config=delete_xml("rc"))
    assert _groups(agent, "rc") == [], "the VR's group outlived it"


def test_a_bad_cpuset_is_refused_at_its_path_and_changes_nothing(agent: AgentUnderTest) -> None:
    with agent.netconf() as m, pytest.raises(RPCError) as info:
        m.edit_config(target="running", config=router_xml("rb", "<cpuset>3-1</cpuset>"))
    assert info.value.path == "/vr:routers/vr:router[vr:name='rb']/vr:resources/vr:cpuset", (
        info.value.path,
        info.value.message,
    )
    assert "ascend" in (info.value.message or ""), info.value.message
    assert _groups(agent, "rb") == []
