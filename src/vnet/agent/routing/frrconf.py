"""A VR's FRRouting configuration, generated from the model (pure: text from objects).

One file per daemon: zebra (always), ospfd for OSPFv2, ospf6d for OSPFv3,
bfdd when an OSPF interface asks for BFD (one profile per interface carries
its intervals). Every interface without `ospf` is announced as a connected
route (redistribute connected), so the end hosts' networks are reachable
without forming adjacencies on them.
"""

from __future__ import annotations

from pathlib import Path

from vnet.model.routing import InterfaceOspf
from vnet.model.routing_check import ospf_families, router_id
from vnet.model.topology import VirtualRouter


def daemons(vr: VirtualRouter) -> list[str]:
    """The daemons the VR runs, zebra first (the others connect to it)."""
    fams = ospf_families(vr)
    out = ["zebra"]
    if _uses_bfd(vr):
        out.append("bfdd")
    if "ipv4" in fams:
        out.append("ospfd")
    if "ipv6" in fams:
        out.append("ospf6d")
    return out


def _uses_bfd(vr: VirtualRouter) -> bool:
    return any(itf.ospf is not None and itf.ospf.bfd is not None for itf in vr.interfaces)


def _ospf_interfaces(vr: VirtualRouter) -> list[tuple[str, InterfaceOspf]]:
    return [(vr.ifname(k), itf.ospf) for k, itf in enumerate(vr.interfaces) if itf.ospf]


def _head(vr: VirtualRouter, daemon: str, directory: Path) -> list[str]:
    return [f"hostname {vr.name}", f"log file {directory / daemon}.log", "!"]


def config_files(vr: VirtualRouter, directory: Path) -> dict[str, str]:
    """File name -> text, for each daemon of `vr` (logs go into `directory`)."""
    rid = router_id(vr)
    files = {"zebra.conf": _head(vr, "zebra", directory)}
    if "bfdd" in daemons(vr):
        files["bfdd.conf"] = _head(vr, "bfdd", directory) + _bfd_profiles(vr)
    for daemon, proto, ip, router in (
        ("ospfd", "ospf", "ip", "ospf"),
        ("ospf6d", "ospf6", "ipv6", "ospf6"),
    ):
        if daemon not in daemons(vr):
            continue
        lines = _head(vr, daemon, directory)
        for name, o in _ospf_interfaces(vr):
            lines += [f"interface {name}", f" {ip} {proto} area {o.area}"]
            lines += [f" {ip} {proto} hello-interval {o.hello}"]
            lines += [f" {ip} {proto} dead-interval {o.dead}"]
            if o.cost is not None:
                lines.append(f" {ip} {proto} cost {o.cost}")
            if o.passive:
                lines.append(f" {ip} {proto} passive")
            if o.bfd is not None:
                lines += [f" {ip} {proto} bfd", f" {ip} {proto} bfd profile {name}"]
            lines.append("!")
        lines += [f"router {router}", f" {router} router-id {rid}", " redistribute connected"]
        files[f"{daemon}.conf"] = [*lines, "!"]
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def _bfd_profiles(vr: VirtualRouter) -> list[str]:
    lines = ["bfd"]
    for name, o in _ospf_interfaces(vr):
        if o.bfd is not None:
            lines += [
                f" profile {name}",
                f"  receive-interval {o.bfd.min_rx}",
                f"  transmit-interval {o.bfd.min_tx}",
                f"  detect-multiplier {o.bfd.multiplier}",
                " !",
            ]
    return [*lines, "!"]
