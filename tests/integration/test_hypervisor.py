"""The hypervisor slicing Open vSwitch (userspace datapath) between two tenant
controllers, as `vnet bench sdn` runs OVS: everything in one namespace.

br0 has ports 1 (a veth whose peer injects frames), 2 and 3 (internal). Slice
"red" owns ports 1-2 and IPv4 only, at most 4 flows and 50 PACKET_INs/s; slice
"blue" owns port 3 and is limited to 200 control messages/s. The tenants are small OpenFlow 1.3
controllers written here on plain sockets.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vnet.bench.sdn import hypervisor as sdn_hypervisor
from vnet.bench.sdn.lab import OvsLab
from vnet.bench.sdn.native import RELEASE
from vnet.bench.sdn.perfbench import _wait_for_line
from vnet.tools import netns, processes

HV_PORT = 6753
RED_PORT, BLUE_PORT = 6653, 6654
OF13 = 4
HELLO, ERROR, ECHO_REQUEST, ECHO_REPLY = 0, 1, 2, 3
PACKET_IN, FLOW_MOD, MULTIPART_REQUEST, MULTIPART_REPLY = 10, 14, 18, 19
BARRIER_REQUEST, BARRIER_REPLY = 20, 21
OFPMP_PORT_DESC = 13
OFPMP_PORT_STATS = 4
PACKET_OUT = 13
OFPP_CONTROLLER = 0xFFFFFFFD

SLICES = f"""
[[slice]]
name = "red"
controller = "127.0.0.1:{RED_PORT}"
ports = [1, 2]
[slice.flowspace]
eth_type = 0x0800
[slice.limits]
flows = 4
packet_in_rate = 50
packet_in_burst = 10

[[slice]]
name = "blue"
controller = "127.0.0.1:{BLUE_PORT}"
ports = [3]
[slice.limits]
rate = 200
burst = 20
"""


def oxm(field_no: int, value: bytes) -> bytes:
    return struct.pack("!HBB", 0x8000, field_no << 1, len(value)) + value


def match(*oxms: bytes) -> bytes:
    body = b"".join(oxms)
    m = struct.pack("!HH", 1, 4 + len(body)) + body
    return m + b"\0" * (-len(m) % 8)


def apply_output(port: int) -> bytes:
    action = struct.pack("!HHIH6x", 0, 16, port, 0xFFFF)
    return struct.pack("!HH4x", 4, 8 + len(action)) + action


def flow_mod(m: bytes, instructions: bytes, priority: int, command: int = 0) -> bytes:
    head = struct.pack(
        "!QQBBHHHIIIH2x", 0x42, 0, 0, command, 0, 0, priority, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0
    )
    return head + m + instructions


@dataclass
class Tenant:
    """A tenant controller: listens, the hypervisor connects."""

    server: socket.socket
    sock: socket.socket | None = None
    buf: bytes = b""
    xid: int = 100
    seen: list[tuple[int, int, bytes]] = field(default_factory=list)

    def accept(self, timeout: float = 15) -> None:
        self.server.settimeout(timeout)
        self.sock, _ = self.server.accept()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.send(HELLO)
        assert self.wait_for(HELLO) is not None

    def send(self, msg_type: int, body: bytes = b"") -> int:
        assert self.sock is not None
        self.xid += 1
        self.sock.sendall(struct.pack("!BBHI", OF13, msg_type, 8 + len(body), self.xid) + body)
        return self.xid

    def recv(self, timeout: float) -> tuple[int, int, bytes] | None:
        """The next message, None on timeout; EOFError when the hypervisor closed."""
        assert self.sock is not None
        deadline = time.monotonic() + timeout
        while len(self.buf) < 8 or len(self.buf) < struct.unpack("!H", self.buf[2:4])[0]:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return None
            if not chunk:
                raise EOFError("the hypervisor closed the channel")
            self.buf += chunk
        _, msg_type, length, xid = struct.unpack("!BBHI", self.buf[:8])
        body, self.buf = self.buf[8:length], self.buf[length:]
        self.seen.append((msg_type, xid, body))
        return msg_type, xid, body

    def wait_for(self, msg_type: int, xid: int | None = None, timeout: float = 5) -> bytes | None:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            m = self.recv(left)
            if m is not None and m[0] == msg_type and (xid is None or m[1] == xid):
                return m[2]
        return None

    def error_for(self, xid: int, timeout: float = 2) -> tuple[int, int] | None:
        """(type, code) of the OFPT_ERROR answering `xid`, None if a barrier came first."""
        barrier = self.send(BARRIER_REQUEST)
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            m = self.recv(left)
            if m is None:
                break
            if m[0] == ERROR and m[1] == xid:
                return struct.unpack("!HH", m[2][:4])
            if m[0] == BARRIER_REPLY and m[1] == barrier:
                return None
        raise AssertionError(f"neither an error nor the barrier reply for xid {xid}")

    def echo_rtt(self) -> float:
        t = time.monotonic()
        xid = self.send(ECHO_REQUEST, b"ping")
        assert self.wait_for(ECHO_REPLY, xid) == b"ping"
        return time.monotonic() - t


def hypervisor_binary() -> Path:
    if not (RELEASE / "hypervisor").is_file() and shutil.which("cargo") is None:
        pytest.skip("cargo is not installed and the hypervisor is not built")
    return sdn_hypervisor.hypervisor_binary()


@dataclass
class Setup:
    lab: OvsLab
    red: Tenant
    blue: Tenant
    hv: subprocess.Popen[bytes]

    def dump_flows(self) -> str:
        done = subprocess.run(
            ["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", "br0"],
            env=self.lab.switch.env,
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        return done.stdout

    def inject(self, frame: bytes) -> None:
        with netns.entered(self.lab.ns):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        with s:
            s.bind((self.lab.dp_iface, 0))
            s.send(frame)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    if shutil.which("ovs-vswitchd") is None:
        pytest.skip("ovs-vswitchd is not installed (apt-get install openvswitch-switch)")
    exe = hypervisor_binary()
    slices = tmp_path_factory.mktemp("hv") / "slices.toml"
    slices.write_text(SLICES)
    with OvsLab() as lab:
        for port in (2, 3):
            name = f"hv{lab.tag}{port}"
            lab.switch.vsctl(
                "add-port", "br0", name, "--", "set", "Interface", name, "type=internal"
            )
            lab.switch.vsctl("set", "Interface", name, f"ofport_request={port}")
        with netns.entered(lab.ns):
            servers = [socket.create_server(("127.0.0.1", p)) for p in (RED_PORT, BLUE_PORT)]
        cmd = lab.in_ns(str(exe), "--listen", f"127.0.0.1:{HV_PORT}", "--slices", str(slices))
        hv = subprocess.Popen([*cmd, "--max-seconds", "300"], stdout=subprocess.PIPE)
        try:
            assert hv.stdout is not None
            assert _wait_for_line(hv.stdout, "ready", 10), "the hypervisor did not start"
            lab.set_controllers([HV_PORT])
            red, blue = Tenant(servers[0]), Tenant(servers[1])
            red.accept()
            blue.accept()
            yield Setup(lab, red, blue, hv)
        finally:
            processes.stop_child(hv, grace=10)
            for s in servers:
                s.close()


def port_desc(t: Tenant) -> set[int]:
    xid = t.send(MULTIPART_REQUEST, struct.pack("!HH4x", OFPMP_PORT_DESC, 0))
    body = t.wait_for(MULTIPART_REPLY, xid)
    assert body is not None
    ports = body[8:]
    return {struct.unpack("!I", ports[i : i + 4])[0] for i in range(0, len(ports), 64)}


def udp_frame() -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes(4))
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + bytes(8)


def test_each_tenant_sees_only_its_ports(setup: Setup) -> None:
    assert port_desc(setup.red) == {1, 2}
    assert port_desc(setup.blue) == {3}


def test_flows_are_sliced_and_packet_ins_routed(setup: Setup) -> None:
    red = setup.red
    # A table-miss rule from red becomes one rule per red port, IPv4 only.
    xid = red.send(FLOW_MOD, flow_mod(match(), apply_output(OFPP_CONTROLLER), 0))
    assert red.error_for(xid) is None
    flows = setup.dump_flows()
    assert "in_port=1" in flows and "in_port=2" in flows, flows
    assert "in_port=3" not in flows and "priority=0 actions" not in flows, flows
    setup.inject(udp_frame())
    body = red.wait_for(PACKET_IN, timeout=5)
    assert body is not None and udp_frame() in body
    assert setup.blue.recv(0.3) is None, "blue got red's PACKET_IN"


def test_out_of_flowspace_flow_mod_gets_eperm(setup: Setup) -> None:
    red = setup.red
    ipv6 = match(oxm(5, struct.pack("!H", 0x86DD)))
    xid = red.send(FLOW_MOD, flow_mod(ipv6, apply_output(2), 10))
    assert red.error_for(xid) == (5, 4), "OFPET_FLOW_MOD_FAILED / OFPFMFC_EPERM"
    blue_port = match(oxm(0, struct.pack("!I", 3)))
    xid = red.send(FLOW_MOD, flow_mod(blue_port, apply_output(1), 10))
    assert red.error_for(xid) == (5, 4)
    xid = red.send(FLOW_MOD, flow_mod(match(), apply_output(3), 10))
    assert red.error_for(xid) == (5, 4), "output to blue's port"
    flows = setup.dump_flows()
    assert "ipv6" not in flows and "priority=10" not in flows, flows


def test_flow_quota(setup: Setup) -> None:
    red = setup.red
    udp = match(oxm(5, struct.pack("!H", 0x0800)), oxm(10, b"\x11"))
    xid = red.send(FLOW_MOD, flow_mod(udp, apply_output(2), 20))
    assert red.error_for(xid) is None, "2 + 2 rules = the quota of 4"
    tcp = match(oxm(5, struct.pack("!H", 0x0800)), oxm(10, b"\x06"))
    xid = red.send(FLOW_MOD, flow_mod(tcp, apply_output(2), 20))
    assert red.error_for(xid) == (5, 1), "OFPFMFC_TABLE_FULL"
    assert "tcp" not in setup.dump_flows()


def packet_out(port: int, frame: bytes) -> bytes:
    action = struct.pack("!HHIH6x", 0, 16, port, 0)
    return struct.pack("!IIH6x", 0xFFFFFFFF, OFPP_CONTROLLER, len(action)) + action + frame


def test_packet_out_only_to_slice_ports(setup: Setup) -> None:
    red = setup.red
    frame = udp_frame()
    with netns.entered(setup.lab.ns):
        capture = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    with capture:
        capture.bind((setup.lab.dp_iface, 0))
        capture.settimeout(3)
        xid = red.send(PACKET_OUT, packet_out(1, frame))
        assert red.error_for(xid) is None
        while (got := capture.recv(2048)) != frame:
            assert frame not in got, got
    xid = red.send(PACKET_OUT, packet_out(3, frame))
    assert red.error_for(xid) == (2, 6), "OFPET_BAD_ACTION / OFPBAC_EPERM"


def test_port_stats_are_filtered(setup: Setup) -> None:
    red = setup.red
    xid = red.send(MULTIPART_REQUEST, struct.pack("!HH4xI4x", OFPMP_PORT_STATS, 0, 0xFFFFFFFF))
    body = red.wait_for(MULTIPART_REPLY, xid)
    assert body is not None
    entries = body[8:]
    ports = {struct.unpack("!I", entries[i : i + 4])[0] for i in range(0, len(entries), 112)}
    assert ports == {1, 2}, ports
    xid = red.send(MULTIPART_REQUEST, struct.pack("!HH4xI4x", OFPMP_PORT_STATS, 0, 3))
    assert red.error_for(xid) == (1, 5), "OFPET_BAD_REQUEST / OFPBRC_EPERM"


def test_flooding_tenant_is_limited(setup: Setup) -> None:
    blue, red = setup.blue, setup.red
    quiet = sorted(red.echo_rtt() for _ in range(20))
    assert blue.sock is not None
    flood = b"".join(struct.pack("!BBHI", OF13, ECHO_REQUEST, 8, 10_000 + i) for i in range(1000))
    blue.sock.sendall(flood)
    start = time.monotonic()
    noisy = sorted(red.echo_rtt() for _ in range(20))
    replies = 0
    while time.monotonic() - start < 1.0:
        m = blue.recv(max(0.0, 1.0 - (time.monotonic() - start)))
        replies += m is not None and m[0] == ECHO_REPLY
    # 200/s plus a burst of 20: about 220 in the first second, not 1000.
    assert 150 <= replies <= 260, replies
    # Red's control channel is not slowed by blue's flood.
    assert noisy[len(noisy) // 2] < max(0.02, 5 * quiet[len(quiet) // 2]), (quiet, noisy)
    while blue.recv(0.5) is not None:  # let the rest drain (5 s at 200/s at most)
        pass


def packet_ins_within(t: Tenant, seconds: float) -> int:
    """PACKET_INs `t` receives until none came for `seconds`."""
    count = 0
    while (m := t.recv(seconds)) is not None:
        count += m[0] == PACKET_IN
    return count


def test_flooding_packet_ins_are_limited_per_slice(setup: Setup) -> None:
    red, blue, lab = setup.red, setup.blue, setup.lab
    table_miss = flow_mod(match(), apply_output(OFPP_CONTROLLER), 0)
    for t in (red, blue):
        assert t.error_for(t.send(FLOW_MOD, table_miss)) is None
    blue_iface = f"hv{lab.tag}3"  # blue's port 3: frames sent on it enter br0 there
    up = processes.run(lab.ns, ["ip", "link", "set", blue_iface, "up"], timeout=10)
    assert up.returncode == 0, up.stderr
    # Not UDP: red's UDP rule from test_flow_quota would forward it without a PACKET_IN.
    frame = bytearray(udp_frame())
    frame[23] = 1  # IPv4 protocol: ICMP
    flood, quiet = 600, 20
    with netns.entered(lab.ns):
        red_side = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        blue_side = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    with red_side, blue_side:
        red_side.bind((lab.dp_iface, 0))
        blue_side.bind((blue_iface, 0))
        start = time.monotonic()
        for i in range(flood):
            red_side.send(frame)
            if i % (flood // quiet) == 0:
                blue_side.send(b"\x02\0\0\0\0\x03" + frame[6:])
    red_got = packet_ins_within(red, 1.0)
    elapsed = time.monotonic() - start
    blue_got = packet_ins_within(blue, 1.0)
    # Red: its burst of 10 plus 50/s while the flood lasted, never the 600 sent.
    assert 10 <= red_got <= 10 + 50 * elapsed + 10 < flood, (red_got, elapsed)
    # Blue has no PACKET_IN limit and is not held back by red's.
    assert blue_got == quiet, blue_got


def test_garbage_and_truncated_tenants_lose_only_their_channel(setup: Setup) -> None:
    blue, red = setup.blue, setup.red
    assert blue.sock is not None
    blue.sock.sendall(struct.pack("!BBHI", OF13, ECHO_REQUEST, 3, 1))  # length < 8
    with pytest.raises((EOFError, ConnectionResetError)):
        blue.wait_for(ECHO_REPLY, timeout=5)
    assert red.echo_rtt() < 1.0
    # The hypervisor reconnects to blue; now a message cut short, then blue closes.
    blue.accept()
    assert port_desc(blue) == {3}
    blue.sock.sendall(struct.pack("!BBHI", OF13, FLOW_MOD, 200, 7) + bytes(20))
    blue.sock.close()
    assert red.echo_rtt() < 1.0
    assert port_desc(red) == {1, 2}
    assert setup.hv.poll() is None, "the hypervisor exited"
