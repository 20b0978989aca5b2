//! Wire-level pieces the hypervisor needs beyond perfbench's codec: errors,
//! port descriptions (1.0 FEATURES_REPLY ports, 1.3 PORT_DESC), port status,
//! and the flow-statistics and FLOW_REMOVED layouts whose cookies carry the
//! slice tag.

use perfbench::codec::{self, Version, wire::Put};

pub const OFPET_BAD_REQUEST: u16 = 1;
pub const OFPET_BAD_ACTION: u16 = 2;
pub const OFPBRC_EPERM: u16 = 5;
pub const OFPBRC_BUFFER_UNKNOWN: u16 = 8;
pub const OFPBAC_EPERM: u16 = 6;
pub const OFPET_HELLO_FAILED: u16 = 0;

/// OFPET_FLOW_MOD_FAILED differs between the versions (3 in 1.0, 5 in 1.3).
pub fn flow_mod_failed(v: Version) -> u16 {
    match v {
        Version::V10 => 3,
        Version::V13 => 5,
    }
}

/// OFPFMFC_EPERM (2 in 1.0, 4 in 1.3).
pub fn flow_mod_eperm(v: Version) -> u16 {
    match v {
        Version::V10 => 2,
        Version::V13 => 4,
    }
}

/// OFPFMFC_ALL_TABLES_FULL (1.0) / OFPFMFC_TABLE_FULL (1.3).
pub fn flow_mod_table_full(v: Version) -> u16 {
    match v {
        Version::V10 => 0,
        Version::V13 => 1,
    }
}

pub mod t13 {
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const FLOW_REMOVED: u8 = 11;
    pub const PORT_STATUS: u8 = 12;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const ROLE_REQUEST: u8 = 24;
    pub const ROLE_REPLY: u8 = 25;
}

pub const STATS_FLOW: u16 = 1;
pub const STATS_AGGREGATE: u16 = 2;
pub const STATS_PORT: u16 = 4;
pub const MP_PORT_DESC: u16 = 13;
pub const SET_CONFIG: u8 = 9;
pub const VENDOR: u8 = 4;

/// An OFPT_ERROR answering `offending` (its first 64 bytes as data, as the spec asks).
pub fn error(v: Version, xid: u32, err_type: u16, code: u16, offending: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(76);
    let start = codec::begin(&mut out, v.wire(), codec::types::ERROR, xid);
    out.put_u16(err_type);
    out.put_u16(code);
    out.extend_from_slice(&offending[..offending.len().min(64)]);
    let _ = codec::finish(&mut out, start);
    out
}

/// Size of one port description (ofp_phy_port / ofp_port).
pub fn port_desc_len(v: Version) -> usize {
    match v {
        Version::V10 => 48,
        Version::V13 => 64,
    }
}

/// The port number of a port description.
pub fn port_no(v: Version, desc: &[u8]) -> u32 {
    match v {
        Version::V10 => u16::from_be_bytes([desc[0], desc[1]]) as u32,
        Version::V13 => u32::from_be_bytes([desc[0], desc[1], desc[2], desc[3]]),
    }
}

/// Splits a run of port descriptions; `None` if it is not a whole number of them.
pub fn split_ports(v: Version, body: &[u8]) -> Option<Vec<Vec<u8>>> {
    let n = port_desc_len(v);
    body.len()
        .is_multiple_of(n)
        .then(|| body.chunks_exact(n).map(|c| c.to_vec()).collect())
}

/// The switch as the hypervisor learned it at connection time.
#[derive(Debug, Clone)]
pub struct SwitchInfo {
    pub version: Version,
    pub dpid: u64,
    /// FEATURES_REPLY body before the ports (24 bytes in 1.0, the whole body in 1.3).
    pub features_head: Vec<u8>,
    /// Port descriptions, physical ports only, in the switch's order.
    pub ports: Vec<Vec<u8>>,
}

impl SwitchInfo {
    /// FEATURES_REPLY for a tenant: in 1.0 listing only `ports` it may see.
    pub fn features_reply(&self, xid: u32, visible: impl Fn(u32) -> bool) -> Vec<u8> {
        let v = self.version;
        let mut out = Vec::new();
        let start = codec::begin(&mut out, v.wire(), codec::types::FEATURES_REPLY, xid);
        out.extend_from_slice(&self.features_head);
        if v == Version::V10 {
            for p in self.ports.iter().filter(|p| visible(port_no(v, p))) {
                out.extend_from_slice(p);
            }
        }
        let _ = codec::finish(&mut out, start);
        out
    }

    /// 1.3 PORT_DESC multipart reply with the visible ports.
    pub fn port_desc_reply(&self, xid: u32, visible: impl Fn(u32) -> bool) -> Vec<u8> {
        let v = self.version;
        let mut out = Vec::new();
        let start = codec::begin(&mut out, v.wire(), t13::MULTIPART_REPLY, xid);
        out.put_u16(MP_PORT_DESC);
        out.put_u16(0);
        out.put_zeros(4);
        for p in self.ports.iter().filter(|p| visible(port_no(v, p))) {
            out.extend_from_slice(p);
        }
        let _ = codec::finish(&mut out, start);
        out
    }

    /// A PORT_STATUS (reason 0 add, 1 delete) for `port`, when a reload changes a slice's ports.
    pub fn port_status(&self, port: u32, reason: u8) -> Option<Vec<u8>> {
        let v = self.version;
        let desc = self.ports.iter().find(|p| port_no(v, p) == port)?;
        let mut out = Vec::new();
        let start = codec::begin(&mut out, v.wire(), t13::PORT_STATUS, 0);
        out.put_u8(reason);
        out.put_zeros(7);
        out.extend_from_slice(desc);
        let _ = codec::finish(&mut out, start);
        Some(out)
    }
}

/// The stats/multipart type and the offset of the entries in a stats body.
pub fn stats_head(v: Version, body: &[u8]) -> Option<(u16, u16, usize)> {
    let ty = u16::from_be_bytes([*body.first()?, *body.get(1)?]);
    let flags = u16::from_be_bytes([*body.get(2)?, *body.get(3)?]);
    let off = match v {
        Version::V10 => 4,
        Version::V13 => 8,
    };
    (body.len() >= off).then_some((ty, flags, off))
}

/// Offset of the cookie inside one flow-stats entry.
fn flow_entry_cookie_at(v: Version) -> usize {
    match v {
        Version::V10 => 64,
        Version::V13 => 24,
    }
}

/// Rewrites a flow-stats reply body in place of `out`: keeps the entries
/// whose cookie carries `tag`, with the tag cleared. `None` if malformed.
pub fn filter_flow_stats(v: Version, body: &[u8], tag: u8) -> Option<Vec<u8>> {
    let (_, _, off) = stats_head(v, body)?;
    let mut out = body[..off].to_vec();
    let mut rest = &body[off..];
    let at = flow_entry_cookie_at(v);
    while !rest.is_empty() {
        let len = u16::from_be_bytes([*rest.first()?, *rest.get(1)?]) as usize;
        if len < at + 8 || len > rest.len() {
            return None;
        }
        let entry = &rest[..len];
        let cookie = u64::from_be_bytes(entry[at..at + 8].try_into().ok()?);
        if crate::policy::cookie_tag(cookie) == tag {
            let mut e = entry.to_vec();
            e[at..at + 8].copy_from_slice(&(cookie & !crate::policy::TAG_MASK).to_be_bytes());
            out.extend_from_slice(&e);
        }
        rest = &rest[len..];
    }
    Some(out)
}

/// Keeps the port-stats entries of ports `keep` accepts.
pub fn filter_port_stats(v: Version, body: &[u8], keep: impl Fn(u32) -> bool) -> Option<Vec<u8>> {
    let (_, _, off) = stats_head(v, body)?;
    let n = match v {
        Version::V10 => 104,
        Version::V13 => 112,
    };
    let entries = &body[off..];
    if !entries.len().is_multiple_of(n) {
        return None;
    }
    let mut out = body[..off].to_vec();
    for e in entries.chunks_exact(n) {
        if keep(port_no(v, e)) {
            out.extend_from_slice(e);
        }
    }
    Some(out)
}

/// In a 1.3 flow-stats/aggregate request body: confines it to cookies with `tag`.
pub fn confine_flow_request13(body: &mut [u8], tag: u8) -> Option<()> {
    // multipart head (8) + table_id(1) pad(3) out_port(4) out_group(4) pad(4) cookie(8) mask(8)
    let (c, m) = (8 + 16, 8 + 24);
    if body.len() < m + 8 {
        return None;
    }
    let cookie = u64::from_be_bytes(body[c..c + 8].try_into().ok()?);
    let mask = u64::from_be_bytes(body[m..m + 8].try_into().ok()?);
    body[c..c + 8].copy_from_slice(&crate::policy::tag_cookie(tag, cookie).to_be_bytes());
    body[m..m + 8].copy_from_slice(&(mask | crate::policy::TAG_MASK).to_be_bytes());
    Some(())
}

/// The cookie of a FLOW_REMOVED body and where it sits.
pub fn flow_removed_cookie_at(v: Version) -> usize {
    match v {
        Version::V10 => 40,
        Version::V13 => 0,
    }
}

/// Replaces the whole message's body with `body`, keeping type and xid.
pub fn with_body(v: Version, msg_type: u8, xid: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + body.len());
    let start = codec::begin(&mut out, v.wire(), msg_type, xid);
    out.extend_from_slice(body);
    let _ = codec::finish(&mut out, start);
    out
}

pub fn set_xid(msg: &mut [u8], xid: u32) {
    msg[4..8].copy_from_slice(&xid.to_be_bytes());
}

pub fn xid_of(msg: &[u8]) -> u32 {
    u32::from_be_bytes([msg[4], msg[5], msg[6], msg[7]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_stats_are_filtered_by_tag() {
        let entry = |cookie: u64| {
            let mut e = vec![0u8; 24 + 16 + 8];
            e[0..2].copy_from_slice(&(48u16).to_be_bytes());
            e[24..32].copy_from_slice(&cookie.to_be_bytes());
            e
        };
        let mut body = vec![0, 1, 0, 0, 0, 0, 0, 0];
        body.extend(entry(crate::policy::tag_cookie(1, 7)));
        body.extend(entry(crate::policy::tag_cookie(2, 8)));
        let f = filter_flow_stats(Version::V13, &body, 1).unwrap();
        assert_eq!(f.len(), 8 + 48);
        assert_eq!(&f[8 + 24..8 + 32], &7u64.to_be_bytes());
        assert!(filter_flow_stats(Version::V13, &body[..body.len() - 1], 1).is_none());
    }

    #[test]
    fn port_stats_and_descriptions_are_filtered() {
        let mut body = vec![0, 4, 0, 0];
        for p in [1u16, 2, 3] {
            let mut e = vec![0u8; 104];
            e[0..2].copy_from_slice(&p.to_be_bytes());
            body.extend(e);
        }
        let f = filter_port_stats(Version::V10, &body, |p| p != 2).unwrap();
        assert_eq!(f.len(), 4 + 2 * 104);
        let info = SwitchInfo {
            version: Version::V10,
            dpid: 1,
            features_head: vec![0; 24],
            ports: [1u16, 2]
                .iter()
                .map(|p| {
                    let mut d = vec![0u8; 48];
                    d[0..2].copy_from_slice(&p.to_be_bytes());
                    d
                })
                .collect(),
        };
        let fr = info.features_reply(9, |p| p == 2);
        let (_, m) = codec::decode(&fr).unwrap();
        match m {
            codec::Message::V10(codec::of10::Message::FeaturesReply(f)) => {
                assert_eq!(f.ports.len(), 1);
                assert_eq!(f.ports[0].port_no, 2);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(info.port_status(2, 1).unwrap().len(), 8 + 8 + 48);
    }
}
