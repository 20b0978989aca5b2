"""Bridge shortcuts on real namespaces: frames skip the bridge, a network grows from two
to three members and shrinks back under a running ping, re-applying plans nothing.

Checked with tools nobody here wrote: ping, tc and ip (interface counters)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import Labs, require_tools, unique_lab, vnet

PING_INTERVAL = 0.01  # s: 100 packets a second, so a gap of 10 ms costs one packet
PING_COUNT = 400


def topology(name: str, members: int) -> str:
    """n0: r1 and `members - 1` end hosts on one host; dst behind r1 on n1."""
    extra = "".join(
        f"  - {{name: e{i}, host: h1, network: n0, ipv4: 10.9.1.{10 + i}/24}}\n"
        for i in range(1, members - 1)
    )
    return f"""name: {name}
hosts: [{{name: h1}}]
tenants: [{{name: t, routing: auto}}]
networks:
  - {{name: n0, tenant: t, vni: 100, ipv4: 10.9.1.0/24}}
  - {{name: n1, tenant: t, vni: 101, ipv4: 10.9.2.0/24}}
routers:
  - name: r1
    host: h1
    interfaces:
      - {{network: n0, ipv4: 10.9.1.1/24}}
      - {{network: n1, ipv4: 10.9.2.1/24}}
endhosts:
  - {{name: e0, host: h1, network: n0, ipv4: 10.9.1.10/24}}
  - {{name: dst, host: h1, network: n1, ipv4: 10.9.2.2/24}}
{extra}"""


@pytest.fixture
def lan(labs: Labs, tmp_path: Path) -> tuple[str, Path]:
    require_tools("ping", "tc", "ip")
    name = unique_lab()
    labs.names.append(name)  # taken down and checked for leftovers by the fixture
    path = tmp_path / f"{name}.yaml"
    path.write_text(topology(name, 2))
    vnet("lab", "up", str(path))
    return name, path


def ns(lab: str, node: str) -> str:
    return f"vnet-{lab}-{node}"


def shortcut_targets(lab: str, port: str) -> list[str]:
    """What `tc filter show` says the port's shortcut program redirects to."""
    out = subprocess.run(
        ["tc", "-n", ns(lab, "h1"), "filter", "show", "dev", port, "ingress"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.search(rf"vnet:{lab} redirect (\S+)", out)
    return [] if found is None else sorted(t.split("@")[0] for t in found.group(1).split(","))


def tx_packets(lab: str, port: str) -> int:
    out = subprocess.run(
        ["ip", "-n", ns(lab, "h1"), "-s", "-j", "link", "show", port],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(json.loads(out)[0]["stats64"]["tx"]["packets"])


def ping(lab: str, src: str, dst: str, count: int, interval: float) -> subprocess.Popen[str]:
    argv = ["ping", "-n", "-q", "-c", str(count), "-i", str(interval), "-W", "5", dst]
    return subprocess.Popen(
        ["ip", "netns", "exec", ns(lab, src), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def lost(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=60)
    found = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    assert found, out
    return int(found.group(1)) - int(found.group(2)), out


def test_two_members_reach_each_other_past_the_bridge(lan: tuple[str, Path]) -> None:
    lab, _ = lan
    assert shortcut_targets(lab, "eh-e0") == ["vr1i0"]
    assert shortcut_targets(lab, "vr1i0") == ["eh-e0"]
    before = tx_packets(lab, "vr1i0")  # what the bridge hands to r1's port
    proc = ping(lab, "e0", "10.9.2.2", 50, PING_INTERVAL)
    missing, out = lost(proc)
    assert missing == 0, out
    # The 50 echo requests reached r1 without the bridge sending them out of r1's
    # port (through the bridge, each would count there); what does cross it is
    # broadcast and multicast: ARP, and IPv6 router solicitations and MLD reports
    # of interfaces that have just come up.
    assert tx_packets(lab, "vr1i0") - before < 25


def test_growing_to_three_and_back_keeps_a_running_ping(lan: tuple[str, Path]) -> None:
    lab, path = lan
    for members, expected in ((3, ["eh-e1", "vr1i0"]), (2, ["vr1i0"])):
        proc = ping(lab, "e0", "10.9.2.2", PING_COUNT, PING_INTERVAL)
        time.sleep(1.0)
        path.write_text(topology(lab, members))
        vnet("lab", "up", str(path))
        missing, out = lost(proc)
        assert missing <= 1, f"{members} members: {out}"
        assert shortcut_targets(lab, "eh-e0") == expected
        plan = vnet("lab", "up", "--dry-run", str(path)).stdout
        assert "0 operation(s)" in plan, plan
    assert shortcut_targets(lab, "vr1i0") == ["eh-e0"]


def test_a_third_member_reaches_both_through_its_own_shortcut(lan: tuple[str, Path]) -> None:
    lab, path = lan
    path.write_text(topology(lab, 3))
    vnet("lab", "up", str(path))
    assert shortcut_targets(lab, "eh-e1") == ["eh-e0", "vr1i0"]
    for dst in ("10.9.1.10", "10.9.1.1", "10.9.2.2"):
        missing, out = lost(ping(lab, "e1", dst, 5, 0.05))
        assert missing == 0, f"e1 -> {dst}: {out}"
