//! OpenFlow 1.0 (wire version 0x01): type numbers and constants here, the
//! message enum in `message`, ports, matches, actions and port statistics in
//! their own modules, and the copy-free hot-path helpers below.

mod actions;
mod matches;
mod message;
mod ports;
mod stats;

pub use actions::Action;
pub use matches::Match;
pub use message::{FlowMod, Message, PacketIn, PacketOut};
pub use ports::{FeaturesReply, PhyPort};
pub use stats::PortStats;

use super::wire::{Put, Reader};
use super::{CodecError, OFP10, begin, finish};

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
