"""Failure injection in a running lab: a link cut or lossy, a host losing its power.

A link is named by its two hosts, `h1-h2` (either order). `link down` sets
it down (the lab's end of the veth pair; the other loses its carrier), as a
pulled cable would; `link set --loss` drops a
share of what leaves either end (an eBPF program, substrate/loss.py: this
kernel has no netem). `host down` sets every link of the host down and stops
its agent, whose VRs' routing daemons stop with it, as a power failure would;
`host up` brings the links back and starts the agent again, which restores
its VRs from its state directory. Bringing a link up converges the lab's own
objects again (the kernel drops a link's routes when it goes down), which also
brings up any other link left down; `lab up` of the file does the same, and
`lab down` works as before.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from vnet.lab import agents
from vnet.lab import record as records
from vnet.lab.lab import converge_lab
from vnet.lab.record import LabError, read_record, write_record
from vnet.lab.topology_file import load_topology
from vnet.model import Topology
from vnet.model.topology import UnderlayLink
from vnet.substrate import Kernel, lab_placement, loss
from vnet.substrate.marks import NsName
from vnet.substrate.placement import underlay_port_name
from vnet.tools import processes

NETEM_MODULE = Path("/sys/module/sch_netem")


def _topology(lab: str) -> Topology:
    """The lab's file, under the lab's name: a lab may run under another name than its
    file's (`lab.up(path, topology=...)`: a benchmark's, a demo's), and every namespace
    it made carries the name it runs under."""
    rec = read_record(lab)
    if rec is None or rec.file is None:
        raise LabError(f"no lab {lab!r} is up (or it was made without a file)")
    topo = load_topology(rec.file)
    return topo if topo.name == lab else topo.model_copy(update={"name": lab})


def link_of(topo: Topology, name: str) -> UnderlayLink:
    """The link `a-b` (or `b-a`); LabError naming the lab's links if there is none."""
    a, sep, b = name.partition("-")
    for link in topo.links:
        if sep and {link.a, link.b} == {a, b}:
            return link
    known = ", ".join(f"{x.a}-{x.b}" for x in topo.links) or "none"
    raise LabError(f"no link {name!r} in lab {topo.name!r} (its links: {known})")


def _ends(topo: Topology, link: UnderlayLink) -> list[tuple[NsName, str]]:
    where = lab_placement(topo.name)
    return [
        (where.host_ns(link.a), underlay_port_name(link.b)),
        (where.host_ns(link.b), underlay_port_name(link.a)),
    ]


def set_link(lab: str, name: str, up: bool) -> None:
    topo = _topology(lab)
    _set_state(topo, [link_of(topo, name)], up)


def _set_state(topo: Topology, links: list[UnderlayLink], up: bool) -> None:
    """Each link down or up at the end the lab owns (its `a` side; the veth's other end
    loses its carrier with it, so nothing passes either way, as with a pulled cable).
    Up also puts back the underlay routes the kernel dropped with the link: the lab's
    converge, which adds only what is missing (as `lab up` of the file would)."""
    with Kernel() as k:
        for link in links:
            ns, port = _ends(topo, link)[0]
            k.set_link(ns, port, state="up" if up else "down")
    if up:
        converge_lab(topo)


def parse_share(text: str) -> Fraction:
    """'2%' or '2' -> 1/50: a loss in percent, 0 to 100."""
    raw = text.strip().removesuffix("%")
    try:
        share = Fraction(raw) / 100
    except (ValueError, ZeroDivisionError):
        raise LabError(f"--loss {text!r}: write a percentage, e.g. 2%") from None
    if not 0 <= share <= 1:
        raise LabError(f"--loss {text!r}: a loss is between 0% and 100%")
    return share


def netem_missing() -> str | None:
    """Why delay and jitter cannot be set here (None if the kernel has netem)."""
    if NETEM_MODULE.exists():
        return None
    return (
        "delay and jitter need the netem qdisc, which this kernel lacks (no sch_netem: "
        "CONFIG_NET_SCH_NETEM is not built); only --loss works here, as an eBPF program"
    )


def set_link_loss(lab: str, name: str, share: Fraction) -> None:
    topo = _topology(lab)
    link = link_of(topo, name)
    with Kernel() as k:
        for ns, port in _ends(topo, link):
            loss.set_loss(k, ns, port, share)


def _host_links(topo: Topology, host: str) -> list[UnderlayLink]:
    if host not in {h.name for h in topo.hosts}:
        known = ", ".join(h.name for h in topo.hosts)
        raise LabError(f"no host {host!r} in lab {topo.name!r} (its hosts: {known})")
    return [link for link in topo.links if host in (link.a, link.b)]


def host_down(lab: str, host: str) -> bool:
    """Every link of `host` down and its agent stopped; whether an agent was running."""
    topo = _topology(lab)
    _set_state(topo, _host_links(topo, host), up=False)
    rec = read_record(lab)
    assert rec is not None
    what = f"agent {host}"
    stopped = [p for p in rec.processes if p.what == what and processes.stop(p)]
    rec.processes = [p for p in rec.processes if p.what != what]
    write_record(rec)
    return bool(stopped)


def host_up(lab: str, host: str) -> None:
    """The links of `host` up and its agent started again (it restores its VRs)."""
    topo = _topology(lab)
    _set_state(topo, _host_links(topo, host), up=True)
    rec = read_record(lab)
    assert rec is not None
    what = f"agent {host}"
    if topo.management is None or not topo.management.agents:
        return
    if any(p.what == what and processes.is_running(p) for p in rec.processes):
        return
    directory = agents.agent_dir(records.RECORD_DIR, lab, host)
    child = agents.start(topo, host, directory)
    rec.processes = [p for p in rec.processes if p.what != what]
    rec.processes.append(processes.record(child, what))
    write_record(rec)
    agents.release(child)
    try:
        agents.wait_ready({host: (child, directory)})
    except RuntimeError as err:
        raise LabError(str(err)) from None
