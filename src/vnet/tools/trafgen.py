"""trafgen (netsniff-ng): one frame blasted from a namespace as fast as the CPUs allow."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from vnet.tools import processes

FCS_BYTES = 4  # counted in a frame size (RFC 2544), never carried by a veth
UDP_HEADERS = 14 + 20 + 8  # Ethernet + IPv4 + UDP


def trafgen_packet(dst_mac: str, src_mac: str, src_ip: str, dst_ip: str, frame_size: int) -> str:
    """trafgen's description of one UDP frame of `frame_size` bytes, FCS included.

    64 B on the wire is 60 B handed to the device (a veth carries no FCS).
    """
    fill = frame_size - FCS_BYTES - UDP_HEADERS
    if fill < 0:
        raise ValueError(f"a {frame_size} B frame cannot hold Ethernet/IPv4/UDP headers")
    return (
        f"{{ eth(da={dst_mac}, sa={src_mac}), "
        f"ipv4(saddr={src_ip}, daddr={dst_ip}, ttl=64), "
        f"udp(sport=1024, dport=9), fill(0x00, {fill}) }}"
    )


def parse_trafgen_sent(stdout: str) -> int | None:
    """Packets trafgen says it sent ("N packets outgoing"), summed over its workers."""
    total, found = 0, False
    for line in stdout.splitlines():
        words = line.split()
        if len(words) >= 3 and words[1:3] == ["packets", "outgoing"]:
            total += int(words[0])
            found = True
    return total if found else None


class Trafgen:
    """trafgen blasting one frame from a namespace, for the life of a `with` block.

    trafgen forks a worker per CPU and workers ignore a signal sent to the
    parent alone, so it runs in a process group of its own and the group led
    by our child's PID is signalled; nothing else is.
    """

    def __init__(self, ns: str, ifname: str, packet: str, cpus: int) -> None:
        self.argv = ["trafgen", "--dev", ifname, "--cpus", str(cpus)]
        # Leave the machine's socket memory and IRQ affinity alone.
        self.argv += ["--no-sock-mem", "--notouch-irq", packet]
        self.ns = ns
        self.stdout = self.stderr = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Trafgen:
        self._proc = processes.spawn(
            self.ns,
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # sysctl warnings inside a namespace are expected
            text=True,
            start_new_session=True,
        )
        return self

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __exit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is None:
            return
        for sig, grace in ((signal.SIGINT, 3.0), (signal.SIGKILL, 3.0)):
            # Only while our child is unreaped is its PID (= the group's ID) surely ours.
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
            try:
                self.stdout, self.stderr = proc.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue

    @property
    def sent(self) -> int | None:
        return parse_trafgen_sent(self.stdout)

    def complaint(self) -> str:
        """trafgen's last words, without the expected sysctl warnings."""
        lines = [
            line.strip()
            for line in (self.stderr + self.stdout).splitlines()
            if line.strip() and "Cannot set system socket memory" not in line
        ]
        return "; ".join(lines[-3:])
