//! What a tenant controller sends, as the hypervisor handles it: answered
//! locally (HELLO, ECHO, FEATURES, port descriptions, role, configuration),
//! refused with an OpenFlow error, or sliced and forwarded to the switch
//! under a translated xid.

use crate::limits::FlowKey;
use crate::ofmatch;
use crate::ofwire::{self, t13};
use crate::policy::{self, Denied};
use crate::session::Session;
use crate::translate::Pending;
use perfbench::clock::now_ns;
use perfbench::codec::{self, Header, Message, Version, of10, of13, types};

const OFPFC_ADD: u8 = 0;
const OFPFC_MODIFY: u8 = 1;
const OFPFC_DELETE: u8 = 3;
const OFPFC_DELETE_STRICT: u8 = 4;

/// A flow's identity as the quota counts it.
fn key10(m: &of10::Match, priority: u16) -> FlowKey {
    let unmodeled = 1 << 20 | 1 << 21; // DL_VLAN_PCP, NW_TOS
    FlowKey {
        fields: ofmatch::from_of10(m),
        rest: if m.wildcards & unmodeled == unmodeled {
            vec![]
        } else {
            vec![(m.wildcards >> 20) as u8, m.dl_vlan_pcp, m.nw_tos]
        },
        priority,
    }
}

fn key13(m: &of13::Match, priority: u16) -> FlowKey {
    let (fields, rest) = ofmatch::from_oxms(&m.fields);
    let mut bytes = Vec::new();
    for o in rest {
        bytes.extend_from_slice(&o.class.to_be_bytes());
        bytes.push(o.field << 1 | o.hasmask as u8);
        bytes.extend_from_slice(&o.value);
    }
    FlowKey {
        fields,
        rest: bytes,
        priority,
    }
}

/// The flow a FLOW_REMOVED reports (tag still in the cookie).
pub fn flow_removed_key(v: Version, m: &[u8]) -> Option<FlowKey> {
    let body = m.get(8..)?;
    let mut r = codec::wire::Reader::new(body);
    match v {
        Version::V10 => {
            let mt = of10::Match::decode(&mut r).ok()?;
            r.skip(8, "cookie").ok()?;
            Some(key10(&mt, r.u16("priority").ok()?))
        }
        Version::V13 => {
            r.skip(8, "cookie").ok()?;
            let priority = r.u16("priority").ok()?;
            r.skip(30, "flow_removed fields").ok()?;
            Some(key13(&of13::Match::decode(&mut r).ok()?, priority))
        }
    }
}

/// A tenant's FLOW_MOD after slicing: the messages and how the quota changes.
struct SlicedFlowMod {
    command: u8,
    keys: Vec<FlowKey>,
    msgs: Vec<Message>,
    buffer_id: u32,
    wants_removed: bool,
}

impl Session {
    /// Handles one message from tenant `i`; `Err` closes that tenant's channel.
    pub fn tenant_message(&mut self, i: usize, msg: &[u8]) -> Result<(), String> {
        let v = self.version();
        let (h, body) = codec::split(msg).map_err(|e| format!("garbage from the tenant: {e}"))?;
        if h.msg_type == types::HELLO {
            return self.tenant_hello(i, &h, msg);
        }
        if h.version != v.wire() {
            return Err(format!(
                "tenant sent version 0x{:02x} on an OpenFlow {v} channel",
                h.version
            ));
        }
        match (v, h.msg_type) {
            (_, types::ECHO_REQUEST) => {
                self.local(i, &ofwire::with_body(v, types::ECHO_REPLY, h.xid, body));
            }
            (_, types::ECHO_REPLY | types::ERROR | ofwire::SET_CONFIG) => {
                self.tenants[i].stats.answered_locally += 1;
            }
            (_, types::FEATURES_REQUEST) => {
                let slice = &self.tenants[i].slice;
                let r = self.info.features_reply(h.xid, |p| slice.has_port(p));
                self.local(i, &r);
            }
            (_, ofwire::VENDOR) => {
                self.deny(i, msg, ofwire::OFPET_BAD_REQUEST, ofwire::OFPBRC_EPERM)
            }
            (_, types::PACKET_OUT) => self.packet_out(i, msg)?,
            (_, types::FLOW_MOD) => self.flow_mod(i, msg)?,
            (Version::V10, 16) | (Version::V13, t13::MULTIPART_REQUEST) => {
                self.stats_request(i, msg)
            }
            (Version::V13, t13::ROLE_REQUEST) => {
                self.local(i, &ofwire::with_body(v, t13::ROLE_REPLY, h.xid, body));
            }
            _ => self.forward(i, msg, Pending::Plain),
        }
        Ok(())
    }

    fn tenant_hello(&mut self, i: usize, h: &Header, msg: &[u8]) -> Result<(), String> {
        let v = self.version();
        let bitmap = (h.version == codec::OFP13)
            .then(|| {
                of13::Message::decode(msg)
                    .ok()
                    .and_then(|(_, m)| m.hello_bitmap())
            })
            .flatten();
        if codec::negotiate(&[v], h.version, bitmap) == Some(v) {
            return Ok(());
        }
        let e = ofwire::error(v, h.xid, ofwire::OFPET_HELLO_FAILED, 0, msg);
        if let Some(c) = self.tenants[i].chan.as_mut() {
            c.send(&e);
            let _ = c.flush();
        }
        Err(format!(
            "tenant speaks version 0x{:02x}, the switch OpenFlow {v}",
            h.version
        ))
    }

    fn local(&mut self, i: usize, reply: &[u8]) {
        self.tenants[i].stats.answered_locally += 1;
        self.to_tenant(i, reply, false);
    }

    fn deny(&mut self, i: usize, msg: &[u8], err_type: u16, code: u16) {
        let e = ofwire::error(self.version(), ofwire::xid_of(msg), err_type, code, msg);
        self.tenants[i].stats.denied += 1;
        self.to_tenant(i, &e, false);
    }

    /// Forwards `msg` with a fresh xid that leads its answer back to tenant `i`.
    fn forward(&mut self, i: usize, msg: &[u8], kind: Pending) {
        let xid = self
            .pending
            .add(self.tenants[i].uid, ofwire::xid_of(msg), kind, now_ns());
        let mut out = msg.to_vec();
        ofwire::set_xid(&mut out, xid);
        self.tenants[i].stats.to_switch_msgs += 1;
        self.to_switch(&out);
    }

    fn forward_encoded(&mut self, i: usize, tenant_xid: u32, m: &Message) -> Result<(), String> {
        let xid = self
            .pending
            .add(self.tenants[i].uid, tenant_xid, Pending::Plain, now_ns());
        let out = m.to_bytes(xid).map_err(|e| format!("re-encoding: {e}"))?;
        self.tenants[i].stats.to_switch_msgs += 1;
        self.to_switch(&out);
        Ok(())
    }

    /// A tenant's virtual buffer id as the switch's (NO_BUFFER stays).
    fn real_buffer(&mut self, i: usize, virt: u32) -> Option<u32> {
        if virt == of13::NO_BUFFER {
            return Some(virt);
        }
        self.buffers.resolve(self.tenants[i].uid, virt)
    }

    fn packet_out(&mut self, i: usize, msg: &[u8]) -> Result<(), String> {
        let (h, m) = codec::decode(msg).map_err(|e| format!("bad PACKET_OUT: {e}"))?;
        let slice = &self.tenants[i].slice;
        let sliced = match &m {
            Message::V10(of10::Message::PacketOut(po)) => {
                policy::packet_out10(slice, po).map(|a| {
                    let same = a == po.actions;
                    (
                        po.buffer_id,
                        same,
                        Message::V10(of10::Message::PacketOut(of10::PacketOut {
                            actions: a,
                            ..po.clone()
                        })),
                    )
                })
            }
            Message::V13(of13::Message::PacketOut(po)) => {
                policy::packet_out13(slice, po).map(|a| {
                    let same = a == po.actions;
                    (
                        po.buffer_id,
                        same,
                        Message::V13(of13::Message::PacketOut(of13::PacketOut {
                            actions: a,
                            ..po.clone()
                        })),
                    )
                })
            }
            _ => return Err("PACKET_OUT did not decode as one".into()),
        };
        let (virt, same, mut out) = match sliced {
            Ok(x) => x,
            Err(_) => {
                self.deny(i, msg, ofwire::OFPET_BAD_ACTION, ofwire::OFPBAC_EPERM);
                return Ok(());
            }
        };
        let Some(real) = self.real_buffer(i, virt) else {
            self.deny(
                i,
                msg,
                ofwire::OFPET_BAD_REQUEST,
                ofwire::OFPBRC_BUFFER_UNKNOWN,
            );
            return Ok(());
        };
        if same && real == virt {
            self.forward(i, msg, Pending::Plain);
            return Ok(());
        }
        match &mut out {
            Message::V10(of10::Message::PacketOut(po)) => po.buffer_id = real,
            Message::V13(of13::Message::PacketOut(po)) => po.buffer_id = real,
            _ => {}
        }
        self.forward_encoded(i, h.xid, &out)
    }

    fn slice_flow_mod(
        &self,
        i: usize,
        m: &Message,
    ) -> Result<Result<SlicedFlowMod, Denied>, String> {
        let slice = &self.tenants[i].slice;
        Ok(match m {
            Message::V10(of10::Message::FlowMod(fm)) => {
                policy::flow_mod10(slice, fm).map(|mods| SlicedFlowMod {
                    command: fm.command as u8,
                    keys: mods.iter().map(|x| key10(&x.match_, x.priority)).collect(),
                    msgs: mods
                        .into_iter()
                        .map(|x| Message::V10(of10::Message::FlowMod(x)))
                        .collect(),
                    buffer_id: fm.buffer_id,
                    wants_removed: fm.flags & policy::OFPFF_SEND_FLOW_REM != 0,
                })
            }
            Message::V13(of13::Message::FlowMod(fm)) => {
                policy::flow_mod13(slice, fm).map(|mods| SlicedFlowMod {
                    command: fm.command,
                    keys: mods.iter().map(|x| key13(&x.match_, x.priority)).collect(),
                    msgs: mods
                        .into_iter()
                        .map(|x| Message::V13(of13::Message::FlowMod(x)))
                        .collect(),
                    buffer_id: fm.buffer_id,
                    wants_removed: fm.flags & policy::OFPFF_SEND_FLOW_REM != 0,
                })
            }
            _ => return Err("FLOW_MOD did not decode as one".into()),
        })
    }

    fn flow_mod(&mut self, i: usize, msg: &[u8]) -> Result<(), String> {
        let v = self.version();
        let (h, m) = codec::decode(msg).map_err(|e| format!("bad FLOW_MOD: {e}"))?;
        let mut f = match self.slice_flow_mod(i, &m)? {
            Ok(f) => f,
            Err(_) => {
                self.deny(
                    i,
                    msg,
                    ofwire::flow_mod_failed(v),
                    ofwire::flow_mod_eperm(v),
                );
                return Ok(());
            }
        };
        let adds = f.command == OFPFC_ADD || (v == Version::V10 && f.command == OFPFC_MODIFY);
        if adds
            && !self.tenants[i]
                .flows
                .admits(&f.keys, self.tenants[i].slice.limits.flows)
        {
            self.tenants[i].stats.quota_refusals += 1;
            self.deny(
                i,
                msg,
                ofwire::flow_mod_failed(v),
                ofwire::flow_mod_table_full(v),
            );
            return Ok(());
        }
        let Some(real) = self.real_buffer(i, f.buffer_id) else {
            self.deny(
                i,
                msg,
                ofwire::OFPET_BAD_REQUEST,
                ofwire::OFPBRC_BUFFER_UNKNOWN,
            );
            return Ok(());
        };
        // The buffered packet goes with the first rule only.
        for (k, m) in f.msgs.iter_mut().enumerate() {
            let b = if k == 0 { real } else { of13::NO_BUFFER };
            match m {
                Message::V10(of10::Message::FlowMod(x)) => x.buffer_id = b,
                Message::V13(of13::Message::FlowMod(x)) => x.buffer_id = b,
                _ => {}
            }
        }
        for m in &f.msgs {
            self.forward_encoded(i, h.xid, m)?;
        }
        let flows = &mut self.tenants[i].flows;
        for key in f.keys {
            match f.command {
                OFPFC_DELETE => flows.remove_within(&key),
                OFPFC_DELETE_STRICT => {
                    flows.remove(&key);
                }
                _ if adds => flows.add(key, f.wants_removed),
                _ => {}
            }
        }
        Ok(())
    }

    fn stats_request(&mut self, i: usize, msg: &[u8]) {
        let v = self.version();
        let Some((ty, _, off)) = ofwire::stats_head(v, &msg[8..]) else {
            return self.deny(i, msg, ofwire::OFPET_BAD_REQUEST, 6);
        };
        match (v, ty) {
            (_, ofwire::STATS_PORT) => self.port_stats(i, msg, off),
            (_, ofwire::STATS_FLOW) | (Version::V13, ofwire::STATS_AGGREGATE) => {
                let mut out = msg.to_vec();
                if v == Version::V13
                    && ofwire::confine_flow_request13(
                        &mut out[8..],
                        self.tenants[i].slice.cookie_tag,
                    )
                    .is_none()
                {
                    return self.deny(i, msg, ofwire::OFPET_BAD_REQUEST, 6);
                }
                let kind = if ty == ofwire::STATS_FLOW {
                    Pending::FlowStats
                } else {
                    Pending::Plain
                };
                self.forward(i, &out, kind);
            }
            // 1.0 aggregates cannot be confined to a slice's flows.
            (Version::V10, ofwire::STATS_AGGREGATE) => {
                self.deny(i, msg, ofwire::OFPET_BAD_REQUEST, ofwire::OFPBRC_EPERM)
            }
            (Version::V13, ofwire::MP_PORT_DESC) => {
                let slice = &self.tenants[i].slice;
                let r = self
                    .info
                    .port_desc_reply(ofwire::xid_of(msg), |p| slice.has_port(p));
                self.local(i, &r);
            }
            _ => self.forward(i, msg, Pending::Plain),
        }
    }

    /// Port statistics: only the slice's ports; from the cache when it is young enough.
    fn port_stats(&mut self, i: usize, msg: &[u8], off: usize) {
        let v = self.version();
        let at = 8 + off;
        let (port, all) = match v {
            Version::V10 => (
                msg.get(at..at + 2)
                    .map(|b| u16::from_be_bytes([b[0], b[1]]) as u32),
                0xffff,
            ),
            Version::V13 => (
                msg.get(at..at + 4)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                0xffff_ffff,
            ),
        };
        let Some(port) = port else {
            return self.deny(i, msg, ofwire::OFPET_BAD_REQUEST, 6);
        };
        let want = (port != all).then_some(port);
        if want.is_some_and(|p| !self.tenants[i].slice.has_port(p)) {
            return self.deny(i, msg, ofwire::OFPET_BAD_REQUEST, ofwire::OFPBRC_EPERM);
        }
        let ttl_ns = self.config.stats_cache_ms * 1_000_000;
        let now = now_ns();
        if let Some((at_ns, body)) = &self.port_stats_cache
            && ttl_ns > 0
            && now - at_ns < ttl_ns
        {
            let age_ms = (now - at_ns) as f64 / 1e6;
            let slice = &self.tenants[i].slice;
            let keep = |q: u32| slice.has_port(q) && want.is_none_or(|w| w == q);
            if let Some(b) = ofwire::filter_port_stats(v, body, keep) {
                let r = ofwire::with_body(v, msg[1] + 1, ofwire::xid_of(msg), &b);
                self.report.port_stats_cache_hits += 1;
                self.report.port_stats_cache_max_age_ms =
                    self.report.port_stats_cache_max_age_ms.max(age_ms);
                return self.local(i, &r);
            }
        }
        let mut out = msg.to_vec();
        if ttl_ns > 0 {
            // Ask for every port so the reply can fill the cache.
            let n = if v == Version::V10 { 2 } else { 4 };
            out[at..at + n].fill(0xff);
        }
        self.forward(i, &out, Pending::PortStats { port: want });
    }
}
