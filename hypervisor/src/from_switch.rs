//! What the switch sends, routed: ECHO answered, PACKET_IN to the slice
//! whose flowspace holds the packet, FLOW_REMOVED by cookie tag, PORT_STATUS
//! to the slices with that port, replies and errors back by xid (statistics
//! filtered to the slice).

use crate::fields::{self, Fields};
use crate::ofmatch;
use crate::ofwire::{self, t13};
use crate::policy;
use crate::session::Session;
use crate::translate::Pending;
use perfbench::clock::now_ns;
use perfbench::codec::{self, Version, of13, types};

impl Session {
    /// Handles everything complete in the switch's inbox.
    pub fn switch_messages(&mut self) -> Result<(), String> {
        loop {
            let m = match self.sw.next_msg() {
                Ok(Some(m)) => m,
                Ok(None) => return Ok(()),
                Err(e) => return Err(format!("switch sent garbage: {e}")),
            };
            self.report.from_switch_msgs += 1;
            let (h, body) = codec::split(&m).map_err(|e| format!("switch: {e}"))?;
            match h.msg_type {
                types::ECHO_REQUEST => {
                    let r = ofwire::with_body(self.version(), types::ECHO_REPLY, h.xid, body);
                    self.sw.send(&r);
                }
                types::PACKET_IN => self.packet_in(&m),
                t13::FLOW_REMOVED => self.flow_removed(&m),
                t13::PORT_STATUS => self.port_status(&m),
                _ => self.reply(&m),
            }
        }
    }

    fn packet_in(&mut self, m: &[u8]) {
        let v = self.version();
        let Some(fields) = packet_in_fields(v, m) else {
            self.report.unrouted_packet_ins += 1;
            return;
        };
        let Some(i) = self
            .tenants
            .iter()
            .position(|t| t.chan.is_some() && t.slice.owns_packet(&fields))
        else {
            self.report.unrouted_packet_ins += 1;
            return;
        };
        let t = &mut self.tenants[i];
        if !t.packet_in_bucket.take(now_ns()) {
            // Over the slice's PACKET_IN rate: dropped, as a switch's own
            // controller rate limit would (a buffered packet times out there).
            t.stats.packet_ins_limited += 1;
            return;
        }
        let mut out = m.to_vec();
        let real = u32::from_be_bytes([m[8], m[9], m[10], m[11]]);
        if real != codec::of13::NO_BUFFER {
            let virt = self.buffers.insert(self.tenants[i].uid, real);
            out[8..12].copy_from_slice(&virt.to_be_bytes());
        }
        self.tenants[i].stats.packet_ins += 1;
        self.to_tenant(i, &out, true);
    }

    fn flow_removed(&mut self, m: &[u8]) {
        let v = self.version();
        let at = 8 + ofwire::flow_removed_cookie_at(v);
        let Some(raw) = m.get(at..at + 8) else { return };
        let cookie = u64::from_be_bytes(raw.try_into().unwrap());
        let tag = policy::cookie_tag(cookie);
        let Some(i) = self.tenants.iter().position(|t| t.slice.cookie_tag == tag) else {
            return;
        };
        let Some(key) = crate::tenant::flow_removed_key(v, m) else {
            return;
        };
        if self.tenants[i].flows.remove(&key) {
            let mut out = m.to_vec();
            out[at..at + 8].copy_from_slice(&(cookie & !policy::TAG_MASK).to_be_bytes());
            self.to_tenant(i, &out, false);
        }
    }

    fn port_status(&mut self, m: &[u8]) {
        let v = self.version();
        let n = ofwire::port_desc_len(v);
        let Some(desc) = m.get(16..16 + n) else {
            return;
        };
        let port = ofwire::port_no(v, desc);
        let reason = m[8];
        self.info.ports.retain(|p| ofwire::port_no(v, p) != port);
        if reason != 1 {
            self.info.ports.push(desc.to_vec());
        }
        for i in 0..self.tenants.len() {
            if self.tenants[i].slice.has_port(port) {
                self.to_tenant(i, m, false);
            }
        }
    }

    /// A reply (or error) to something a tenant sent: back to it with its xid.
    fn reply(&mut self, m: &[u8]) {
        let v = self.version();
        let xid = ofwire::xid_of(m);
        let msg_type = m[1];
        let more = is_multipart(v, msg_type) && m.len() >= 12 && m[11] & 1 == 1;
        let Some(p) = self.pending.take(xid, more, now_ns()) else {
            return;
        };
        let Some(i) = self.tenant_index(p.tenant) else {
            return;
        };
        let body = &m[8..];
        let filtered = match p.kind {
            Pending::Plain => Some(body.to_vec()),
            Pending::FlowStats if msg_type != types::ERROR => {
                ofwire::filter_flow_stats(v, body, self.tenants[i].slice.cookie_tag)
            }
            Pending::PortStats { port } if msg_type != types::ERROR => {
                if !more && port.is_none() && self.config.stats_cache_ms > 0 {
                    self.port_stats_cache = Some((now_ns(), body.to_vec()));
                }
                let slice = &self.tenants[i].slice;
                ofwire::filter_port_stats(v, body, |q| {
                    slice.has_port(q) && port.is_none_or(|w| w == q)
                })
            }
            _ => Some(body.to_vec()),
        };
        if let Some(b) = filtered {
            let out = ofwire::with_body(v, msg_type, p.tenant_xid, &b);
            self.to_tenant(i, &out, false);
        }
    }
}

fn is_multipart(v: Version, msg_type: u8) -> bool {
    match v {
        Version::V10 => msg_type == 17,
        Version::V13 => msg_type == t13::MULTIPART_REPLY,
    }
}

/// The packet of a PACKET_IN as flowspace fields (in_port and, in 1.3, the tunnel id).
pub fn packet_in_fields(v: Version, m: &[u8]) -> Option<Fields> {
    match v {
        Version::V10 => {
            let body = m.get(8..)?;
            let in_port = u16::from_be_bytes([*body.get(6)?, *body.get(7)?]) as u32;
            Some(fields::parse_frame(in_port, body.get(10..)?))
        }
        Version::V13 => {
            let (_, msg) = of13::Message::decode(m).ok()?;
            let of13::Message::PacketIn(p) = msg else {
                return None;
            };
            let (meta, _) = ofmatch::from_oxms(&p.match_.fields);
            let mut f = fields::parse_frame(meta.in_port?, &p.data);
            f.vni = meta.vni;
            Some(f)
        }
    }
}
