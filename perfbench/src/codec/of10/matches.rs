//! OpenFlow 1.0 match: the fixed 40-byte ofp_match.

use super::super::CodecError;
use super::super::wire::{Put, Reader};
use super::OFPFW_ALL;

const MATCH_LEN: usize = 40;

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

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
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
