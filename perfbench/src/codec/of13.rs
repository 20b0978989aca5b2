//! OpenFlow 1.3 (wire version 0x04) messages.

use super::wire::{Put, Reader, pad8, patch_len, patch_u16};
use super::{CodecError, ErrorMsg, Header, OFP13, PortCounters, begin, finish, split};

pub mod t {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const EXPERIMENTER: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const BARRIER_REQUEST: u8 = 20;
    pub const BARRIER_REPLY: u8 = 21;
    pub const ROLE_REQUEST: u8 = 24;
    pub const ROLE_REPLY: u8 = 25;
}

pub const OFPMP_PORT_STATS: u16 = 4;
pub const OFPP_ANY: u32 = 0xffff_ffff;
pub const OFPP_CONTROLLER: u32 = 0xffff_fffd;
pub const OFPCML_NO_BUFFER: u16 = 0xffff;
pub const OFPAT_OUTPUT: u16 = 0;
pub const OFPIT_GOTO_TABLE: u16 = 1;
pub const OFPIT_WRITE_ACTIONS: u16 = 3;
pub const OFPIT_APPLY_ACTIONS: u16 = 4;
pub const OFPIT_CLEAR_ACTIONS: u16 = 5;
pub const OFPHET_VERSIONBITMAP: u16 = 1;
pub const OFPMT_OXM: u16 = 1;
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
pub const OXM_OF_IN_PORT: u8 = 0;
pub const NO_BUFFER: u32 = 0xffff_ffff;
const PORT_STATS_LEN: usize = 112;

pub fn type_name(msg_type: u8) -> &'static str {
    match msg_type {
        t::HELLO => "OFPT_HELLO",
        t::ERROR => "OFPT_ERROR",
        t::ECHO_REQUEST => "OFPT_ECHO_REQUEST",
        t::ECHO_REPLY => "OFPT_ECHO_REPLY",
        t::EXPERIMENTER => "OFPT_EXPERIMENTER",
        t::FEATURES_REQUEST => "OFPT_FEATURES_REQUEST",
        t::FEATURES_REPLY => "OFPT_FEATURES_REPLY",
        t::SET_CONFIG => "OFPT_SET_CONFIG",
        t::PACKET_IN => "OFPT_PACKET_IN",
        t::PORT_STATUS => "OFPT_PORT_STATUS",
        t::PACKET_OUT => "OFPT_PACKET_OUT",
        t::FLOW_MOD => "OFPT_FLOW_MOD",
        t::MULTIPART_REQUEST => "OFPT_MULTIPART_REQUEST",
        t::MULTIPART_REPLY => "OFPT_MULTIPART_REPLY",
        t::BARRIER_REQUEST => "OFPT_BARRIER_REQUEST",
        t::BARRIER_REPLY => "OFPT_BARRIER_REPLY",
        t::ROLE_REQUEST => "OFPT_ROLE_REQUEST",
        t::ROLE_REPLY => "OFPT_ROLE_REPLY",
        _ => "OFPT_UNKNOWN",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloElement {
    /// Bit n set = wire version n supported.
    VersionBitmap(Vec<u32>),
    Other {
        elem_type: u16,
        body: Vec<u8>,
    },
}

/// One OXM TLV of a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oxm {
    pub class: u16,
    pub field: u8,
    pub hasmask: bool,
    pub value: Vec<u8>,
}

impl Oxm {
    pub fn in_port(port: u32) -> Oxm {
        Oxm {
            class: OFPXMC_OPENFLOW_BASIC,
            field: OXM_OF_IN_PORT,
            hasmask: false,
            value: port.to_be_bytes().to_vec(),
        }
    }
}

/// An OXM match (ofp_match with type OFPMT_OXM).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Match {
    pub fields: Vec<Oxm>,
}

impl Match {
    /// Reads a match from `r` (also used by messages the codec keeps as bytes).
    pub fn decode(r: &mut Reader<'_>) -> Result<Match, CodecError> {
        let mtype = r.u16("match type")?;
        let len = r.u16("match length")? as usize;
        if mtype != OFPMT_OXM || len < 4 {
            return Err(CodecError::Malformed {
                what: "match",
                detail: format!(
                    "type {mtype} length {len}: only OXM matches (type 1, length >= 4) are supported"
                ),
            });
        }
        let body = r.bytes(len - 4, "match fields")?;
        r.skip(pad8(len), "match padding")?;
        let mut fr = Reader::new(body);
        let mut fields = Vec::new();
        while fr.remaining() > 0 {
            let class = fr.u16("oxm class")?;
            let fh = fr.u8("oxm field")?;
            let vlen = fr.u8("oxm length")? as usize;
            fields.push(Oxm {
                class,
                field: fh >> 1,
                hasmask: fh & 1 == 1,
                value: fr.bytes(vlen, "oxm value")?.to_vec(),
            });
        }
        Ok(Match { fields })
    }

    fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = out.len();
        out.put_u16(OFPMT_OXM);
        out.put_u16(0);
        for f in &self.fields {
            if f.field > 0x7f {
                return Err(CodecError::Malformed {
                    what: "oxm",
                    detail: format!("field {} does not fit 7 bits", f.field),
                });
            }
            let vlen = u8::try_from(f.value.len()).map_err(|_| CodecError::TooLong {
                what: "oxm value",
                len: f.value.len(),
            })?;
            out.put_u16(f.class);
            out.put_u8((f.field << 1) | f.hasmask as u8);
            out.put_u8(vlen);
            out.extend_from_slice(&f.value);
        }
        patch_len(out, start, start + 2, "match")?;
        let len = out.len() - start;
        out.put_zeros(pad8(len));
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Output { port: u32, max_len: u16 },
    Other { action_type: u16, body: Vec<u8> },
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
            OFPAT_OUTPUT if len == 16 => Action::Output {
                port: u32::from_be_bytes([body[0], body[1], body[2], body[3]]),
                max_len: u16::from_be_bytes([body[4], body[5]]),
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
        match a {
            Action::Output { port, max_len } => {
                out.put_u16(OFPAT_OUTPUT);
                out.put_u16(16);
                out.put_u32(*port);
                out.put_u16(*max_len);
                out.put_zeros(6);
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
    }
    Ok(out.len() - start)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instruction {
    GotoTable(u8),
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Other { instr_type: u16, body: Vec<u8> },
}

fn decode_instructions(buf: &[u8]) -> Result<Vec<Instruction>, CodecError> {
    let mut r = Reader::new(buf);
    let mut out = Vec::new();
    while r.remaining() > 0 {
        let itype = r.u16("instruction type")?;
        let len = r.u16("instruction length")? as usize;
        if len < 8 || !len.is_multiple_of(8) {
            return Err(CodecError::Malformed {
                what: "instruction",
                detail: format!("length {len} must be a multiple of 8 and at least 8"),
            });
        }
        let body = r.bytes(len - 4, "instruction body")?;
        out.push(match itype {
            OFPIT_GOTO_TABLE => Instruction::GotoTable(body[0]),
            OFPIT_WRITE_ACTIONS => Instruction::WriteActions(decode_actions(&body[4..])?),
            OFPIT_APPLY_ACTIONS => Instruction::ApplyActions(decode_actions(&body[4..])?),
            OFPIT_CLEAR_ACTIONS => Instruction::ClearActions,
            _ => Instruction::Other {
                instr_type: itype,
                body: body.to_vec(),
            },
        });
    }
    Ok(out)
}

fn encode_instructions(instrs: &[Instruction], out: &mut Vec<u8>) -> Result<(), CodecError> {
    for i in instrs {
        let start = out.len();
        match i {
            Instruction::GotoTable(tid) => {
                out.put_u16(OFPIT_GOTO_TABLE);
                out.put_u16(8);
                out.put_u8(*tid);
                out.put_zeros(3);
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
                let it = if matches!(i, Instruction::WriteActions(_)) {
                    OFPIT_WRITE_ACTIONS
                } else {
                    OFPIT_APPLY_ACTIONS
                };
                out.put_u16(it);
                out.put_u16(0);
                out.put_zeros(4);
                encode_actions(a, out)?;
                patch_len(out, start, start + 2, "instruction")?;
            }
            Instruction::ClearActions => {
                out.put_u16(OFPIT_CLEAR_ACTIONS);
                out.put_u16(8);
                out.put_zeros(4);
            }
            Instruction::Other { instr_type, body } => {
                let len = 4 + body.len();
                if !len.is_multiple_of(8) {
                    return Err(CodecError::Malformed {
                        what: "instruction",
                        detail: format!("length {len} is not a multiple of 8"),
                    });
                }
                out.put_u16(*instr_type);
                out.put_u16(len as u16);
                out.extend_from_slice(body);
            }
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub auxiliary_id: u8,
    pub capabilities: u32,
    pub reserved: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    pub reason: u8,
    pub table_id: u8,
    pub cookie: u64,
    pub match_: Match,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u32,
    pub actions: Vec<Action>,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMod {
    pub cookie: u64,
    pub cookie_mask: u64,
    pub table_id: u8,
    pub command: u8,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u32,
    pub out_group: u32,
    pub flags: u16,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortStats {
    pub port_no: u32,
    pub counters: PortCounters,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Hello {
        elements: Vec<HelloElement>,
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
        port_no: u32,
    },
    PortStatsReply {
        flags: u16,
        stats: Vec<PortStats>,
    },
    /// Any other message (or multipart of another kind), body kept as bytes.
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
            Message::PortStatsRequest { .. } => t::MULTIPART_REQUEST,
            Message::PortStatsReply { .. } => t::MULTIPART_REPLY,
            Message::Other { msg_type, .. } => *msg_type,
        }
    }

    /// The version bitmap of a HELLO, if it carries one.
    pub fn hello_bitmap(&self) -> Option<u32> {
        match self {
            Message::Hello { elements } => elements.iter().find_map(|e| match e {
                HelloElement::VersionBitmap(b) => b.first().copied(),
                HelloElement::Other { .. } => None,
            }),
            _ => None,
        }
    }

    /// Decodes exactly one 1.3 message (header included).
    pub fn decode(buf: &[u8]) -> Result<(Header, Message), CodecError> {
        let (h, body) = split(buf)?;
        if h.version != OFP13 {
            return Err(CodecError::VersionMismatch {
                msg: h.version,
                conn: OFP13,
            });
        }
        let mut r = Reader::new(body);
        let m = match h.msg_type {
            t::HELLO => Message::Hello {
                elements: decode_hello_elements(body)?,
            },
            t::ERROR => Message::Error(ErrorMsg::decode(body)?),
            t::ECHO_REQUEST => Message::EchoRequest(body.to_vec()),
            t::ECHO_REPLY => Message::EchoReply(body.to_vec()),
            t::FEATURES_REQUEST => Message::FeaturesRequest,
            t::FEATURES_REPLY => {
                let datapath_id = r.u64("features datapath_id")?;
                let n_buffers = r.u32("features n_buffers")?;
                let n_tables = r.u8("features n_tables")?;
                let auxiliary_id = r.u8("features auxiliary_id")?;
                r.skip(2, "features pad")?;
                Message::FeaturesReply(FeaturesReply {
                    datapath_id,
                    n_buffers,
                    n_tables,
                    auxiliary_id,
                    capabilities: r.u32("features capabilities")?,
                    reserved: r.u32("features reserved")?,
                })
            }
            t::PACKET_IN => {
                let buffer_id = r.u32("packet_in buffer_id")?;
                let total_len = r.u16("packet_in total_len")?;
                let reason = r.u8("packet_in reason")?;
                let table_id = r.u8("packet_in table_id")?;
                let cookie = r.u64("packet_in cookie")?;
                let match_ = Match::decode(&mut r)?;
                r.skip(2, "packet_in pad")?;
                Message::PacketIn(PacketIn {
                    buffer_id,
                    total_len,
                    reason,
                    table_id,
                    cookie,
                    match_,
                    data: r.rest().to_vec(),
                })
            }
            t::PACKET_OUT => {
                let buffer_id = r.u32("packet_out buffer_id")?;
                let in_port = r.u32("packet_out in_port")?;
                let actions_len = r.u16("packet_out actions_len")? as usize;
                r.skip(6, "packet_out pad")?;
                let actions = decode_actions(r.bytes(actions_len, "packet_out actions")?)?;
                Message::PacketOut(PacketOut {
                    buffer_id,
                    in_port,
                    actions,
                    data: r.rest().to_vec(),
                })
            }
            t::FLOW_MOD => {
                let cookie = r.u64("flow_mod cookie")?;
                let cookie_mask = r.u64("flow_mod cookie_mask")?;
                let table_id = r.u8("flow_mod table_id")?;
                let command = r.u8("flow_mod command")?;
                let idle_timeout = r.u16("flow_mod idle_timeout")?;
                let hard_timeout = r.u16("flow_mod hard_timeout")?;
                let priority = r.u16("flow_mod priority")?;
                let buffer_id = r.u32("flow_mod buffer_id")?;
                let out_port = r.u32("flow_mod out_port")?;
                let out_group = r.u32("flow_mod out_group")?;
                let flags = r.u16("flow_mod flags")?;
                r.skip(2, "flow_mod pad")?;
                let match_ = Match::decode(&mut r)?;
                Message::FlowMod(FlowMod {
                    cookie,
                    cookie_mask,
                    table_id,
                    command,
                    idle_timeout,
                    hard_timeout,
                    priority,
                    buffer_id,
                    out_port,
                    out_group,
                    flags,
                    match_,
                    instructions: decode_instructions(r.rest())?,
                })
            }
            t::BARRIER_REQUEST => Message::BarrierRequest,
            t::BARRIER_REPLY => Message::BarrierReply,
            t::MULTIPART_REQUEST | t::MULTIPART_REPLY => {
                let mp_type = r.u16("multipart type")?;
                let flags = r.u16("multipart flags")?;
                r.skip(4, "multipart pad")?;
                if mp_type != OFPMP_PORT_STATS {
                    Message::Other {
                        msg_type: h.msg_type,
                        body: body.to_vec(),
                    }
                } else if h.msg_type == t::MULTIPART_REQUEST {
                    let port_no = r.u32("port stats request port_no")?;
                    r.skip(4, "port stats request pad")?;
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
                        let port_no = r.u32("port stats port_no")?;
                        r.skip(4, "port stats pad")?;
                        let counters = PortCounters::decode(&mut r)?;
                        stats.push(PortStats {
                            port_no,
                            counters,
                            duration_sec: r.u32("port stats duration_sec")?,
                            duration_nsec: r.u32("port stats duration_nsec")?,
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
        let start = begin(out, OFP13, self.msg_type(), xid);
        match self {
            Message::Hello { elements } => encode_hello_elements(elements, out)?,
            Message::Error(e) => e.encode(out),
            Message::EchoRequest(d) | Message::EchoReply(d) => out.extend_from_slice(d),
            Message::FeaturesRequest | Message::BarrierRequest | Message::BarrierReply => {}
            Message::FeaturesReply(f) => {
                out.put_u64(f.datapath_id);
                out.put_u32(f.n_buffers);
                out.put_u8(f.n_tables);
                out.put_u8(f.auxiliary_id);
                out.put_zeros(2);
                out.put_u32(f.capabilities);
                out.put_u32(f.reserved);
            }
            Message::PacketIn(p) => {
                out.put_u32(p.buffer_id);
                out.put_u16(p.total_len);
                out.put_u8(p.reason);
                out.put_u8(p.table_id);
                out.put_u64(p.cookie);
                p.match_.encode(out)?;
                out.put_zeros(2);
                out.extend_from_slice(&p.data);
            }
            Message::PacketOut(p) => {
                out.put_u32(p.buffer_id);
                out.put_u32(p.in_port);
                let len_at = out.len();
                out.put_u16(0);
                out.put_zeros(6);
                let n = encode_actions(&p.actions, out)?;
                patch_u16(out, len_at, n as u16);
                out.extend_from_slice(&p.data);
            }
            Message::FlowMod(f) => {
                out.put_u64(f.cookie);
                out.put_u64(f.cookie_mask);
                out.put_u8(f.table_id);
                out.put_u8(f.command);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_u16(f.priority);
                out.put_u32(f.buffer_id);
                out.put_u32(f.out_port);
                out.put_u32(f.out_group);
                out.put_u16(f.flags);
                out.put_zeros(2);
                f.match_.encode(out)?;
                encode_instructions(&f.instructions, out)?;
            }
            Message::PortStatsRequest { flags, port_no } => {
                out.put_u16(OFPMP_PORT_STATS);
                out.put_u16(*flags);
                out.put_zeros(4);
                out.put_u32(*port_no);
                out.put_zeros(4);
            }
            Message::PortStatsReply { flags, stats } => {
                out.put_u16(OFPMP_PORT_STATS);
                out.put_u16(*flags);
                out.put_zeros(4);
                for s in stats {
                    out.put_u32(s.port_no);
                    out.put_zeros(4);
                    s.counters.encode(out);
                    out.put_u32(s.duration_sec);
                    out.put_u32(s.duration_nsec);
                }
            }
            Message::Other { body, .. } => out.extend_from_slice(body),
        }
        finish(out, start)
    }
}

fn decode_hello_elements(body: &[u8]) -> Result<Vec<HelloElement>, CodecError> {
    let mut r = Reader::new(body);
    let mut out = Vec::new();
    while r.remaining() >= 4 {
        let etype = r.u16("hello element type")?;
        let len = r.u16("hello element length")? as usize;
        if len < 4 {
            return Err(CodecError::Malformed {
                what: "hello element",
                detail: format!("length {len} < 4"),
            });
        }
        let eb = r.bytes(len - 4, "hello element body")?;
        // The last element's padding may be missing; tolerate that.
        let pad = pad8(len).min(r.remaining());
        r.skip(pad, "hello element padding")?;
        out.push(match etype {
            OFPHET_VERSIONBITMAP => {
                if eb.len() % 4 != 0 {
                    return Err(CodecError::Malformed {
                        what: "hello version bitmap",
                        detail: format!("{} bytes is not a multiple of 4", eb.len()),
                    });
                }
                HelloElement::VersionBitmap(
                    eb.chunks_exact(4)
                        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                        .collect(),
                )
            }
            _ => HelloElement::Other {
                elem_type: etype,
                body: eb.to_vec(),
            },
        });
    }
    Ok(out)
}

fn encode_hello_elements(elements: &[HelloElement], out: &mut Vec<u8>) -> Result<(), CodecError> {
    for e in elements {
        let start = out.len();
        match e {
            HelloElement::VersionBitmap(bits) => {
                out.put_u16(OFPHET_VERSIONBITMAP);
                out.put_u16(0);
                for b in bits {
                    out.put_u32(*b);
                }
            }
            HelloElement::Other { elem_type, body } => {
                out.put_u16(*elem_type);
                out.put_u16(0);
                out.extend_from_slice(body);
            }
        }
        patch_len(out, start, start + 2, "hello element")?;
        let len = out.len() - start;
        out.put_zeros(pad8(len));
    }
    Ok(())
}

/// The data of a PACKET_IN body without copying (hot path).
#[inline]
pub fn packet_in_data(body: &[u8]) -> Result<&[u8], CodecError> {
    let mut r = Reader::new(body);
    r.skip(16, "packet_in header")?;
    r.skip(2, "match type")?;
    let mlen = r.u16("match length")? as usize;
    if mlen < 4 {
        return Err(CodecError::Malformed {
            what: "packet_in match",
            detail: format!("length {mlen} < 4"),
        });
    }
    r.skip(mlen - 4 + pad8(mlen) + 2, "packet_in match and pad")?;
    Ok(r.rest())
}

/// The data of a PACKET_OUT body without copying (hot path).
#[inline]
pub fn packet_out_data(body: &[u8]) -> Result<&[u8], CodecError> {
    let mut r = Reader::new(body);
    r.skip(8, "packet_out header")?;
    let alen = r.u16("packet_out actions_len")? as usize;
    r.skip(6 + alen, "packet_out actions")?;
    Ok(r.rest())
}

/// Writes a PACKET_OUT that outputs `data` on `port` straight into `out` (hot path).
#[inline]
pub fn write_packet_out(
    out: &mut Vec<u8>,
    xid: u32,
    port: u32,
    data: &[u8],
) -> Result<(), CodecError> {
    let start = begin(out, OFP13, t::PACKET_OUT, xid);
    out.put_u32(NO_BUFFER);
    out.put_u32(OFPP_CONTROLLER);
    out.put_u16(16);
    out.put_zeros(6);
    out.put_u16(OFPAT_OUTPUT);
    out.put_u16(16);
    out.put_u32(port);
    out.put_u16(0);
    out.put_zeros(6);
    out.extend_from_slice(data);
    finish(out, start)
}
