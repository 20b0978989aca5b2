"""Bridge shortcuts: an eBPF redirect between the ports of one virtual network on a host.

A frame from a VR or end host normally crosses its veth pair, the network's
bridge and the next member's veth pair. A shortcut is a tc ingress program
on a member's bridge-side port: a frame addressed to the MAC of another
member of the same network goes straight to that member's interface with
`bpf_redirect_peer` (the kernel hands it to the veth peer's ingress in the
other namespace, in the same softirq), skipping the bridge and the second
veth traversal. Every other frame (broadcast, multicast, ND/ARP, unknown or
remote MACs behind VXLAN) goes on to the bridge as before, so the bridge is
always there: a third member joining is an extra target in each program,
replaced in place (`tc filter replace`), and nothing is ever lost.

- isolation: a port's program lists only the members of its own bridge;
- ownership: the filter's name carries vnet's mark and scope;
- observe-back: the name also records each target's ifindex at load time; a
  target recreated since (new ifindex) reads back as a different shortcut,
  so the plan reloads it;
- the program is built from the kernel at apply time (target ifindex and
  MAC), the plan prints what it will point at.

Why tc and not XDP: XDP on a veth costs GSO (TCP fell from 16.8 to 4.1
Gbit/s here) and redirecting XDP frames needs an XDP program on the peer
too; a tc program keeps GSO and skb metadata.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from vnet.substrate.bpf import (
    ADD_K,
    BPF_FUNC_REDIRECT_PEER,
    CALL,
    EXIT,
    JGT_X,
    JNE32_K,
    LDX_H,
    LDX_W,
    MOV_K,
    MOV_X,
    SKB_DATA,
    SKB_DATA_END,
    TC_ACT_OK,
    insn,
    load_sched_cls,
)
from vnet.substrate.kernel import Kernel, KernelError, Message
from vnet.substrate.marks import MARK, NsName, ns_from_label, tc_cmd

CLSACT_INGRESS = 0xFFFFFFF2
PRIO, HANDLE = 1, 1
# A program checks targets one after another; bigger networks stay on the bridge.
MAX_TARGETS = 15


@dataclass(frozen=True)
class Redirect:
    """Frames entering `port` (a member's bridge-side veth end in `ns`) addressed to a
    member behind one of `targets` (bridge-side ends of the same bridge) go straight there."""

    ns: NsName
    port: str
    scope: str
    targets: tuple[str, ...]  # sorted

    @property
    def key(self) -> tuple[NsName, str]:
        return (self.ns, self.port)


def program(targets: list[tuple[bytes, int]]) -> bytes:
    """tc direct-action bytecode: dst MAC == mac -> bpf_redirect_peer(ifindex), else pass.

    r1 = skb; r2 = data; r3 = data_end; r4/r5 = the first 4 and next 2 bytes
    of the destination MAC (loaded little-endian, so the constants are too).
    """
    check = [
        insn(LDX_W, 2, 1, SKB_DATA),
        insn(LDX_W, 3, 1, SKB_DATA_END),
        insn(MOV_X, 4, 2),  # r4 = r2
        insn(ADD_K, 4, 0, 0, 6),
    ]
    load = [insn(LDX_W, 4, 2, 0), insn(LDX_H, 5, 2, 4)]
    body: list[bytes] = []
    for mac, ifindex in targets:
        body += [
            insn(JNE32_K, 4, 0, 5, int.from_bytes(mac[:4], "little")),
            insn(JNE32_K, 5, 0, 4, int.from_bytes(mac[4:6], "little")),
            insn(MOV_K, 1, 0, 0, ifindex),
            insn(MOV_K, 2, 0, 0, 0),
            insn(CALL, imm=BPF_FUNC_REDIRECT_PEER),  # r0 = TC_ACT_REDIRECT
            insn(EXIT),
        ]
    # if r4 > r3 goto pass: past the loads and the body, to the tail
    bounds = insn(JGT_X, 4, 3, len(load) + len(body))
    tail = [insn(MOV_K, 0, 0, 0, TC_ACT_OK), insn(EXIT)]
    return b"".join([*check, bounds, *load, *body, *tail])


def _mark(scope: str) -> str:
    return f"{MARK}:{scope} redirect"


def _member_of(k: Kernel, ns: NsName, port: str) -> tuple[int, bytes]:
    """(ifindex of the bridge-side end, MAC of the member's own end behind it)."""
    end = k.link_brief(ns, port)
    if end is None:
        raise KernelError(f"shortcut target {port} does not exist")
    attrs = dict(a.split("=", 1) for a in end.alias.split(" ")[1:] if "=" in a)
    if "peer" not in attrs:
        raise KernelError(f"shortcut target {port} is not a vnet veth with a far end")
    peer_label, peer_name = attrs["peer"].split("/", 1)
    peer = k.link_brief(ns_from_label(peer_label), peer_name)
    if peer is None:
        raise KernelError(f"the far end of shortcut target {port} is missing")
    return end.index, peer.mac


@dataclass(frozen=True)
class SetRedirect:
    """Install, replace (old and new) or remove (new None) one port's shortcut program."""

    old: Redirect | None
    new: Redirect | None

    def run(self, k: Kernel) -> None:
        if self.new is None:
            assert self.old is not None
            k.tc(
                self.old.ns,
                "del-filter",
                "bpf",
                self.old.port,
                missing_ok=True,
                parent=CLSACT_INGRESS,
                prio=PRIO,
                handle=HANDLE,
            )
            return
        new = self.new
        members = [_member_of(k, new.ns, t) for t in new.targets]
        name = (
            _mark(new.scope)
            + " "
            + ",".join(f"{t}@{index}" for t, (index, _) in zip(new.targets, members, strict=True))
        )
        fd = load_sched_cls(program([(mac, index) for index, mac in members]), "vnet_redirect")
        try:
            k.tc(new.ns, "add", "clsact", new.port, missing_ok=True)  # may be there already
            k.tc(
                new.ns,
                "replace-filter",
                "bpf",
                new.port,
                parent=CLSACT_INGRESS,
                prio=PRIO,
                handle=HANDLE,
                fd=fd,
                name=name,
                direct_action=True,
            )
        finally:
            os.close(fd)  # the filter holds the program

    def inverse(self) -> SetRedirect:
        return SetRedirect(self.new, self.old)

    def describe(self) -> str:
        lk = self.new or self.old
        assert lk is not None
        head = f"{tc_cmd(lk.ns)} filter"
        where = f"dev {lk.port} ingress prio {PRIO} handle {HANDLE}"
        if self.new is None:
            return f"{head} del {where}"
        to = ", ".join(self.new.targets)
        return f"{head} replace {where} bpf da redirect-peer dst-mac-of {{{to}}} else bridge"


# -- read ------------------------------------------------------------------------


def _parse(name: str, scope: str, names: dict[int, str]) -> tuple[str, ...] | None:
    """Targets named in a filter name of ours; a target whose ifindex changed reads
    as "<name>@stale", so the shortcut differs from any desired one."""
    mark = _mark(scope) + " "
    if not name.startswith(mark):
        return None
    by_name = {v: k for k, v in names.items()}
    targets = []
    for item in name.removeprefix(mark).split(","):
        target, _, index = item.partition("@")
        fresh = index.isdigit() and by_name.get(target) == int(index)
        targets.append(target if fresh else f"{target}@stale")
    return tuple(targets)


def read(
    k: Kernel,
    ns: NsName,
    scope: str,
    ports: dict[int, str],
    names: dict[int, str],
    qdiscs: list[Message],
) -> dict[tuple[NsName, str], Redirect]:
    """Shortcuts of `scope` on `ports` (index -> name; vnet's bridge-side veth ends)."""
    out = {}
    with_clsact = {q["index"] for q in qdiscs if q.get("kind") == "clsact"}
    for index in sorted(with_clsact & ports.keys()):
        for f in k.filters(ns, index, CLSACT_INGRESS):
            opts = f.get_attr("TCA_OPTIONS") if f.get("kind") == "bpf" else None
            name = opts.get_attr("TCA_BPF_NAME") if opts is not None else None
            targets = _parse(name or "", scope, names)
            if targets is not None:
                out[(ns, ports[index])] = Redirect(ns, ports[index], scope, targets)
    return out


# -- plan ------------------------------------------------------------------------


def plan_redirects(
    desired: dict[tuple[NsName, str], Redirect],
    actual: dict[tuple[NsName, str], Redirect],
    touched: set[tuple[NsName, str]],
    created: set[tuple[NsName, str]],
) -> tuple[list[SetRedirect], list[SetRedirect]]:
    """(before the link changes, after them).

    `touched`: interfaces this plan deletes or recreates (their filters go with
    them); `created`: interfaces it creates. A shortcut that drops a target is
    changed first, before the target goes; one that needs a new or recreated
    interface is loaded last, after it exists (make before break both ways).
    """
    early: list[SetRedirect] = []
    late: list[SetRedirect] = []
    for key in sorted(set(desired) | set(actual), key=lambda k: (str(k[0]), k[1])):
        want = desired.get(key)
        have = None if key in touched else actual.get(key)
        if want is None:
            if have is not None:
                early.append(SetRedirect(have, None))
            continue
        needs_new = key in created or any((key[0], t) in created for t in want.targets)
        if have == want and not needs_new:
            continue
        (late if needs_new else early).append(SetRedirect(have, want))
    return early, late
