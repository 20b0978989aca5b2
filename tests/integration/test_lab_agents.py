"""A lab whose hosts run agents: the file's VRs live in the agents' datastores,
VRs can be added over NETCONF through the management network, re-applying
the file keeps them, and `lab down` removes everything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ncclient import manager

from vnet.lab import lab as labmod
from vnet.lab import probes
from vnet.lab import record as records
from vnet.lab.access import agent_endpoint
from vnet.tools import processes

from .agent_support import netconf_connect
from .conftest import Labs, lab_namespaces, require_tools

NS = "urn:vnet:yang:vnet-router"


@pytest.fixture(scope="module")
def managed(module_labs: Labs) -> tuple[str, Path]:
    require_tools("fping")
    name, path = module_labs.file("managed.yaml")
    labmod.up(path)
    return name, path


def connect(lab: str, host: str) -> manager.Manager:
    ep = agent_endpoint(lab, host)
    return netconf_connect(ep.namespace, ep.address, ep.port, ep.user, ep.password)


@pytest.fixture
def h2(managed: tuple[str, Path]) -> Iterator[manager.Manager]:
    with connect(managed[0], "h2") as m:
        yield m


def test_agents_run_and_the_file_vr_forwards(managed: tuple[str, Path]) -> None:
    lab, _ = managed
    st = labmod.status(lab)
    assert {h: a["running"] for h, a in st.agents.items()} == {"h1": True, "h2": True}
    assert st.in_sync is True
    assert probes.fping(f"vnet-{lab}-pc1", "10.31.2.2", count=2).received == 2
    with connect(lab, "h1") as m:
        names = [n.text for n in m.get_config("running").data.iterfind(f".//{{{NS}}}name")]
    assert "r1" in names, "the file's VR is in h1's datastore"


def test_vr_created_over_netconf_survives_reapply(
    managed: tuple[str, Path], h2: manager.Manager
) -> None:
    lab, path = managed
    h2.edit_config(
        target="running",
        config=(
            f'<config><routers xmlns="{NS}"><router><name>r2</name><interface><name>eth0</name>'
            "<network>lan2</network><ipv4>10.31.2.253/24</ipv4></interface></router></routers>"
            "</config>"
        ),
    )
    assert probes.fping(f"vnet-{lab}-pc2", "10.31.2.253", count=2).received == 2
    assert labmod.up(path).ops == []
    assert any(n.name == "r2" for n in labmod.status(lab).nodes)
    assert probes.fping(f"vnet-{lab}-pc2", "10.31.2.253", count=2).received == 2


def test_networks_belong_to_the_lab_not_the_agent(h2: manager.Manager) -> None:
    from ncclient.operations import RPCError

    with pytest.raises(RPCError) as info:
        h2.edit_config(
            target="running",
            config=(
                f'<config><virtual-networks xmlns="{NS}"><network><name>x</name><tenant>t</tenant>'
                "<vni>9</vni></network></virtual-networks></config>"
            ),
        )
    assert info.value.tag == "access-denied" and "lab" in info.value.message


def test_editing_a_file_vr_restarts_only_its_agent(
    managed: tuple[str, Path], module_labs: Labs
) -> None:
    lab, path = managed
    pids = {h: a["pid"] for h, a in labmod.status(lab).agents.items()}
    stop = "  - name: r1\n    host: h1\n"
    module_labs.rewrite(path, lambda s: s.replace(stop, stop + "    admin_state: down\n"))
    try:
        labmod.up(path)
        after = {h: a["pid"] for h, a in labmod.status(lab).agents.items()}
        assert after["h2"] == pids["h2"] and after["h1"] != pids["h1"]
        assert probes.fping(f"vnet-{lab}-pc1", "10.31.2.2", count=2).received == 0
    finally:
        module_labs.rewrite(path, lambda s: s.replace("    admin_state: down\n", ""))
        labmod.up(path)
    assert probes.fping(f"vnet-{lab}-pc1", "10.31.2.2", count=2).received == 2


def test_down_stops_agents_and_removes_their_vrs(labs: Labs) -> None:
    name, path = labs.file("managed.yaml")
    labmod.up(path)
    record = labmod.read_record(name)
    assert record is not None
    procs = record.processes
    with connect(name, "h2") as m:
        m.edit_config(
            target="running",
            config=(
                f'<config><routers xmlns="{NS}"><router><name>r9</name><interface><name>eth0'
                "</name><network>lan1</network><ipv4>10.31.1.9/24</ipv4></interface></router>"
                "</routers></config>"
            ),
        )
    assert f"vnet-{name}-r9" in lab_namespaces(name)
    result = labmod.down(name)
    assert sorted(p.what for p in result.stopped) == ["agent h1", "agent h2"]
    assert not any(processes.is_running(p) for p in procs)
    assert lab_namespaces(name) == []
    assert not (records.RECORD_DIR / name).exists()


def test_down_stops_the_agents_started_before_up_failed(
    labs: Labs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each agent's PID is recorded as it is spawned, so a failing `up` leaves none behind."""
    name, path = labs.file("managed.yaml")
    prepare = labmod.agents.prepare

    def fail_on_h2(topo, host, *args):  # type: ignore[no-untyped-def]
        if host == "h2":
            raise RuntimeError("injected: preparing h2 failed")
        return prepare(topo, host, *args)

    monkeypatch.setattr(labmod.agents, "prepare", fail_on_h2)
    with pytest.raises(RuntimeError, match="injected"):
        labmod.up(path)
    record = labmod.read_record(name)
    assert record is not None and [p.what for p in record.processes] == ["agent h1"]
    assert processes.is_running(record.processes[0])
    result = labmod.down(name)
    assert [p.what for p in result.stopped] == ["agent h1"]
    assert not processes.is_running(record.processes[0])
    assert lab_namespaces(name) == []
