//! OpenFlow 1.0 messages: the message enum, its dispatch, and the bodies
//! of PACKET_IN, PACKET_OUT and FLOW_MOD.

use super::super::wire::{Put, Reader, patch_u16};
use super::super::{CodecError, ErrorMsg, Header, OFP10, begin, finish, split};
use super::actions::{Action, decode_actions, encode_actions};
use super::{FeaturesReply, Match, PortStats, stats, t};

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
            t::FEATURES_REPLY => Message::FeaturesReply(FeaturesReply::decode(&mut r)?),
            t::PACKET_IN => Message::PacketIn(PacketIn::decode(&mut r)?),
            t::PACKET_OUT => Message::PacketOut(PacketOut::decode(&mut r)?),
            t::FLOW_MOD => Message::FlowMod(FlowMod::decode(&mut r)?),
            t::BARRIER_REQUEST => Message::BarrierRequest,
            t::BARRIER_REPLY => Message::BarrierReply,
            t::STATS_REQUEST | t::STATS_REPLY => stats::decode(h.msg_type, body)?,
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
            Message::FeaturesReply(f) => f.encode(out),
            Message::PacketIn(p) => p.encode(out),
            Message::PacketOut(p) => p.encode(out)?,
            Message::FlowMod(f) => f.encode(out)?,
            Message::PortStatsRequest { flags, port_no } => {
                stats::encode_request(*flags, *port_no, out)
            }
            Message::PortStatsReply { flags, stats } => stats::encode_reply(*flags, stats, out),
            Message::Other { body, .. } => out.extend_from_slice(body),
        }
        finish(out, start)
    }
}

impl PacketIn {
    fn decode(r: &mut Reader<'_>) -> Result<PacketIn, CodecError> {
        let buffer_id = r.u32("packet_in buffer_id")?;
        let total_len = r.u16("packet_in total_len")?;
        let in_port = r.u16("packet_in in_port")?;
        let reason = r.u8("packet_in reason")?;
        r.skip(1, "packet_in pad")?;
        Ok(PacketIn {
            buffer_id,
            total_len,
            in_port,
            reason,
            data: r.rest().to_vec(),
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.buffer_id);
        out.put_u16(self.total_len);
        out.put_u16(self.in_port);
        out.put_u8(self.reason);
        out.put_zeros(1);
        out.extend_from_slice(&self.data);
    }
}

impl PacketOut {
    fn decode(r: &mut Reader<'_>) -> Result<PacketOut, CodecError> {
        let buffer_id = r.u32("packet_out buffer_id")?;
        let in_port = r.u16("packet_out in_port")?;
        let actions_len = r.u16("packet_out actions_len")? as usize;
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
        out.put_u16(self.in_port);
        let len_at = out.len();
        out.put_u16(0);
        let n = encode_actions(&self.actions, out)?;
        patch_u16(out, len_at, n as u16);
        out.extend_from_slice(&self.data);
        Ok(())
    }
}

impl FlowMod {
    fn decode(r: &mut Reader<'_>) -> Result<FlowMod, CodecError> {
        let match_ = Match::decode(r)?;
        Ok(FlowMod {
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

    fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        self.match_.encode(out);
        out.put_u64(self.cookie);
        out.put_u16(self.command);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.priority);
        out.put_u32(self.buffer_id);
        out.put_u16(self.out_port);
        out.put_u16(self.flags);
        encode_actions(&self.actions, out)?;
        Ok(())
    }
}
