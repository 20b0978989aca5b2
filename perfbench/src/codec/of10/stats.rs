//! OpenFlow 1.0 port statistics (the only statistics kind decoded).

use super::super::wire::{Put, Reader};
use super::super::{CodecError, PortCounters};
use super::{Message, OFPST_PORT, t};

const PORT_STATS_LEN: usize = 104;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortStats {
    pub port_no: u16,
    pub counters: PortCounters,
}

/// Decodes a STATS_REQUEST or STATS_REPLY body: port statistics become
/// typed messages, any other kind stays bytes.
pub(super) fn decode(msg_type: u8, body: &[u8]) -> Result<Message, CodecError> {
    let mut r = Reader::new(body);
    let stats_type = r.u16("stats type")?;
    let flags = r.u16("stats flags")?;
    if stats_type != OFPST_PORT {
        return Ok(Message::Other {
            msg_type,
            body: body.to_vec(),
        });
    }
    if msg_type == t::STATS_REQUEST {
        let port_no = r.u16("port stats request port_no")?;
        r.skip(6, "port stats request pad")?;
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
        let port_no = r.u16("port stats port_no")?;
        r.skip(6, "port stats pad")?;
        stats.push(PortStats {
            port_no,
            counters: PortCounters::decode(r)?,
        });
    }
    Ok(stats)
}

pub(super) fn encode_request(flags: u16, port_no: u16, out: &mut Vec<u8>) {
    out.put_u16(OFPST_PORT);
    out.put_u16(flags);
    out.put_u16(port_no);
    out.put_zeros(6);
}

pub(super) fn encode_reply(flags: u16, stats: &[PortStats], out: &mut Vec<u8>) {
    out.put_u16(OFPST_PORT);
    out.put_u16(flags);
    for s in stats {
        out.put_u16(s.port_no);
        out.put_zeros(6);
        s.counters.encode(out);
    }
}
