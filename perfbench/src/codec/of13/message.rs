//! OpenFlow 1.3 messages: the message enum, its dispatch, and the bodies of
//! FEATURES_REPLY, PACKET_IN, PACKET_OUT and FLOW_MOD.

use super::super::wire::{Put, Reader, patch_u16};
use super::super::{CodecError, ErrorMsg, Header, OFP13, begin, finish, split};
use super::actions::{
    Action, Instruction, decode_actions, decode_instructions, encode_actions, encode_instructions,
};
use super::hello::{HelloElement, decode_hello_elements, encode_hello_elements};
use super::{Match, PortStats, multipart, t};

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
            t::FEATURES_REPLY => Message::FeaturesReply(FeaturesReply::decode(&mut r)?),
            t::PACKET_IN => Message::PacketIn(PacketIn::decode(&mut r)?),
            t::PACKET_OUT => Message::PacketOut(PacketOut::decode(&mut r)?),
            t::FLOW_MOD => Message::FlowMod(FlowMod::decode(&mut r)?),
            t::BARRIER_REQUEST => Message::BarrierRequest,
            t::BARRIER_REPLY => Message::BarrierReply,
            t::MULTIPART_REQUEST | t::MULTIPART_REPLY => multipart::decode(h.msg_type, body)?,
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
            Message::FeaturesReply(f) => f.encode(out),
            Message::PacketIn(p) => p.encode(out)?,
            Message::PacketOut(p) => p.encode(out)?,
            Message::FlowMod(f) => f.encode(out)?,
            Message::PortStatsRequest { flags, port_no } => {
                multipart::encode_request(*flags, *port_no, out)
            }
            Message::PortStatsReply { flags, stats } => multipart::encode_reply(*flags, stats, out),
            Message::Other { body, .. } => out.extend_from_slice(body),
        }
        finish(out, start)
    }
}

impl FeaturesReply {
    fn decode(r: &mut Reader<'_>) -> Result<FeaturesReply, CodecError> {
        let datapath_id = r.u64("features datapath_id")?;
        let n_buffers = r.u32("features n_buffers")?;
        let n_tables = r.u8("features n_tables")?;
        let auxiliary_id = r.u8("features auxiliary_id")?;
        r.skip(2, "features pad")?;
        Ok(FeaturesReply {
            datapath_id,
            n_buffers,
            n_tables,
            auxiliary_id,
            capabilities: r.u32("features capabilities")?,
            reserved: r.u32("features reserved")?,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.datapath_id);
        out.put_u32(self.n_buffers);
        out.put_u8(self.n_tables);
        out.put_u8(self.auxiliary_id);
        out.put_zeros(2);
        out.put_u32(self.capabilities);
        out.put_u32(self.reserved);
    }
}

impl PacketIn {
    fn decode(r: &mut Reader<'_>) -> Result<PacketIn, CodecError> {
        let buffer_id = r.u32("packet_in buffer_id")?;
        let total_len = r.u16("packet_in total_len")?;
        let reason = r.u8("packet_in reason")?;
        let table_id = r.u8("packet_in table_id")?;
        let cookie = r.u64("packet_in cookie")?;
        let match_ = Match::decode(r)?;
        r.skip(2, "packet_in pad")?;
        Ok(PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id,
            cookie,
            match_,
            data: r.rest().to_vec(),
        })
    }

    fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.put_u32(self.buffer_id);
        out.put_u16(self.total_len);
        out.put_u8(self.reason);
        out.put_u8(self.table_id);
        out.put_u64(self.cookie);
        self.match_.encode(out)?;
        out.put_zeros(2);
        out.extend_from_slice(&self.data);
        Ok(())
    }
}

impl PacketOut {
    fn decode(r: &mut Reader<'_>) -> Result<PacketOut, CodecError> {
        let buffer_id = r.u32("packet_out buffer_id")?;
        let in_port = r.u32("packet_out in_port")?;
        let actions_len = r.u16("packet_out actions_len")? as usize;
        r.skip(6, "packet_out pad")?;
        let actions = decode_actions(r.bytes(actions_len, "packet_out actions")?)?;
        Ok(PacketOut {
            buffer_id,
            in_port,
            actions,
            data: r.rest().to_vec(),
        })
    }

    fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.put_u32(self.buffer_id);
        out.put_u32(self.in_port);
        let len_at = out.len();
        out.put_u16(0);
        out.put_zeros(6);
        let n = encode_actions(&self.actions, out)?;
        patch_u16(out, len_at, n as u16);
        out.extend_from_slice(&self.data);
        Ok(())
    }
}

impl FlowMod {
    fn decode(r: &mut Reader<'_>) -> Result<FlowMod, CodecError> {
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
        let match_ = Match::decode(r)?;
        Ok(FlowMod {
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

    fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        out.put_u8(self.table_id);
        out.put_u8(self.command);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.priority);
        out.put_u32(self.buffer_id);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        out.put_u16(self.flags);
        out.put_zeros(2);
        self.match_.encode(out)?;
        encode_instructions(&self.instructions, out)
    }
}
