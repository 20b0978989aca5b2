//! OpenFlow 1.3 multipart messages: port statistics decoded, other kinds kept as bytes.

use super::super::wire::{Put, Reader};
use super::super::{CodecError, PortCounters};
use super::{Message, OFPMP_PORT_STATS, t};

const PORT_STATS_LEN: usize = 112;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortStats {
    pub port_no: u32,
    pub counters: PortCounters,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

/// Decodes a MULTIPART_REQUEST or MULTIPART_REPLY body: port statistics
/// become typed messages, any other kind stays bytes.
pub(super) fn decode(msg_type: u8, body: &[u8]) -> Result<Message, CodecError> {
    let mut r = Reader::new(body);
    let mp_type = r.u16("multipart type")?;
    let flags = r.u16("multipart flags")?;
    r.skip(4, "multipart pad")?;
    if mp_type != OFPMP_PORT_STATS {
        return Ok(Message::Other {
            msg_type,
            body: body.to_vec(),
        });
    }
    if msg_type == t::MULTIPART_REQUEST {
        let port_no = r.u32("port stats request port_no")?;
        r.skip(4, "port stats request pad")?;
        return Ok(Message::PortStatsRequest { flags, port_no });
    }
    Ok(Message::PortStatsReply {
        flags,
        stats: decode_port_stats(&mut r)?,
    })
}

fn decode_port_stats(r: &mut Reader<'_>) -> Result<Vec<PortStats>, CodecError> {
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
        let counters = PortCounters::decode(r)?;
        stats.push(PortStats {
            port_no,
            counters,
            duration_sec: r.u32("port stats duration_sec")?,
            duration_nsec: r.u32("port stats duration_nsec")?,
        });
    }
    Ok(stats)
}

pub(super) fn encode_request(flags: u16, port_no: u32, out: &mut Vec<u8>) {
    out.put_u16(OFPMP_PORT_STATS);
    out.put_u16(flags);
    out.put_zeros(4);
    out.put_u32(port_no);
    out.put_zeros(4);
}

pub(super) fn encode_reply(flags: u16, stats: &[PortStats], out: &mut Vec<u8>) {
    out.put_u16(OFPMP_PORT_STATS);
    out.put_u16(flags);
    out.put_zeros(4);
    for s in stats {
        out.put_u32(s.port_no);
        out.put_zeros(4);
        s.counters.encode(out);
        out.put_u32(s.duration_sec);
        out.put_u32(s.duration_nsec);
    }
}
