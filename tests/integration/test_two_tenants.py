"""Two hosts, two tenants with the same addresses: reachability, isolation, MTU,
idempotence and admin state, on real namespaces with fping, ping and iperf3."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from vnet.lab import demo, probes
from vnet.lab import lab as labmod
from vnet.lab.topology_file import load_topology
from vnet.tools import processes
from vnet.tools.wait import wait_until

from .conftest import Labs, require_tools, vnet


@pytest.fixture(scope="module")
def two_tenants(module_labs: Labs) -> tuple[str, Path]:
    require_tools("fping", "ping", "iperf3")
    name, path = module_labs.file("two-tenants.yaml")
    labmod.up(path)
    return name, path


def ns(lab: str, node: str) -> str:
    return f"vnet-{lab}-{node}"


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("red-a", "10.2.0.2"),
        ("red-a", "fd00:2::2"),
        ("blue-a", "10.2.0.3"),
        ("blue-a", "fd00:2::3"),
        ("red-b", "10.1.0.1"),
        ("blue-b", "fd00:1::1"),
    ],
)
def test_same_tenant_reaches_across_hosts(
    two_tenants: tuple[str, Path], src: str, dst: str
) -> None:
    lab, _ = two_tenants
    result = probes.fping(ns(lab, src), dst, count=3)
    assert result.received == 3, f"{src} -> {dst}: {result}"


def test_tenants_are_isolated_despite_equal_addresses(two_tenants: tuple[str, Path]) -> None:
    """Echo-request counters on every end host show who each probe reached."""
    _, path = two_tenants
    checks = demo.reachability(load_topology(path))
    cross = [c for c in checks if c.own_holder is None]
    assert cross, "the example must contain addresses only the other tenant has"
    bad = [c for c in checks if not c.as_expected]
    assert not bad, "\n".join(map(str, bad))


def test_isolation_holds_on_the_bridge_shortcuts(two_tenants: tuple[str, Path]) -> None:
    """red-a and blue-a share addresses and a host; each one's shortcut (tc, read by tc
    itself) leads only to its own tenant's router, and the echo counters agree."""
    lab, path = two_tenants
    for port, router_port in (("eh-red-a", "vr1i0"), ("eh-blue-a", "vr2i0")):
        shown = subprocess.run(
            ["tc", "-n", ns(lab, "h1"), "filter", "show", "dev", port, "ingress"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        targets = re.findall(rf"vnet:{lab} redirect (\S+)", shown)
        assert [t.split("@")[0] for t in targets] == [router_port], shown
    checks = demo.reachability(load_topology(path))
    bad = [c for c in checks if not c.as_expected]
    assert not bad, "\n".join(map(str, bad))


@pytest.mark.parametrize(("dst", "header"), [("10.2.0.2", 28), ("fd00:2::2", 48)])
def test_df_packet_of_the_advertised_mtu_arrives(
    two_tenants: tuple[str, Path], dst: str, header: int
) -> None:
    lab, _ = two_tenants
    mtu = 1450
    assert probes.df_ping(ns(lab, "red-a"), dst, mtu - header), f"DF ping of {mtu} to {dst}"


def test_oversized_df_packet_fails_loudly_not_silently(two_tenants: tuple[str, Path]) -> None:
    """One byte over the MTU: the sender gets an error at once instead of a silent drop."""
    lab, _ = two_tenants
    done = processes.run(
        ns(lab, "red-a"),
        ["ping", "-c", "1", "-W", "1", "-M", "do", "-s", "1423", "10.2.0.2"],
        timeout=5,
    )
    assert done.returncode != 0
    assert "message too long" in (done.stdout + done.stderr).lower()


def test_tcp_transfer_across_hosts(two_tenants: tuple[str, Path]) -> None:
    lab, _ = two_tenants
    result = probes.iperf3_tcp(ns(lab, "red-a"), ns(lab, "red-b"), "10.2.0.2", seconds=1)
    assert result.bits_per_second > 100e6, result


def test_reapplying_changes_nothing(two_tenants: tuple[str, Path]) -> None:
    _, path = two_tenants
    assert labmod.up(path).ops == []
    done = vnet("lab", "up", str(path))
    assert "nothing to do" in done.stdout


def test_status_lists_nodes_and_matches_the_file(two_tenants: tuple[str, Path]) -> None:
    lab, _ = two_tenants
    st = labmod.status(lab)
    assert st.in_sync is True
    routers = {n.name: n for n in st.nodes if n.role == "router"}
    assert routers["red-r1"].interfaces["eth0"] == ["10.1.0.254/24", "fd00:1::fe/64"]
    assert "vnet lab up" not in vnet("lab", "status", lab).stdout


def test_exec_runs_inside_the_node(two_tenants: tuple[str, Path]) -> None:
    lab, _ = two_tenants
    done = vnet("lab", "exec", "--lab", lab, "red-r1", "--", "cat", "/proc/sys/net/ipv4/ip_forward")
    assert done.stdout.strip() == "1"


def test_admin_down_stops_forwarding_and_keeps_configuration(
    two_tenants: tuple[str, Path], module_labs: Labs
) -> None:
    lab, path = two_tenants
    stop = "  - name: red-r1\n    host: h1\n"
    module_labs.rewrite(path, lambda s: s.replace(stop, stop + "    admin_state: down\n"))
    try:
        ops = labmod.up(path).ops
        # the ports go down; the shortcuts into the router go first, or they would
        # hand frames to its interfaces past the port that is down
        texts = [op.describe() for op in ops]
        links = [i for i, t in enumerate(texts) if "link set" in t]
        shortcuts = [i for i, t in enumerate(texts) if "filter del" in t]
        assert links and shortcuts and len(links) + len(shortcuts) == len(ops), texts
        assert max(shortcuts) < min(links), texts
        assert probes.fping(ns(lab, "red-a"), "10.2.0.2", count=2).received == 0
        assert probes.fping(ns(lab, "blue-a"), "10.2.0.3", count=2).received == 2
        addrs = subprocess.run(
            ["ip", "-n", ns(lab, "red-r1"), "-br", "addr"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "10.1.0.254/24" in addrs and "fd00:2::fe/64" in addrs
    finally:
        module_labs.rewrite(path, lambda s: s.replace("    admin_state: down\n", ""))
        labmod.up(path)
    # red-a asked for its gateway's address while the router was down: its entry for it is
    # incomplete, and the next retransmission (the kernel's, about a second apart) finds
    # the router back; the first ping right after `lab up` could go unanswered
    back = time.monotonic()
    wait_until(lambda: probes.fping(ns(lab, "red-a"), "10.2.0.2", count=1).received, 5.0,
               "red-a to reach red-b once red-r1 is up again", interval=0.1)  # fmt: skip
    assert time.monotonic() - back < 3.0, "the gateway's address resolved again"
    assert probes.fping(ns(lab, "red-a"), "10.2.0.2", count=3).received == 3


def test_host_namespaces_skip_bridge_netfilter(two_tenants: tuple[str, Path]) -> None:
    lab, _ = two_tenants
    path = "/proc/sys/net/bridge/bridge-nf-call-iptables"
    done = processes.run(ns(lab, "h1"), ["cat", path], timeout=5)
    if done.returncode != 0:
        pytest.skip("this kernel has no br_netfilter")
    assert done.stdout.strip() == "0"
