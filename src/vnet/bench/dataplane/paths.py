"""The path kinds of the data-plane benchmark, each realised as a lab by vnet's own lab."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from vnet.lab import lab as labmod
from vnet.model import Topology, build_topology

# The substrate's naming, from this one place in the benchmark.
from vnet.substrate import Kernel, KernelError, address, lab_placement, link, observe
from vnet.substrate.realize import underlay_port_name
from vnet.substrate.redirect import SetRedirect
from vnet.tools import fping
from vnet.tools.errors import ToolError

SRC_ADDRESS, DST_ADDRESS = "10.9.1.2", "10.9.2.2"


# -- path kinds ------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    node: str
    ifname: str


@dataclass(frozen=True)
class PathSpec:
    """One path kind realised as a lab: who sends, who receives, where frames go first."""

    kind: str
    topology: Topology
    src: Endpoint
    dst: Endpoint
    first_hop: Endpoint  # the interface whose MAC the sender's frames carry
    # Where the addresses live, when not on src/dst themselves (a host's loopback).
    src_address: Endpoint | None = None
    dst_address: Endpoint | None = None
    # False: the bridge shortcuts vnet chooses are taken out after the lab is up,
    # to measure the plain bridge path next to the default one (the "-bridged" kinds)
    shortcuts: bool = True

    @property
    def lab(self) -> str:
        return self.topology.name

    def ns(self, node: str) -> str:
        return lab_placement(self.lab).node_ns(node)

    @property
    def prefix(self) -> str:
        """The names of all the lab's namespaces start with this."""
        return lab_placement(self.lab).prefix


def _hosts(*names: str) -> list[dict[str, str]]:
    return [{"name": n} for n in names]


def _links(*names: str) -> list[dict[str, str]]:
    return [{"a": a, "b": b} for a, b in itertools.pairwise(names)]


def physical_path(lab: str) -> PathSpec:
    """Two physical hosts and the underlay link between them: no bridge, no VXLAN, no VR."""
    topo = build_topology(
        {"name": lab, "hosts": _hosts("src", "dst"), "links": _links("src", "dst")},
        source="bench physical path",
    )
    dst = Endpoint("dst", underlay_port_name("src"))
    return PathSpec("physical", topo, Endpoint("src", underlay_port_name("dst")), dst, dst)


def native_path(lab: str, routers: int = 1) -> PathSpec:
    """Native routers: the physical hosts between src and dst forward, no bridge, no VR."""
    middle = ["fwd"] if routers == 1 else [f"fwd{i}" for i in range(1, routers + 1)]
    chain = ["src", *middle, "dst"]
    topo = build_topology(
        {"name": lab, "hosts": _hosts(*chain), "links": _links(*chain)},
        source=f"bench path through {routers} native router(s)",
    )
    # Hosts route to each other's loopbacks only, not to links two hops away.
    return PathSpec(
        "native" if routers == 1 else f"native{routers}",
        topo,
        Endpoint("src", underlay_port_name(middle[0])),
        Endpoint("dst", underlay_port_name(middle[-1])),
        Endpoint(middle[0], underlay_port_name("src")),
        src_address=Endpoint("src", "lo"),
        dst_address=Endpoint("dst", "lo"),
    )


def _lan_path(lab: str, kind: str, dst_host: str) -> PathSpec:
    hosts = ["h1"] if dst_host == "h1" else ["h1", dst_host]
    topo = build_topology(
        {
            "name": lab,
            "hosts": _hosts(*hosts),
            "links": _links(*hosts),
            "tenants": [{"name": "bench"}],
            "networks": [{"name": "lan", "tenant": "bench", "vni": 100, "ipv4": "10.9.0.0/16"}],
            "endhosts": [
                {"name": "src", "host": "h1", "network": "lan", "ipv4": f"{SRC_ADDRESS}/16"},
                {"name": "dst", "host": dst_host, "network": "lan", "ipv4": f"{DST_ADDRESS}/16"},
            ],
        },
        source=f"bench {kind} path",
    )
    dst = Endpoint("dst", "eth0")
    return PathSpec(kind, topo, Endpoint("src", "eth0"), dst, dst)


def bridge_path(lab: str) -> PathSpec:
    """A virtual network on one physical host: src and dst on one bridge."""
    return _lan_path(lab, "bridge", "h1")


def vxlan_path(lab: str) -> PathSpec:
    """A virtual network across two physical hosts: the bridges joined by VXLAN."""
    return _lan_path(lab, "vxlan", "h2")


def _chain(lab: str, vrs: int) -> dict[str, Any]:
    """src - r1 - ... - rN - dst on one physical host, a virtual network between hops."""
    nets = [f"10.9.{100 + i}" for i in range(vrs + 1)]
    nets[0], nets[-1] = "10.9.1", "10.9.2"
    routers = []
    for i in range(1, vrs + 1):
        left = f"{nets[i - 1]}.1" if i == 1 else f"{nets[i - 1]}.2"
        routers.append(
            {
                "name": f"r{i}",
                "host": "h1",
                "interfaces": [
                    {"network": f"n{i - 1}", "ipv4": f"{left}/24"},
                    {"network": f"n{i}", "ipv4": f"{nets[i]}.1/24"},
                ],
            }
        )
    return {
        "name": lab,
        "hosts": _hosts("h1"),
        "tenants": [{"name": "bench", "routing": "auto"}],
        "networks": [
            {"name": f"n{i}", "tenant": "bench", "vni": 100 + i, "ipv4": f"{net}.0/24"}
            for i, net in enumerate(nets)
        ],
        "routers": routers,
        "endhosts": [
            {"name": "src", "host": "h1", "network": "n0", "ipv4": f"{SRC_ADDRESS}/24"},
            {"name": "dst", "host": "h1", "network": f"n{vrs}", "ipv4": f"{DST_ADDRESS}/24"},
        ],
    }


def _chain_spec(kind: str, topo: Topology) -> PathSpec:
    return PathSpec(
        kind, topo, Endpoint("src", "eth0"), Endpoint("dst", "eth0"), Endpoint("r1", "eth0")
    )


def vr_chain_path(lab: str, vrs: int) -> PathSpec:
    """src - r1 - ... - rN - dst on one physical host, a virtual network between hops."""
    topo = build_topology(_chain(lab, vrs), source=f"bench chain of {vrs} VRs")
    return _chain_spec(f"vr{vrs}", topo)


SRV6_ROUTERS = 3
SRV6_BANDWIDTH = "10gbit"  # the connection's guarantee: far above what one core moves


def srv6_path(lab: str) -> PathSpec:
    """src -> dst through an SRv6 connection on the vr3 chain: r1 encapsulates, r2 is a
    transit SID, r3 decapsulates (and the reverse). Its HTB class at r1 is far above what
    the machine forwards, so the figures are the tunnel's cost, not its shaper's."""
    data = _chain(lab, SRV6_ROUTERS)
    # SIDs are IPv6: the routers of the path share their core networks over IPv6 too
    for i in range(1, SRV6_ROUTERS):
        data["networks"][i]["ipv6"] = f"fd09:{i}::/64"
        data["routers"][i - 1]["interfaces"][1]["ipv6"] = f"fd09:{i}::1/64"
        data["routers"][i]["interfaces"][0]["ipv6"] = f"fd09:{i}::2/64"
    data["connections"] = [
        {
            "name": "bench",
            "a": "src",
            "b": "dst",
            "bandwidth": SRV6_BANDWIDTH,
            "path": [f"r{i}" for i in range(1, SRV6_ROUTERS + 1)],
            "bidirectional": True,
        }
    ]
    return _chain_spec("srv6", build_topology(data, source="bench SRv6 connection"))


EM_TESTBED = Path(__file__).resolve().parents[4] / "examples" / "em-testbed.yaml"


def em_path(lab: str) -> PathSpec:
    """Paper 001's Table 2 path in examples/em-testbed.yaml: hs -> R1 -> MR1 -> MR5 ->
    MR12 -> MR7 -> MR2 -> R2 -> hd (tenant alpha; the core routers sit on the second
    host, so the path crosses the file's 1 Gbit/s underlay link and VXLAN twice)."""
    data = YAML(typ="safe").load(EM_TESTBED.read_text())
    data["name"] = lab
    topo = build_topology(data, source=str(EM_TESTBED))
    hs, hd = Endpoint("hs", "eth0"), Endpoint("hd", "eth0")
    return PathSpec("em", topo, hs, hd, Endpoint("R1", "eth0"))


def bridged(build: Callable[[str], PathSpec], kind: str) -> Callable[[str], PathSpec]:
    """The same path without bridge shortcuts: every frame crosses the bridges."""
    return lambda lab: replace(build(lab), kind=kind, shortcuts=False)


PATH_BUILDERS: dict[str, Callable[[str], PathSpec | None]] = {
    "physical": physical_path,
    "native": native_path,
    "native4": lambda lab: native_path(lab, 4),
    "bridge": bridge_path,
    "vxlan": vxlan_path,
    "vr1": lambda lab: vr_chain_path(lab, 1),
    "vr2": lambda lab: vr_chain_path(lab, 2),
    "vr4": lambda lab: vr_chain_path(lab, 4),
    "srv6": srv6_path,
    "em": em_path,
}
for _kind in ("bridge", "vr1", "vr2", "vr4"):
    PATH_BUILDERS[f"{_kind}-bridged"] = bridged(PATH_BUILDERS[_kind], f"{_kind}-bridged")  # type: ignore[arg-type]
LAB_CODES = {
    "physical": "ph",
    "native": "nr",
    "native4": "n4",
    "bridge": "br",
    "vxlan": "vx",
    "vr1": "r1",
    "vr2": "r2",
    "vr4": "r4",
    "srv6": "s6",
    "em": "em",
    "bridge-bridged": "bb",
    "vr1-bridged": "b1",
    "vr2-bridged": "b2",
    "vr4-bridged": "b4",
}


def remove_shortcuts(spec: PathSpec) -> int:
    """Take out the lab's bridge shortcuts (a later `lab up` puts them back)."""
    where = lab_placement(spec.lab)
    with Kernel() as k:
        found = observe(k, where.scope, where.prefix).state.redirects
        for shortcut in found.values():
            SetRedirect(shortcut, None).run(k)
    return len(found)


@dataclass(frozen=True)
class ReadyPath:
    """A path kind that is up, with the addresses read back from the kernel."""

    spec: PathSpec
    src_ns: str
    dst_ns: str
    src_ip: str
    dst_ip: str
    src_mac: str
    first_hop_mac: str

    @property
    def kind(self) -> str:
        return self.spec.kind


def interface_identity(k: Kernel, ns: str, ifname: str) -> tuple[str, str | None]:
    """(MAC, first IPv4 address outside 127/8, or None) of an interface, from the kernel."""
    try:
        mac = link.mac_address(k, ns, ifname)
        ipv4 = address.ipv4_addresses(k, ns, ifname)
    except KernelError:
        raise ToolError(f"no interface {ifname} in {ns}") from None
    return mac, ipv4[0] if ipv4 else None


def ready(spec: PathSpec) -> ReadyPath:
    with Kernel() as k:
        src_mac, _ = interface_identity(k, spec.ns(spec.src.node), spec.src.ifname)
        hop_mac, _ = interface_identity(k, spec.ns(spec.first_hop.node), spec.first_hop.ifname)
        src_at, dst_at = spec.src_address or spec.src, spec.dst_address or spec.dst
        _, src_ip = interface_identity(k, spec.ns(src_at.node), src_at.ifname)
        _, dst_ip = interface_identity(k, spec.ns(dst_at.node), dst_at.ifname)
    if src_ip is None or dst_ip is None:
        raise ToolError(f"{spec.kind}: src or dst has no IPv4 address")
    return ReadyPath(
        spec, spec.ns(spec.src.node), spec.ns(spec.dst.node), src_ip, dst_ip, src_mac, hop_mac
    )


def reachable(path: ReadyPath, attempts: int = 5) -> bool:
    """A few pings until the first answers (ARP, bridge learning); bounded."""
    for _ in range(attempts):
        if fping.ping_rtts(path.src_ns, path.dst_ip, 3, source=path.src_ip).received:
            return True
    return False


def lab_names(prefix: str, kinds: Sequence[str]) -> dict[str, str]:
    """A unique lab per kind: prefix (2 letters) + 4 hex digits + the kind's code."""
    token = secrets.token_hex(2)
    return {kind: f"{prefix}{token}{LAB_CODES[kind]}" for kind in kinds}


@contextmanager
def path_labs(
    prefix: str, kinds: Sequence[str], note: Callable[[str], None]
) -> Iterator[list[ReadyPath]]:
    """Bring every kind's lab up, yield the reachable ones, and always take them down."""
    up: list[str] = []
    paths: list[ReadyPath] = []
    try:
        for kind, lab in lab_names(prefix, kinds).items():
            spec = PATH_BUILDERS[kind](lab)
            if spec is None:
                note(f"{kind}: skipped, no path")
                continue
            up.append(lab)
            labmod.up("", topology=spec.topology)
            if not spec.shortcuts:
                remove_shortcuts(spec)
            path = ready(spec)
            if reachable(path):
                paths.append(path)
            else:
                note(f"{kind}: skipped, {path.dst_ip} did not answer pings from src")
        yield paths
    finally:
        for lab in reversed(up):
            try:
                labmod.down(lab)
            except Exception as err:  # one stuck lab must not keep the others up
                note(f"lab {lab}: teardown failed: {err}; run `vnet lab down {lab}`")
