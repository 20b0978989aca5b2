"""Where a model lands on Linux: which hosts, under which names, owned by whom."""

from __future__ import annotations

from dataclasses import dataclass

from vnet.substrate.marks import NsName


@dataclass(frozen=True)
class Placement:
    """Where a topology lands: which hosts, under which namespace names."""

    scope: str  # owner recorded in every mark: the lab name, or "agent"
    prefix: str  # namespace names are prefix + node name
    own_host: str | None = None  # the host vnet runs on (its namespace is None)
    only_host: str | None = None  # realise just this host (an agent), else all (a lab)
    # Which parts to realise. An agent makes its VRs (and networks if it
    # provisions them); a lab whose hosts run agents makes everything else.
    networks: bool = True
    routers: bool = True
    endhosts: bool = True

    def host_ns(self, host: str) -> NsName:
        return None if host == self.own_host else self.prefix + host

    def node_ns(self, node: str) -> str:
        return self.prefix + node

    def includes(self, host: str) -> bool:
        return self.only_host is None or host == self.only_host


def lab_placement(lab: str) -> Placement:
    return Placement(scope=lab, prefix=f"vnet-{lab}-")


# How vnet names the interfaces it makes (all within IFNAMSIZ).


def bridge_name(vni: int) -> str:
    return f"vb{vni}"


def vxlan_name(vni: int) -> str:
    return f"vx{vni}"


def vr_port_name(index: int, position: int) -> str:
    return f"vr{index}i{position}"


def endhost_port_name(name: str) -> str:
    return f"eh-{name}"


def underlay_port_name(peer_host: str) -> str:
    return f"ul-{peer_host}"


def management_port_name(host: str) -> str:
    return f"m-{host}"
