//! OpenFlow 1.0 (wire version 0x01) messages.

use super::wire::{Put, Reader};
use super::{CodecError, ErrorMsg, Header, OFP10, PortCounters, begin, finish, split};

pub mod t {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const VENDOR: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const STATS_REQUEST: u8 = 16;
    pub const STATS_REPLY: u8 = 17;
    pub const BARRIER_REQUEST: u8 = 18;
    pub const BARRIER_REPLY: u8 = 19;
}

pub const OFPST_PORT: u16 = 4;
pub const OFPP_NONE: u16 = 0xffff;
pub const OFPP_CONTROLLER: u16 = 0xfffd;
pub const OFPAT_OUTPUT: u16 = 0;
pub const OFPFW_ALL: u32 = (1 << 22) - 1;
pub const NO_BUFFER: u32 = 0xffff_ffff;
const PHY_PORT_LEN: usize = 48;
const PORT_STATS_LEN: usize = 104;
const MATCH_LEN: usize = 40;

pub fn type_name(msg_type: u8) -> &'static str {
    match msg_type {
        t::HELLO => "OFPT_HELLO",
        t::ERROR => "OFPT_ERROR",
        t::ECHO_REQUEST => "OFPT_ECHO_REQUEST",
        t::ECHO_REPLY => "OFPT_ECHO_REPLY",
        t::VENDOR => "OFPT_VENDOR",
        t::FEATURES_REQUEST => "OFPT_FEATURES_REQUEST",
        t::FEATURES_REPLY => "OFPT_FEATURES_REPLY",
        t::SET_CONFIG => "OFPT_SET_CONFIG",
        t::PACKET_IN => "OFPT_PACKET_IN",
        t::PORT_STATUS => "OFPT_PORT_STATUS",
        t::PACKET_OUT => "OFPT_PACKET_OUT",
        t::FLOW_MOD => "OFPT_FLOW_MOD",
        t::STATS_REQUEST => "OFPT_STATS_REQUEST",
        t::STATS_REPLY => "OFPT_STATS_REPLY",
        t::BARRIER_REQUEST => "OFPT_BARRIER_REQUEST",
        t::BARRIER_REPLY => "OFPT_BARRIER_REPLY",
        _ => "OFPT_UNKNOWN",
    }
}

/// ofp_phy_port: a port as listed in FEATURES_REPLY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhyPort {
    pub port_no: u16,
    pub hw_addr: [u8; 6],
    pub name: [u8; 16],
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
}

impl PhyPort {
    /// A port with a NUL-padded name (truncated to 15 bytes).
    pub fn named(port_no: u16, hw_addr: [u8; 6], name: &str) -> PhyPort {
        let mut n = [0u8; 16];
        let b = name.as_bytes();
        let k = b.len().min(15);
        n[..k].copy_from_slice(&b[..k]);
        PhyPort {
            port_no,
            hw_addr,
            name: n,
            config: 0,
            state: 0,
            curr: 0,
            advertised: 0,
            supported: 0,
            peer: 0,
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<PhyPort, CodecError> {
        Ok(PhyPort {
            port_no: r.u16("phy_port port_no")?,
            hw_addr: r.array("phy_port hw_addr")?,
            name: r.array("phy_port name")?,
            config: r.u32("phy_port config")?,
            state: r.u32("phy_port state")?,
            curr: r.u32("phy_port curr")?,
            advertised: r.u32("phy_port advertised")?,
            supported: r.u32("phy_port supported")?,
            peer: r.u32("phy_port peer")?,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.port_no);
        out.extend_from_slice(&self.hw_addr);
        out.extend_from_slice(&self.name);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
        ] {
            out.put_u32(v);
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub capabilities: u32,
    pub actions: u32,
    pub ports: Vec<PhyPort>,
}

/// ofp_match: the fixed 40-byte 1.0 match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub wildcards: u32,
    pub in_port: u16,
    pub dl_src: [u8; 6],
    pub dl_dst: [u8; 6],
    pub dl_vlan: u16,
    pub dl_vlan_pcp: u8,
    pub dl_type: u16,
    pub nw_tos: u8,
    pub nw_proto: u8,
    pub nw_src: u32,
    pub nw_dst: u32,
    pub tp_src: u16,
    pub tp_dst: u16,
}

impl Match {
    /// Matches every packet.
    pub fn all() -> Match {
        Match {
            wildcards: OFPFW_ALL,
            in_port: 0,
            dl_src: [0; 6],
            dl_dst: [0; 6],
            dl_vlan: 0,
            dl_vlan_pcp: 0,
            dl_type: 0,
            nw_tos: 0,
            nw_proto: 0,
            nw_src: 0,
            nw_dst: 0,
            tp_src: 0,
            tp_dst: 0,
        }
    }

    /// Reads a match from `r` (also used by messages the codec keeps as bytes).
    pub fn decode(r: &mut Reader<'_>) -> Result<Match, CodecError> {
        let wildcards = r.u32("match wildcards")?;
        let in_port = r.u16("match in_port")?;
        let dl_src = r.array("match dl_src")?;
        let dl_dst = r.array("match dl_dst")?;
        let dl_vlan = r.u16("match dl_vlan")?;
        let dl_vlan_pcp = r.u8("match dl_vlan_pcp")?;
        r.skip(1, "match pad1")?;
        let dl_type = r.u16("match dl_type")?;
        let nw_tos = r.u8("match nw_tos")?;
        let nw_proto = r.u8("match nw_proto")?;
        r.skip(2, "match pad2")?;
        Ok(Match {
            wildcards,
            in_port,
            dl_src,
            dl_dst,
            dl_vlan,
            dl_vlan_pcp,
            dl_type,
            nw_tos,
            nw_proto,
            nw_src: r.u32("match nw_src")?,
            nw_dst: r.u32("match nw_dst")?,
            tp_src: r.u16("match tp_src")?,
            tp_dst: r.u16("match tp_dst")?,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u32(self.wildcards);
        out.put_u16(self.in_port);
        out.extend_from_slice(&self.dl_src);
        out.extend_from_slice(&self.dl_dst);
        out.put_u16(self.dl_vlan);
        out.put_u8(self.dl_vlan_pcp);
        out.put_zeros(1);
        out.put_u16(self.dl_type);
        out.put_u8(self.nw_tos);
        out.put_u8(self.nw_proto);
        out.put_zeros(2);
        out.put_u32(self.nw_src);
        out.put_u32(self.nw_dst);
        out.put_u16(self.tp_src);
        out.put_u16(self.tp_dst);
        debug_assert_eq!(out.len() - start, MATCH_LEN);
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Output {
        port: u16,
        max_len: u16,
    },
    /// Any other action, kept as its type and the bytes after the 4-byte action header.
    Other {
        action_type: u16,
        body: Vec<u8>,
    },
}

impl Action {
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        match self {
            Action::Output { port, max_len } => {
                out.put_u16(OFPAT_OUTPUT);
                out.put_u16(8);
                out.put_u16(*port);
                out.put_u16(*max_len);
            }
            Action::Other { action_type, body } => {
                let len = 4 + body.len();
                if !len.is_multiple_of(8) {
                    return Err(CodecError::Malformed {
                        what: "action",
                        detail: format!("length {len} is not a multiple of 8"),
                    });
                }
                out.put_u16(*action_type);
                out.put_u16(len as u16);
                out.extend_from_slice(body);
            }
        }
        Ok(())
    }
}

fn decode_actions(buf: &[u8]) -> Result<Vec<Action>, CodecError> {
    let mut r = Reader::new(buf);
    let mut actions = Vec::new();
    while r.remaining() > 0 {
        let action_type = r.u16("action type")?;
        let len = r.u16("action length")? as usize;
        if len < 8 || !len.is_multiple_of(8) {
            return Err(CodecError::Malformed {
                what: "action",
                detail: format!("length {len} must be a multiple of 8 and at least 8"),
            });
        }
        let body = r.bytes(len - 4, "action body")?;
        actions.push(match action_type {
            OFPAT_OUTPUT if len == 8 => Action::Output {
                port: u16::from_be_bytes([body[0], body[1]]),
                max_len: u16::from_be_bytes([body[2], body[3]]),
            },
            _ => Action::Other {
                action_type,
                body: body.to_vec(),
            },
        });
    }
    Ok(actions)
}

fn encode_actions(actions: &[Action], out: &mut Vec<u8>) -> Result<usize, CodecError> {
    let start = out.len();
    for a in actions {
        a.encode(out)?;
    }
    Ok(out.len() - start)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    pub in_port: u16,
    pub reason: u8,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u16,
    pub actions: Vec<Action>,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMod {
    pub match_: Match,
    pub cookie: u64,
    pub command: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u16,
    pub flags: u16,
    pub actions: Vec<Action>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortStats {
    pub port_no: u16,
    pub counters: PortCounters,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Hello {
        body: Vec<u8>,
    },
    Error(ErrorMsg),
    EchoRequest(Vec<u8>),
    EchoReply(Vec<u8>),
    FeaturesRequest,
    FeaturesReply(FeaturesReply),
    PacketIn(PacketIn),
    PacketOut(PacketOut),
    FlowMod(FlowMod),
    BarrierRequest,
    BarrierReply,
    PortStatsRequest {
        flags: u16,
        port_no: u16,
    },
    PortStatsReply {
        flags: u16,
        stats: Vec<PortStats>,
    },
    /// Any other message (or statistics of another kind), body kept as bytes.
    Other {
        msg_type: u8,
        body: Vec<u8>,
    },
}

impl Message {
    pub fn msg_type(&self) -> u8 {
        match self {
            Message::Hello { .. } => t::HELLO,
            Message::Error(_) => t::ERROR,
            Message::EchoRequest(_) => t::ECHO_REQUEST,
            Message::EchoReply(_) => t::ECHO_REPLY,
            Message::FeaturesRequest => t::FEATURES_REQUEST,
            Message::FeaturesReply(_) => t::FEATURES_REPLY,
            Message::PacketIn(_) => t::PACKET_IN,
            Message::PacketOut(_) => t::PACKET_OUT,
            Message::FlowMod(_) => t::FLOW_MOD,
            Message::BarrierRequest => t::BARRIER_REQUEST,
            Message::BarrierReply => t::BARRIER_REPLY,
            Message::PortStatsRequest { .. } => t::STATS_REQUEST,
            Message::PortStatsReply { .. } => t::STATS_REPLY,
            Message::Other { msg_type, .. } => *msg_type,
        }
    }

    /// Decodes exactly one 1.0 message (header included).
    pub fn decode(buf: &[u8]) -> Result<(Header, Message), CodecError> {
        let (h, body) = split(buf)?;
        if h.version != OFP10 {
            return Err(CodecError::VersionMismatch {
                msg: h.version,
                conn: OFP10,
            });
        }
        let mut r = Reader::new(body);
        let m = match h.msg_type {
            t::HELLO => Message::Hello {
                body: body.to_vec(),
            },
            t::ERROR => Message::Error(ErrorMsg::decode(body)?),
            t::ECHO_REQUEST => Message::EchoRequest(body.to_vec()),
            t::ECHO_REPLY => Message::EchoReply(body.to_vec()),
            t::FEATURES_REQUEST => Message::FeaturesRequest,
            t::FEATURES_REPLY => {
                let datapath_id = r.u64("features datapath_id")?;
                let n_buffers = r.u32("features n_buffers")?;
                let n_tables = r.u8("features n_tables")?;
                r.skip(3, "features pad")?;
                let capabilities = r.u32("features capabilities")?;
                let actions = r.u32("features actions")?;
                if !r.remaining().is_multiple_of(PHY_PORT_LEN) {
                    return Err(CodecError::Malformed {
                        what: "FEATURES_REPLY",
                        detail: format!(
                            "{} port bytes is not a multiple of {PHY_PORT_LEN}",
                            r.remaining()
                        ),
                    });
                }
                let mut ports = Vec::new();
                while r.remaining() > 0 {
                    ports.push(PhyPort::decode(&mut r)?);
                }
                Message::FeaturesReply(FeaturesReply {
                    datapath_id,
                    n_buffers,
                    n_tables,
                    capabilities,
                    actions,
                    ports,
                })
            }
            t::PACKET_IN => {
                let buffer_id = r.u32("packet_in buffer_id")?;
                let total_len = r.u16("packet_in total_len")?;
                let in_port = r.u16("packet_in in_port")?;
                let reason = r.u8("packet_in reason")?;
                r.skip(1, "packet_in pad")?;
                Message::PacketIn(PacketIn {
                    buffer_id,
                    total_len,
                    in_port,
                    reason,
                    data: r.rest().to_vec(),
                })
            }
            t::PACKET_OUT => {
                let buffer_id = r.u32("packet_out buffer_id")?;
                let in_port = r.u16("packet_out in_port")?;
                let actions_len = r.u16("packet_out actions_len")? as usize;
                let actions = decode_actions(r.bytes(actions_len, "packet_out actions")?)?;
                Message::PacketOut(PacketOut {
                    buffer_id,
                    in_port,
                    actions,
                    data: r.rest().to_vec(),
                })
            }
            t::FLOW_MOD => {
                let match_ = Match::decode(&mut r)?;
                Message::FlowMod(FlowMod {
                    match_,
                    cookie: r.u64("flow_mod cookie")?,
                    command: r.u16("flow_mod command")?,
                    idle_timeout: r.u16("flow_mod idle_timeout")?,
                    hard_timeout: r.u16("flow_mod hard_timeout")?,
                    priority: r.u16("flow_mod priority")?,
                    buffer_id: r.u32("flow_mod buffer_id")?,
                    out_port: r.u16("flow_mod out_port")?,
                    flags: r.u16("flow_mod flags")?,
                    actions: decode_actions(r.rest())?,
                })
            }
            t::BARRIER_REQUEST => Message::BarrierRequest,
            t::BARRIER_REPLY => Message::BarrierReply,
            t::STATS_REQUEST | t::STATS_REPLY => {
                let stats_type = r.u16("stats type")?;
                let flags = r.u16("stats flags")?;
                if stats_type != OFPST_PORT {
                    Message::Other {
                        msg_type: h.msg_type,
                        body: body.to_vec(),
                    }
                } else if h.msg_type == t::STATS_REQUEST {
                    let port_no = r.u16("port stats request port_no")?;
                    r.skip(6, "port stats request pad")?;
                    Message::PortStatsRequest { flags, port_no }
                } else {
                    if !r.remaining().is_multiple_of(PORT_STATS_LEN) {
                        return Err(CodecError::Malformed {
                            what: "port stats reply",
                            detail: format!(
                                "{} bytes is not a multiple of {PORT_STATS_LEN}",
                                r.remaining()
                            ),
                        });
                    }
                    let mut stats = Vec::new();
                    while r.remaining() > 0 {
                        let port_no = r.u16("port stats port_no")?;
                        r.skip(6, "port stats pad")?;
                        stats.push(PortStats {
                            port_no,
                            counters: PortCounters::decode(&mut r)?,
                        });
                    }
                    Message::PortStatsReply { flags, stats }
                }
            }
            other => Message::Other {
                msg_type: other,
                body: body.to_vec(),
            },
        };
        Ok((h, m))
    }

    /// Appends this message, with transaction id `xid`, to `out`.
    pub fn encode(&self, xid: u32, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = begin(out, OFP10, self.msg_type(), xid);
        match self {
            Message::Hello { body } => out.extend_from_slice(body),
            Message::Error(e) => e.encode(out),
            Message::EchoRequest(d) | Message::EchoReply(d) => out.extend_from_slice(d),
            Message::FeaturesRequest | Message::BarrierRequest | Message::BarrierReply => {}
            Message::FeaturesReply(f) => {
                out.put_u64(f.datapath_id);
                out.put_u32(f.n_buffers);
                out.put_u8(f.n_tables);
                out.put_zeros(3);
                out.put_u32(f.capabilities);
                out.put_u32(f.actions);
                for p in &f.ports {
                    p.encode(out);
                }
            }
            Message::PacketIn(p) => {
                out.put_u32(p.buffer_id);
                out.put_u16(p.total_len);
                out.put_u16(p.in_port);
                out.put_u8(p.reason);
                out.put_zeros(1);
                out.extend_from_slice(&p.data);
            }
            Message::PacketOut(p) => {
                out.put_u32(p.buffer_id);
                out.put_u16(p.in_port);
                let len_at = out.len();
                out.put_u16(0);
                let n = encode_actions(&p.actions, out)?;
                super::wire::patch_u16(out, len_at, n as u16);
                out.extend_from_slice(&p.data);
            }
            Message::FlowMod(f) => {
                f.match_.encode(out);
                out.put_u64(f.cookie);
                out.put_u16(f.command);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_u16(f.priority);
                out.put_u32(f.buffer_id);
                out.put_u16(f.out_port);
                out.put_u16(f.flags);
                encode_actions(&f.actions, out)?;
            }
            Message::PortStatsRequest { flags, port_no } => {
                out.put_u16(OFPST_PORT);
                out.put_u16(*flags);
                out.put_u16(*port_no);
                out.put_zeros(6);
            }
            Message::PortStatsReply { flags, stats } => {
                out.put_u16(OFPST_PORT);
                out.put_u16(*flags);
                for s in stats {
                    out.put_u16(s.port_no);
                    out.put_zeros(6);
                    s.counters.encode(out);
                }
            }
            Message::Other { body, .. } => out.extend_from_slice(body),
        }
        finish(out, start)
    }
}

/// The data of a PACKET_IN body without copying (hot path).
#[inline]
pub fn packet_in_data(body: &[u8]) -> Result<&[u8], CodecError> {
    body.get(10..).ok_or(CodecError::Truncated {
        what: "packet_in header",
        need: 10,
        have: body.len(),
    })
}

/// The data of a PACKET_OUT body without copying (hot path).
#[inline]
pub fn packet_out_data(body: &[u8]) -> Result<&[u8], CodecError> {
    let mut r = Reader::new(body);
    r.skip(6, "packet_out header")?;
    let alen = r.u16("packet_out actions_len")? as usize;
    r.skip(alen, "packet_out actions")?;
    Ok(r.rest())
}

/// Writes a PACKET_OUT that outputs `data` on `port` straight into `out` (hot path).
#[inline]
pub fn write_packet_out(
    out: &mut Vec<u8>,
    xid: u32,
    port: u16,
    data: &[u8],
) -> Result<(), CodecError> {
    let start = begin(out, OFP10, t::PACKET_OUT, xid);
    out.put_u32(NO_BUFFER);
    out.put_u16(OFPP_CONTROLLER);
    out.put_u16(8);
    out.put_u16(OFPAT_OUTPUT);
    out.put_u16(8);
    out.put_u16(port);
    out.put_u16(0);
    out.extend_from_slice(data);
    finish(out, start)
}
