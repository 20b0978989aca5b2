"""Network namespaces: vnet's own, marked by their loopback's alias."""

from __future__ import annotations

from dataclasses import dataclass, field

from vnet.substrate import nsfs
from vnet.substrate.kernel import Kernel, NotANamespace
from vnet.substrate.marks import MARK, NsName, Role

ROLE_SYSCTLS: dict[str, dict[str, str]] = {
    # Addresses come up at once (no DAD wait), forwarding where packets are routed.
    "host": {
        "net.ipv4.ip_forward": "1",
        "net.ipv6.conf.all.forwarding": "1",
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
        # Bridged tenant frames need no iptables pass; the hooks cost ~100 ns per
        # packet per bridge even with no rules (measured by `vnet bench forwarding`).
        "net.bridge.bridge-nf-call-iptables": "0",
        "net.bridge.bridge-nf-call-ip6tables": "0",
        "net.bridge.bridge-nf-call-arptables": "0",
    },
    "router": {
        "net.ipv4.ip_forward": "1",
        "net.ipv6.conf.all.forwarding": "1",
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
        "net.ipv6.conf.all.keep_addr_on_down": "1",
        "net.ipv6.conf.default.keep_addr_on_down": "1",
    },
    "endhost": {
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
    },
    "mgmt": {
        "net.ipv6.conf.all.accept_dad": "0",
        "net.ipv6.conf.default.accept_dad": "0",
    },
}


@dataclass(frozen=True)
class Namespace:
    name: str
    scope: str  # the lab (or "agent") that owns it
    role: Role
    node: str  # the host, VR or end host it realises

    @property
    def mark(self) -> str:
        """Stored as the alias of the namespace's loopback."""
        return f"{MARK}:{self.scope}:{self.role}:{self.node}"


@dataclass(frozen=True)
class CreateNamespace:
    ns: Namespace

    def run(self, k: Kernel) -> None:
        k.create_namespace(self.ns.name, ROLE_SYSCTLS[self.ns.role], self.ns.mark)

    def inverse(self) -> DeleteNamespace:
        return DeleteNamespace(self.ns)

    def describe(self) -> str:
        return (
            f"ip netns add {self.ns.name}  # {self.ns.role} {self.ns.node}, marked {self.ns.mark}"
        )


@dataclass(frozen=True)
class DeleteNamespace:
    """Delete a namespace with everything in it, and the veth pairs into it.

    The kernel removes the far ends (`vanishing`) asynchronously; the inverse
    brings back an empty namespace, and rollback's reconcile step the rest.
    """

    ns: Namespace
    vanishing: tuple[tuple[NsName, str], ...] = ()

    def run(self, k: Kernel) -> None:
        k.delete_namespace(self.ns.name, self.vanishing)

    def inverse(self) -> CreateNamespace:
        return CreateNamespace(self.ns)

    def describe(self) -> str:
        return f"ip netns del {self.ns.name}"

    @property
    def takes_contents(self) -> bool:
        return True


def parse_namespace_mark(name: str, mark: str | None) -> Namespace | None:
    if not mark:
        return None
    parts = mark.split(":")
    if len(parts) != 4 or parts[0] != MARK or parts[2] not in ("host", "router", "endhost", "mgmt"):
        return None
    return Namespace(name=name, scope=parts[1], role=parts[2], node=parts[3])  # type: ignore[arg-type]


@dataclass
class NamespaceScan:
    found: list[Namespace] = field(default_factory=list)
    # names with our prefix whose mark cannot be read (a crash between creating
    # the mount point and binding it): safe to remove, nothing inside
    remnants: list[str] = field(default_factory=list)


# A mount point not bound for this long was left by a crash (binding takes microseconds).
REMNANT_AGE = 10.0


def read(k: Kernel, prefix: str, scope: str | None = None) -> NamespaceScan:
    """vnet's namespaces named `prefix*` (of `scope`, or of any scope)."""
    scan = NamespaceScan()
    for name in nsfs.list_names(prefix):
        try:
            ns = parse_namespace_mark(name, k.namespace_mark(name))
        except NotANamespace:
            # Another process sharing the prefix (the agents of one lab start together)
            # may be between creating this mount point and binding it: only an old one
            # is a crash's remnant. Removing a young one deleted a namespace being made.
            if nsfs.seconds_since_created(name) >= REMNANT_AGE:
                scan.remnants.append(name)
            continue
        if ns is not None and (scope is None or ns.scope == scope):
            scan.found.append(ns)
    return scan
