"""The SDN benchmark's sandbox: Open vSwitch in a namespace that vnet's substrate makes.

One namespace (role "host", node "ovs") with one veth pair inside it, both
carrying vnet's ownership marks, realised and removed by `converge` like any
lab; `vnet lab down pb<tag>` cleans up after a crash. In it: ovsdb-server and
ovs-vswitchd (vnet.tools.ovs, private run directory) with the veth's one end
as the bridge's port 1; the other end is perfbench's data-plane interface.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# The substrate, in this one place: the sandbox is kernel state like any lab's.
from vnet.substrate import Kernel, KernelState, converge, lab_placement
from vnet.substrate.link import Link
from vnet.substrate.namespace import Namespace
from vnet.tools.ovs import OvsSwitch
from vnet.tools.procfs import write_sysctl

OVS_PORT = 1  # the veth end attached to the bridge


@dataclass
class OvsLab:
    """ovsdb-server + ovs-vswitchd (userspace datapath) with bridge br0 in a fresh namespace."""

    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    scope: str = field(init=False)
    ns: str = field(init=False)
    ovs_iface: str = field(init=False)
    dp_iface: str = field(init=False)
    dir: Path = field(init=False)
    switch: OvsSwitch = field(init=False)

    def __post_init__(self) -> None:
        self.scope = f"pb{self.tag}"
        self.ns = lab_placement(self.scope).node_ns("ovs")
        self.ovs_iface = f"vpb{self.tag}o"
        self.dp_iface = f"vpb{self.tag}d"
        self.dir = Path(tempfile.mkdtemp(prefix=f"vnetpb-{self.tag}-"))
        self.switch = OvsSwitch(self.ns, self.dir)

    @property
    def pids(self) -> dict[str, int]:
        return self.switch.pids

    def in_ns(self, *cmd: str) -> list[str]:
        return self.switch.in_ns(*cmd)

    def desired(self) -> KernelState:
        """The namespace and the veth pair inside it, as vnet's kernel state."""
        ns = Namespace(self.ns, self.scope, "host", "ovs")
        veth = Link(
            self.ns, self.ovs_iface, "veth", self.scope, peer_ns=self.ns, peer_name=self.dp_iface
        )
        return KernelState(namespaces={ns.name: ns}, links={veth.key: veth})

    def _converge(self, desired: KernelState) -> None:
        with Kernel() as kernel:
            converge(kernel, desired, lab_placement(self.scope))

    def start(self) -> None:
        self._converge(self.desired())
        # No IPv6 in here: no router solicitations or MLD reports reach the bridge.
        for key in ("all", "default"):
            write_sysctl(self.ns, f"net.ipv6.conf.{key}.disable_ipv6", "1")
        self.switch.start({self.ovs_iface: OVS_PORT})

    def set_controllers(self, ports: list[int]) -> None:
        self.switch.set_controllers(ports)

    def clear_controllers(self) -> None:
        self.switch.clear_controllers()

    def stop(self) -> None:
        try:
            self.switch.stop()
        finally:
            self._converge(KernelState())  # the namespace, the veth pair, the bridge's tap
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> OvsLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
