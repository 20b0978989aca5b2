"""`vnet vr` against a real agent, over NETCONF and over RESTCONF; ncclient and
the kernel check what the command line claims."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from vnet.client import Endpoint
from vnet.substrate import nsfs
from vnet.tools import processes

from .agent_support import NETWORK_XML, AgentUnderTest, running_agent
from .conftest import VNET

NS = "urn:vnet:yang:vnet-router"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentUnderTest]:
    with running_agent(tmp_path_factory.mktemp("vrcli")) as a:
        with a.netconf() as m:
            m.edit_config(target="running", config=NETWORK_XML)
        yield a


def netconf_view(a: AgentUnderTest) -> dict[str, dict[str, str]]:
    """name -> {admin-state, oper-state, index} as the agent's <get> shows them (ncclient)."""
    with a.netconf() as m:
        data = m.get(filter=("subtree", f'<routers xmlns="{NS}"/>')).data
    out = {}
    for r in data.iterfind(f".//{{{NS}}}router"):
        out[r.findtext(f"{{{NS}}}name")] = {
            k: r.findtext(f"{{{NS}}}{k}") for k in ("index", "admin-state", "oper-state")
        }
    return out


def via_args(a: AgentUnderTest, via: str) -> list[str]:
    if via == "netconf":
        return ["--via", "netconf", "--port", str(a.netconf_port)]
    return ["--via", "restconf", "--cacert", str(a.sandbox.config.restconf_cert_path)]


def vr(
    a: AgentUnderTest, via: str, *args: str, ok: bool = True, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """`vnet vr ...` from inside the agent's host, credentials from the environment.

    With `process`, the real `vnet` executable runs there, as a user would start it;
    otherwise the same command runs in this process (this thread enters the
    namespace), which spares the loaded machine a Python start per call.
    """
    env = {"VNET_AGENT_USER": a.user, "VNET_AGENT_PASSWORD": a.password}
    argv = [*args, *via_args(a, via)]
    if process:
        proc = processes.spawn(
            a.namespace,
            [VNET, "vr", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    else:
        from vnet.cli.vr_cmds import vr as vr_group

        with nsfs.entered(a.namespace):
            result = CliRunner().invoke(vr_group, argv, env=env)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        done = subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)
    if ok and done.returncode != 0:
        raise AssertionError(
            f"vnet vr {' '.join(argv)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
    return done


@pytest.mark.parametrize("via", ["netconf", "restconf"])
def test_create_list_show_stop_start_delete(agent: AgentUnderTest, via: str) -> None:
    name = f"c{via[0]}"  # cn / cr
    index = "31" if via == "netconf" else "32"
    last = "1" if via == "netconf" else "2"
    made = vr(
        agent,
        via,
        "create",
        name,
        "--index",
        index,
        "--json",
        "--network",
        f"n1:10.1.0.1{last}/24,fd00:1::1{last}/64",
        "--network",
        f"n2:10.2.0.1{last}/24",
        "--route",
        "10.9.0.0/16=10.1.0.254",
        process=True,
    )
    try:
        entry = json.loads(made.stdout)
        assert entry["name"] == name and entry["index"] == int(index), entry
        assert [i["network"] for i in entry["interface"]] == ["n1", "n2"]
        assert entry["interface"][0]["ipv6"] == f"fd00:1::1{last}/64"
        assert nsfs.exists(agent.node_ns(name))
        assert netconf_view(agent)[name]["oper-state"] == "running"

        table = vr(agent, via, "list", process=True).stdout
        row = next(line for line in table.splitlines() if f" {name} " in line)
        assert index in row and "running" in row and "eth0→n1" in row, table

        shown = json.loads(vr(agent, via, "show", name, "--json").stdout)
        assert shown["oper-state"] == "running"
        assert shown["route"] == [{"destination": "10.9.0.0/16", "next-hop": "10.1.0.254"}]
        stats = shown["interface"][0]["statistics"]
        assert set(stats) >= {"in-octets", "in-packets", "out-octets", "out-packets"}
        assert "interfaces" in vr(agent, via, "show", name).stdout  # the human form

        assert json.loads(vr(agent, via, "stop", name, "--json").stdout)["admin-state"] == "down"
        listed = {r["name"]: r for r in json.loads(vr(agent, via, "list", "--json").stdout)}
        assert listed[name]["admin-state"] == "down"
        assert listed[name]["oper-state"] == "stopped"
        assert netconf_view(agent)[name]["oper-state"] == "stopped"

        vr(agent, via, "start", name)
        assert netconf_view(agent)[name] == {
            "index": index,
            "admin-state": "up",
            "oper-state": "running",
        }
    finally:
        deleted = vr(agent, via, "delete", name, "--json", ok=False)
    assert deleted.returncode == 0, deleted
    assert json.loads(deleted.stdout) == {"name": name, "deleted": True}
    assert name not in netconf_view(agent)
    assert not nsfs.exists(agent.node_ns(name))


@pytest.mark.parametrize("via", ["netconf", "restconf"])
def test_agent_errors_exit_1_with_tag_path_and_message(agent: AgentUnderTest, via: str) -> None:
    bad = vr(
        agent, via, "create", "rbad", "--network", "nowhere:10.1.0.9/24", ok=False, process=True
    )
    assert bad.returncode == 1, bad
    assert "invalid-value" in bad.stderr, bad.stderr
    assert "interface" in bad.stderr and "network" in bad.stderr  # the error path
    assert "unknown network 'nowhere'" in bad.stderr
    missing = vr(agent, via, "stop", "ghost", "--json", ok=False)
    assert missing.returncode == 1, missing
    assert "ghost" in missing.stderr
    assert json.loads(missing.stdout)["error"]["error-path"], missing.stdout
    assert "rbad" not in netconf_view(agent)


def test_wrong_password_exits_1(agent: AgentUnderTest) -> None:
    for via in ("netconf", "restconf"):
        done = vr(agent, via, "list", "--password", "no", ok=False)
        assert done.returncode == 1, done
        assert "refused the login" in done.stderr, done.stderr


@pytest.mark.parametrize("via", ["netconf", "restconf"])
def test_lab_endpoint_is_reached_from_inside_its_namespace(
    agent: AgentUnderTest, via: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--lab/--host: the endpoint's namespace is entered (this test runs outside it)."""
    from vnet.cli.vr_cmds import vr as vr_group
    from vnet.lab import access

    asked: list[tuple[str, str]] = []

    def endpoint(lab: str, host: str, protocol: str) -> Endpoint:
        """What vnet.lab.access.agent_endpoint returns for this agent."""
        asked.append((lab, host))
        restconf = protocol == "restconf"
        return Endpoint(
            agent.address,
            agent.restconf_port if restconf else agent.netconf_port,
            agent.user,
            agent.password,
            agent.namespace,
            verify=str(agent.sandbox.config.restconf_cert_path) if restconf else True,
        )

    monkeypatch.setattr(access, "agent_endpoint", endpoint)
    runner = CliRunner()
    stale = {"VNET_AGENT_USER": "someone", "VNET_AGENT_PASSWORD": "else"}  # for another agent
    done = runner.invoke(
        vr_group, ["list", "--json", "--lab", "L", "--host", "h1", "--via", via], env=stale
    )
    assert done.exit_code == 0, done.output
    assert isinstance(json.loads(done.output), list)
    assert asked == [("L", "h1")]
    # the same address from here, outside the namespace, reaches nothing
    port = str(agent.netconf_port if via == "netconf" else agent.restconf_port)
    direct = runner.invoke(
        vr_group,
        [
            "list",
            "--via",
            via,
            "--address",
            agent.address,
            "--port",
            port,
            "--user",
            agent.user,
            "--password",
            agent.password,
            "--insecure",
            "--timeout",
            "3",
        ],
    )
    assert direct.exit_code == 1, direct.output


def test_pinned_ssh_host_key(agent: AgentUnderTest) -> None:
    import asyncssh

    key = asyncssh.read_private_key(str(agent.state_dir / "ssh_host_ed25519_key"))
    right = key.export_public_key().decode().strip()  # "ssh-ed25519 AAAA..."
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    assert isinstance(
        json.loads(vr(agent, "netconf", "list", "--json", "--hostkey", right).stdout), list
    )
    wrong = vr(agent, "netconf", "list", "--hostkey", other, ok=False)
    assert wrong.returncode == 1, wrong
    assert "host key" in wrong.stderr, wrong.stderr


def client_endpoint(a: AgentUnderTest, via: str) -> Any:
    if via == "netconf":
        return Endpoint(a.address, a.netconf_port, a.user, a.password, a.namespace)
    cert = str(a.sandbox.config.restconf_cert_path)
    return Endpoint(a.address, a.restconf_port, a.user, a.password, a.namespace, verify=cert)


@pytest.mark.parametrize("via", ["netconf", "restconf"])
def test_typed_client_returns_model_objects_and_typed_errors(
    agent: AgentUnderTest, via: str
) -> None:
    from vnet.client import ClientError, RouterState, connect
    from vnet.model import Interface, VirtualNetwork, VirtualRouter

    net = VirtualNetwork.model_validate({"name": "n9", "tenant": "a", "vni": 99})
    vr_ = VirtualRouter(
        name=f"rc{via[0]}",
        host="",
        interfaces=[Interface.model_validate({"network": "n9", "name": "eth0"})],
    )
    with connect(client_endpoint(agent, via), via) as client:
        client.create_network(net)
        assert net in client.networks()
        client.create_router(vr_)
        try:
            got = client.router(vr_.name)
            assert isinstance(got, RouterState) and got.oper_state == "running"
            assert got.router.interfaces == vr_.interfaces and got.router.index is not None
            with pytest.raises(ClientError) as info:
                client.create_router(vr_)
            assert info.value.tag == "data-exists" and info.value.path, info.value
        finally:
            client.delete_router(vr_.name)
            client.delete_network("n9")
        assert client.router(vr_.name) is None
        assert "n9" not in [n.name for n in client.networks()]


def test_netconf_client_candidate_lock_commit_and_discard(agent: AgentUnderTest) -> None:
    from vnet.client import ClientError, NetconfClient
    from vnet.model import VirtualRouter

    ep = client_endpoint(agent, "netconf")
    with nsfs.entered(agent.namespace), NetconfClient(ep) as a, NetconfClient(ep) as b:
        a.lock("candidate")
        try:
            with pytest.raises(ClientError) as info:
                b.lock("candidate")
            assert info.value.tag == "lock-denied"
            a.create_router(VirtualRouter(name="rcand", host=""), target="candidate")
            assert a.router("rcand") is None, "the candidate is not running"
            a.discard()
            assert "vnet-router:routers" not in a.get_config("candidate")
            a.create_router(VirtualRouter(name="rcand", host=""), target="candidate")
            a.commit()
            assert a.router("rcand", state=False) is not None
        finally:
            a.unlock("candidate")
            a.delete_router("rcand")
