//! Version-agnostic builders and readers for the messages perfbench sends
//! and answers. The hot paths write straight into an output buffer.

use crate::codec::wire::Put;
use crate::codec::{self, CodecError, Message, PortCounters, Version, begin, finish, of10, of13};

/// Transaction ids at or above this are used for handshakes and control
/// messages; measured requests use ids below it.
pub const CONTROL_XID_BASE: u32 = 0xF000_0000;

/// A HELLO offering `allowed` versions: a plain 1.0 HELLO if that is all, else
/// a HELLO of the highest version with a version bitmap (OpenFlow 1.3.1+).
pub fn hello(allowed: &[Version]) -> Message {
    if allowed.iter().all(|v| *v == Version::V10) {
        return Message::V10(of10::Message::Hello { body: vec![] });
    }
    let bits = allowed.iter().fold(0u32, |b, v| b | (1 << v.wire()));
    Message::V13(of13::Message::Hello {
        elements: vec![of13::HelloElement::VersionBitmap(vec![bits])],
    })
}

pub fn features_request(v: Version) -> Message {
    match v {
        Version::V10 => Message::V10(of10::Message::FeaturesRequest),
        Version::V13 => Message::V13(of13::Message::FeaturesRequest),
    }
}

pub fn barrier_request(v: Version) -> Message {
    match v {
        Version::V10 => Message::V10(of10::Message::BarrierRequest),
        Version::V13 => Message::V13(of13::Message::BarrierRequest),
    }
}

pub fn port_stats_request(v: Version) -> Message {
    match v {
        Version::V10 => Message::V10(of10::Message::PortStatsRequest {
            flags: 0,
            port_no: of10::OFPP_NONE,
        }),
        Version::V13 => Message::V13(of13::Message::PortStatsRequest {
            flags: 0,
            port_no: of13::OFPP_ANY,
        }),
    }
}

/// A priority-0 match-all flow that sends every packet, whole, to the controller.
pub fn table_miss_to_controller(v: Version) -> Message {
    match v {
        Version::V10 => Message::V10(of10::Message::FlowMod(of10::FlowMod {
            match_: of10::Match::all(),
            cookie: 0,
            command: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 0,
            buffer_id: of10::NO_BUFFER,
            out_port: of10::OFPP_NONE,
            flags: 0,
            actions: vec![of10::Action::Output {
                port: of10::OFPP_CONTROLLER,
                max_len: 0xffff,
            }],
        })),
        Version::V13 => Message::V13(of13::Message::FlowMod(of13::FlowMod {
            cookie: 0,
            cookie_mask: 0,
            table_id: 0,
            command: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 0,
            buffer_id: of13::NO_BUFFER,
            out_port: of13::OFPP_ANY,
            out_group: 0xffff_ffff,
            flags: 0,
            match_: of13::Match::default(),
            instructions: vec![of13::Instruction::ApplyActions(vec![
                of13::Action::Output {
                    port: of13::OFPP_CONTROLLER,
                    max_len: of13::OFPCML_NO_BUFFER,
                },
            ])],
        })),
    }
}

/// Flow `n` of a flow-setup run: the probe's UDP flow (destination port
/// 47000) with source port `n` (mod 2^16) arriving on `port`, sent back out of
/// that port. It expires after 10 s, so a long run keeps the table bounded.
pub fn flow_setup(v: Version, n: u32, port: u32) -> Message {
    let (udp, tp_src) = (crate::probe::UDP_PORT, n as u16);
    match v {
        Version::V10 => {
            // Wildcard everything but in_port, dl_type, nw_proto, tp_src, tp_dst.
            let exact = 1 | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7;
            let mut m = of10::Match::all();
            m.wildcards &= !exact;
            (m.in_port, m.dl_type, m.nw_proto) = (port as u16, 0x0800, 17);
            (m.tp_src, m.tp_dst) = (tp_src, udp);
            Message::V10(of10::Message::FlowMod(of10::FlowMod {
                match_: m,
                cookie: n as u64,
                command: 0,
                idle_timeout: 0,
                hard_timeout: 10,
                priority: 100,
                buffer_id: of10::NO_BUFFER,
                out_port: of10::OFPP_NONE,
                flags: 0,
                actions: vec![of10::Action::Output {
                    port: 0xfff8,
                    max_len: 0,
                }],
            }))
        }
        Version::V13 => {
            let oxm = |field: u8, value: Vec<u8>| of13::Oxm {
                class: of13::OFPXMC_OPENFLOW_BASIC,
                field,
                hasmask: false,
                value,
            };
            let fields = vec![
                of13::Oxm::in_port(port),
                oxm(5, 0x0800u16.to_be_bytes().to_vec()),
                oxm(10, vec![17]),
                oxm(15, tp_src.to_be_bytes().to_vec()),
                oxm(16, udp.to_be_bytes().to_vec()),
            ];
            Message::V13(of13::Message::FlowMod(of13::FlowMod {
                cookie: n as u64,
                cookie_mask: 0,
                table_id: 0,
                command: 0,
                idle_timeout: 0,
                hard_timeout: 10,
                priority: 100,
                buffer_id: of13::NO_BUFFER,
                out_port: of13::OFPP_ANY,
                out_group: 0xffff_ffff,
                flags: 0,
                match_: of13::Match { fields },
                instructions: vec![of13::Instruction::ApplyActions(vec![
                    of13::Action::Output {
                        port: 0xffff_fff8,
                        max_len: 0,
                    },
                ])],
            }))
        }
    }
}

/// FLOW_MOD `n` ([`flow_setup`]) and a BARRIER_REQUEST with the same xid:
/// the BARRIER_REPLY confirms the switch has installed the flow.
pub fn write_flow_mod_barrier(
    out: &mut Vec<u8>,
    v: Version,
    xid: u32,
    port: u32,
) -> Result<(), CodecError> {
    flow_setup(v, xid, port).encode(xid, out)?;
    write_empty(out, v, barrier_request_type(v), xid);
    Ok(())
}

/// The FEATURES_REPLY of an emulated switch with `nports` ports.
pub fn features_reply(v: Version, dpid: u64, nports: u16) -> Message {
    match v {
        Version::V10 => Message::V10(of10::Message::FeaturesReply(of10::FeaturesReply {
            datapath_id: dpid,
            n_buffers: 0,
            n_tables: 1,
            capabilities: 0x87,
            actions: 0xfff,
            ports: (1..=nports)
                .map(|p| {
                    let d = dpid.to_be_bytes();
                    of10::PhyPort::named(
                        p,
                        [0x02, d[5], d[6], d[7], 0, p as u8],
                        &format!("pb{dpid}-{p}"),
                    )
                })
                .collect(),
        })),
        Version::V13 => Message::V13(of13::Message::FeaturesReply(of13::FeaturesReply {
            datapath_id: dpid,
            n_buffers: 0,
            n_tables: 1,
            auxiliary_id: 0,
            capabilities: 0x4f,
            reserved: 0,
        })),
    }
}

/// The port statistics reply of an emulated switch (counters derived from `tick`).
pub fn port_stats_reply(v: Version, nports: u16, tick: u64) -> Message {
    let c = |p: u64| PortCounters {
        rx_packets: tick + p,
        tx_packets: tick + 2 * p,
        rx_bytes: 64 * (tick + p),
        tx_bytes: 64 * (tick + 2 * p),
        ..PortCounters::default()
    };
    match v {
        Version::V10 => Message::V10(of10::Message::PortStatsReply {
            flags: 0,
            stats: (1..=nports)
                .map(|p| of10::PortStats {
                    port_no: p,
                    counters: c(p as u64),
                })
                .collect(),
        }),
        Version::V13 => Message::V13(of13::Message::PortStatsReply {
            flags: 0,
            stats: (1..=nports as u32)
                .map(|p| of13::PortStats {
                    port_no: p,
                    counters: c(p as u64),
                    duration_sec: (tick / 1000) as u32,
                    duration_nsec: 0,
                })
                .collect(),
        }),
    }
}

/// Writes an ECHO_REQUEST carrying `payload` (hot path).
#[inline]
pub fn write_echo_request(
    out: &mut Vec<u8>,
    v: Version,
    xid: u32,
    payload: &[u8],
) -> Result<(), CodecError> {
    let start = begin(out, v.wire(), codec::types::ECHO_REQUEST, xid);
    out.extend_from_slice(payload);
    finish(out, start)
}

/// Writes a body-less message of `msg_type` (FEATURES_REQUEST, BARRIER_REQUEST) (hot path).
#[inline]
pub fn write_empty(out: &mut Vec<u8>, v: Version, msg_type: u8, xid: u32) {
    begin(out, v.wire(), msg_type, xid);
    let at = out.len() - 6;
    out[at..at + 2].copy_from_slice(&8u16.to_be_bytes());
}

/// Writes a PACKET_OUT that sends `frame` out of `port` (hot path).
#[inline]
pub fn write_packet_out(
    out: &mut Vec<u8>,
    v: Version,
    xid: u32,
    port: u32,
    frame: &[u8],
) -> Result<(), CodecError> {
    match v {
        Version::V10 => of10::write_packet_out(out, xid, port as u16, frame),
        Version::V13 => of13::write_packet_out(out, xid, port, frame),
    }
}

/// Writes a PACKET_IN (reason: no match) carrying `frame` from `in_port` (hot path).
#[inline]
pub fn write_packet_in(
    out: &mut Vec<u8>,
    v: Version,
    xid: u32,
    in_port: u32,
    frame: &[u8],
) -> Result<(), CodecError> {
    let start = begin(out, v.wire(), codec::types::PACKET_IN, xid);
    out.put_u32(of10::NO_BUFFER);
    out.put_u16(frame.len() as u16);
    match v {
        Version::V10 => {
            out.put_u16(in_port as u16);
            out.put_u8(0);
            out.put_u8(0);
        }
        Version::V13 => {
            out.put_u8(0);
            out.put_u8(0);
            out.put_u64(0);
            // OXM match with in_port: type 1, length 12, one 8-byte TLV, 4 bytes padding.
            out.put_u16(of13::OFPMT_OXM);
            out.put_u16(12);
            out.put_u16(of13::OFPXMC_OPENFLOW_BASIC);
            out.put_u8(of13::OXM_OF_IN_PORT << 1);
            out.put_u8(4);
            out.put_u32(in_port);
            out.put_zeros(4);
            out.put_zeros(2);
        }
    }
    out.extend_from_slice(frame);
    finish(out, start)
}

/// The data carried by a PACKET_IN body (hot path).
#[inline]
pub fn packet_in_data(v: Version, body: &[u8]) -> Result<&[u8], CodecError> {
    match v {
        Version::V10 => of10::packet_in_data(body),
        Version::V13 => of13::packet_in_data(body),
    }
}

/// The data carried by a PACKET_OUT body (hot path).
#[inline]
pub fn packet_out_data(v: Version, body: &[u8]) -> Result<&[u8], CodecError> {
    match v {
        Version::V10 => of10::packet_out_data(body),
        Version::V13 => of13::packet_out_data(body),
    }
}

/// Message type numbers that differ between the versions.
pub fn stats_request_type(v: Version) -> u8 {
    match v {
        Version::V10 => of10::t::STATS_REQUEST,
        Version::V13 => of13::t::MULTIPART_REQUEST,
    }
}

pub fn stats_reply_type(v: Version) -> u8 {
    match v {
        Version::V10 => of10::t::STATS_REPLY,
        Version::V13 => of13::t::MULTIPART_REPLY,
    }
}

pub fn barrier_request_type(v: Version) -> u8 {
    match v {
        Version::V10 => of10::t::BARRIER_REQUEST,
        Version::V13 => of13::t::BARRIER_REQUEST,
    }
}

pub fn barrier_reply_type(v: Version) -> u8 {
    match v {
        Version::V10 => of10::t::BARRIER_REPLY,
        Version::V13 => of13::t::BARRIER_REPLY,
    }
}

/// Whether a stats/multipart reply body says more parts follow (REPLY_MORE).
#[inline]
pub fn stats_reply_more(body: &[u8]) -> bool {
    body.len() >= 4 && body[3] & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_path_writers_match_the_full_codec() {
        let frame = crate::probe::template(3, 64);
        for v in [Version::V10, Version::V13] {
            let mut fast = Vec::new();
            write_packet_in(&mut fast, v, 77, 2, &frame).unwrap();
            let (h, m) = codec::decode(&fast).unwrap();
            assert_eq!(h.xid, 77);
            let mut full = Vec::new();
            m.encode(77, &mut full).unwrap();
            assert_eq!(fast, full, "PACKET_IN {v}");
            assert_eq!(packet_in_data(v, &fast[8..]).unwrap(), &frame[..]);

            let mut po = Vec::new();
            write_packet_out(&mut po, v, 9, 1, &frame).unwrap();
            let (_, m) = codec::decode(&po).unwrap();
            assert_eq!(m.to_bytes(9).unwrap(), po, "PACKET_OUT {v}");
            assert_eq!(packet_out_data(v, &po[8..]).unwrap(), &frame[..]);

            let mut e = Vec::new();
            write_echo_request(&mut e, v, 5, b"abcdefgh").unwrap();
            let (h, _) = codec::decode(&e).unwrap();
            assert_eq!((h.msg_type, h.length), (codec::types::ECHO_REQUEST, 16));

            let mut b = Vec::new();
            write_empty(&mut b, v, barrier_request_type(v), 6);
            assert_eq!(codec::decode(&b).unwrap().1, barrier_request(v));
        }
    }
}
