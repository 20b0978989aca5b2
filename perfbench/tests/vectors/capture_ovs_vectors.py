#!/usr/bin/env python3
"""Capture OpenFlow byte vectors from a real Open vSwitch for perfbench's codec tests.

Run inside the network namespace where ovs-vswitchd runs (the bridge's
controller must be tcp:127.0.0.1:PORT) while tcpdump records loopback:

    ip netns exec NS tcpdump -i lo -U -w of.pcap 'tcp port 6653' &
    ip netns exec NS python3 capture_ovs_vectors.py --version 4 --inject-iface pbd0
    ip netns exec NS python3 capture_ovs_vectors.py --version 1 --inject-iface pbd0
    python3 capture_ovs_vectors.py --from-pcap of.pcap --out .

The first form plays a controller: it exchanges HELLO, asks for features, echo,
port statistics and a barrier, installs a table-miss flow, sends a PACKET_OUT,
sends a message type OVS does not know (to get an OFPT_ERROR), injects one
probe frame on --inject-iface to get a PACKET_IN, and waits for OVS's own
ECHO_REQUEST. The second form splits the recorded TCP streams into messages
and writes one hex file per message: <from>_of<ver>_<type>.hex.
"""

import argparse
import socket
import struct
import time

NAMES = {
    1: {
        0: "hello",
        1: "error",
        2: "echo_request",
        3: "echo_reply",
        5: "features_request",
        6: "features_reply",
        9: "set_config",
        10: "packet_in",
        12: "port_status",
        13: "packet_out",
        14: "flow_mod",
        16: "stats_request",
        17: "stats_reply",
        18: "barrier_request",
        19: "barrier_reply",
    },
    4: {
        0: "hello",
        1: "error",
        2: "echo_request",
        3: "echo_reply",
        5: "features_request",
        6: "features_reply",
        9: "set_config",
        10: "packet_in",
        12: "port_status",
        13: "packet_out",
        14: "flow_mod",
        18: "multipart_request",
        19: "multipart_reply",
        20: "barrier_request",
        21: "barrier_reply",
    },
}


def msg(version, mtype, xid, body=b""):
    return struct.pack("!BBHI", version, mtype, 8 + len(body), xid) + body


def probe_frame(tenant=0, seq=1):
    eth = bytes.fromhex("0250fffffffe") + bytes([2, 0x50, 0, 0, 0, tenant]) + b"\x08\x00"
    payload = b"PFB1" + struct.pack("!IQQ", tenant, seq, time.monotonic_ns())
    udp_len = 8 + len(payload)
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + udp_len,
        0,
        0,
        64,
        17,
        0,
        bytes([10, 250, 0, 1]),
        bytes([10, 251, 0, 1]),
    )
    s = sum(struct.unpack("!10H", ip))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 47000, 47000, udp_len, 0)
    return eth + ip + udp + payload


def recv_msgs(conn, seconds, want=None):
    """Read messages for up to `seconds` (or until a message of type `want` arrives)."""
    conn.settimeout(0.05)
    buf = b""
    got = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            data = conn.recv(65536)
            if not data:
                break
            buf += data
        except TimeoutError:
            pass
        while len(buf) >= 8:
            length = struct.unpack("!H", buf[2:4])[0]
            if len(buf) < length:
                break
            m, buf = buf[:length], buf[length:]
            got.append(m)
            if m[1] == 2:  # answer OVS's ECHO_REQUEST
                conn.sendall(m[:1] + b"\x03" + m[2:])
        if want is not None and any(m[1] == want for m in got):
            break
    return got


def play(args):
    v = args.version
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.port))
    srv.listen(1)
    srv.settimeout(args.timeout)
    conn, _ = srv.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    hello_body = b"" if v == 1 else struct.pack("!HHI", 1, 8, 1 << v)
    conn.sendall(msg(v, 0, 1, hello_body))
    recv_msgs(conn, 2, want=0)
    conn.sendall(msg(v, 5, 2))
    recv_msgs(conn, 2, want=6)
    conn.sendall(msg(v, 2, 3, b"perfbnch"))
    recv_msgs(conn, 2, want=3)
    if v == 1:
        stats = struct.pack("!HHH6x", 4, 0, 0xFFFF)
        conn.sendall(msg(v, 16, 4, stats))
        recv_msgs(conn, 2, want=17)
        barrier_req, barrier_rep = 18, 19
        # FLOW_MOD: match all, priority 0, output:CONTROLLER max_len 0xffff
        fm = struct.pack("!I", (1 << 22) - 1) + bytes(36)
        fm += struct.pack("!QHHHHIHH", 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFF, 0)
        fm += struct.pack("!HHHH", 0, 8, 0xFFFD, 0xFFFF)
        po = struct.pack("!IHH", 0xFFFFFFFF, 0xFFFD, 8) + struct.pack("!HHHH", 0, 8, 1, 0)
    else:
        stats = struct.pack("!HH4xI4x", 4, 0, 0xFFFFFFFF)
        conn.sendall(msg(v, 18, 4, stats))
        recv_msgs(conn, 2, want=19)
        barrier_req, barrier_rep = 20, 21
        fm = struct.pack(
            "!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0
        )
        fm += struct.pack("!HH4x", 1, 4)  # empty OXM match, padded to 8
        fm += struct.pack("!HH4x", 4, 24) + struct.pack("!HHIH6x", 0, 16, 0xFFFFFFFD, 0xFFFF)
        po = struct.pack("!IIH6x", 0xFFFFFFFF, 0xFFFFFFFD, 16) + struct.pack("!HHIH6x", 0, 16, 1, 0)
    conn.sendall(msg(v, barrier_req, 5))
    recv_msgs(conn, 2, want=barrier_rep)
    conn.sendall(msg(v, 14, 6, fm) + msg(v, barrier_req, 7))
    recv_msgs(conn, 2, want=barrier_rep)
    conn.sendall(msg(v, 13, 8, po + probe_frame(0, 8)))
    conn.sendall(msg(v, 30 if v == 4 else 22, 9, b"unknown!"))
    recv_msgs(conn, 2, want=1)
    if args.inject_iface:
        raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        raw.bind((args.inject_iface, 0))
        raw.send(probe_frame(0, 42))
        recv_msgs(conn, 3, want=10)
    # OVS sends ECHO_REQUEST after its inactivity probe interval (5 s by default).
    recv_msgs(conn, args.echo_wait, want=2)
    conn.close()
    srv.close()


def streams_from_pcap(path, port):
    """TCP payload per direction ('ovs' = sent by OVS, 'ctl' = sent by the controller), in order."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    off = 24
    streams = {"ovs": {}, "ctl": {}}
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off : off + 16])
        pkt = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        if linktype == 1:
            l3 = pkt[14:]
        elif linktype == 113:  # Linux cooked
            l3 = pkt[16:]
        elif linktype == 276:  # Linux cooked v2
            l3 = pkt[20:]
        else:
            l3 = pkt
        if not l3 or l3[0] >> 4 != 4:
            continue
        ihl = (l3[0] & 0xF) * 4
        tcp = l3[ihl:]
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        thl = (tcp[12] >> 4) * 4
        payload = tcp[thl : struct.unpack("!H", l3[2:4])[0] - ihl]
        if not payload:
            continue
        # The controller listens on `port`: segments to it come from OVS.
        d = "ovs" if dport == port else "ctl" if sport == port else None
        if d is None:
            continue
        key = (sport, dport)
        streams[d].setdefault(key, {})[seq] = payload  # dedups retransmissions
    out = {}
    for d, conns in streams.items():
        out[d] = [b"".join(p for _, p in sorted(segs.items())) for segs in conns.values()]
    return out


def split_msgs(stream):
    msgs = []
    while len(stream) >= 8:
        length = struct.unpack("!H", stream[2:4])[0]
        if length < 8 or len(stream) < length:
            break
        msgs.append(stream[:length])
        stream = stream[length:]
    return msgs


def extract(args):
    import os

    seen = set()
    for who, conns in streams_from_pcap(args.from_pcap, args.port).items():
        for stream in conns:
            for m in split_msgs(stream):
                v, t = m[0], m[1]
                name = NAMES.get(v, {}).get(t, f"type{t}")
                fname = f"{who}_of{'10' if v == 1 else '13'}_{name}.hex"
                if fname in seen:
                    continue
                seen.add(fname)
                hexs = m.hex()
                lines = [hexs[i : i + 64] for i in range(0, len(hexs), 64)]
                with open(os.path.join(args.out, fname), "w") as f:
                    peer = "controller" if who == "ovs" else "ovs"
                    f.write(
                        f"# {who} -> {peer}, captured with tcpdump on loopback port"
                        f" {args.port} (Open vSwitch userspace datapath)\n"
                    )
                    f.write("\n".join(lines) + "\n")
                print(fname, len(m))


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--version", type=int, choices=[1, 4], default=4)
    p.add_argument("--port", type=int, default=6653)
    p.add_argument("--inject-iface")
    p.add_argument("--timeout", type=float, default=20)
    p.add_argument("--echo-wait", type=float, default=7)
    p.add_argument("--from-pcap")
    p.add_argument("--out", default=".")
    a = p.parse_args()
    extract(a) if a.from_pcap else play(a)


if __name__ == "__main__":
    main()
