//! OpenFlow 1.3 (wire version 0x04): type numbers and constants here, the
//! message enum in `message`, HELLO elements, matches, actions/instructions
//! and multipart in their own modules, and the copy-free hot-path helpers below.

mod actions;
mod hello;
mod matches;
mod message;
mod multipart;

pub use actions::{Action, Instruction};
pub use hello::HelloElement;
pub use matches::{Match, Oxm};
pub use message::{FeaturesReply, FlowMod, Message, PacketIn, PacketOut};
pub use multipart::PortStats;

use super::wire::{Put, Reader, pad8};
use super::{CodecError, OFP13, begin, finish};

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
