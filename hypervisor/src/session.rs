//! One switch connection and the tenant channels multiplexed onto it, run by
//! one thread with poll(2): the switch handshake, the event loop, what the
//! switch sends (routed to tenants) and configuration reloads.

use crate::chan::{self, Chan, ReadOutcome};
use crate::config::{Config, Slice};
use crate::fields::{self, Fields};
use crate::limits::{FlowTable, TokenBucket};
use crate::ofmatch;
use crate::ofwire::{self, SwitchInfo, t13};
use crate::policy;
use crate::server::Shared;
use crate::translate::{BufferMap, Pending, PendingMap};
use anyhow::{Context, bail};
use perfbench::clock::now_ns;
use perfbench::codec::{self, Header, Version, of13, types};
use perfbench::conn::RecvBuf;
use serde::Serialize;
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

const HV_XID: u32 = 0xFFF0_0000;
const RECONNECT_NS: u64 = 1_000_000_000;

#[derive(Debug, Default, Clone, Serialize)]
pub struct TenantStats {
    pub slice: String,
    pub connected: bool,
    pub connects: u64,
    pub to_switch_msgs: u64,
    pub to_tenant_msgs: u64,
    pub packet_ins: u64,
    pub answered_locally: u64,
    pub denied: u64,
    pub quota_refusals: u64,
    pub rate_limited_waits: u64,
    pub dropped_to_tenant: u64,
    pub flows: usize,
    pub closes: Vec<String>,
}

pub struct Tenant {
    pub uid: u64,
    pub slice: Slice,
    pub chan: Option<Chan>,
    pub bucket: TokenBucket,
    pub flows: FlowTable,
    pub next_connect_ns: u64,
    pub throttled_until: u64,
    pub stats: TenantStats,
}

#[derive(Debug, Default, Serialize)]
pub struct SessionReport {
    pub dpid: String,
    pub version: String,
    pub ports: Vec<u32>,
    pub from_switch_msgs: u64,
    pub to_switch_msgs: u64,
    pub unrouted_packet_ins: u64,
    pub port_stats_cache_hits: u64,
    pub port_stats_cache_max_age_ms: f64,
    pub ended: String,
    pub tenants: Vec<TenantStats>,
}

pub struct Session {
    pub shared: Arc<Shared>,
    pub info: SwitchInfo,
    pub sw: Chan,
    pub tenants: Vec<Tenant>,
    pub config: Arc<Config>,
    pub generation: u64,
    pub pending: PendingMap,
    pub buffers: BufferMap,
    pub port_stats_cache: Option<(u64, Vec<u8>)>,
    next_uid: u64,
    pub report: SessionReport,
}

/// Runs one switch connection until the switch leaves or the hypervisor stops.
pub fn run(shared: Arc<Shared>, stream: TcpStream) -> SessionReport {
    let mut s = match handshake(&shared, stream) {
        Ok(s) => s,
        Err(e) => {
            return SessionReport {
                ended: format!("switch handshake: {e:#}"),
                ..SessionReport::default()
            };
        }
    };
    let ended = s.event_loop();
    for t in &mut s.tenants {
        t.stats.flows = t.flows.len();
        t.stats.connected = t.chan.is_some();
    }
    s.report.ended = ended;
    s.report.tenants = s.tenants.iter().map(|t| t.stats.clone()).collect();
    s.report.ports = s
        .info
        .ports
        .iter()
        .map(|p| ofwire::port_no(s.info.version, p))
        .collect();
    s.report
}

fn read_msg(
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    deadline: u64,
    what: &str,
) -> anyhow::Result<Vec<u8>> {
    loop {
        if let Some(m) = rb.next_msg()? {
            return Ok(m.to_vec());
        }
        if now_ns() >= deadline {
            bail!("timed out waiting for {what}");
        }
        s.set_read_timeout(Some(Duration::from_millis(50)))?;
        match rb.fill(s) {
            Ok(0) => bail!("switch closed the connection while we waited for {what}"),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e).context("reading from the switch"),
        }
    }
}

/// HELLO, SET_CONFIG (whole packets to the controller), FEATURES_REQUEST and,
/// in 1.3, the port descriptions; then the tenants are connected.
fn handshake(shared: &Arc<Shared>, mut stream: TcpStream) -> anyhow::Result<Session> {
    stream.set_nodelay(shared.nodelay)?;
    let deadline = now_ns() + 10_000_000_000;
    let mut rb = RecvBuf::new(1 << 20);
    stream.write_all(&perfbench::messages::hello(&shared.versions).to_bytes(HV_XID)?)?;
    let hello = read_msg(&mut stream, &mut rb, deadline, "the switch's HELLO")?;
    let h = Header::parse(&hello)?;
    if h.msg_type != types::HELLO {
        bail!("expected HELLO, got type {}", h.msg_type);
    }
    let bitmap = (h.version == codec::OFP13)
        .then(|| {
            of13::Message::decode(&hello)
                .ok()
                .and_then(|(_, m)| m.hello_bitmap())
        })
        .flatten();
    let v = codec::negotiate(&shared.versions, h.version, bitmap).with_context(|| {
        format!(
            "no common OpenFlow version (switch says 0x{:02x})",
            h.version
        )
    })?;
    let mut setup = Vec::new();
    // flags 0, miss_send_len 0xffff: whole packets, whatever a tenant asks for.
    setup.extend(ofwire::with_body(
        v,
        ofwire::SET_CONFIG,
        HV_XID + 1,
        &[0, 0, 0xff, 0xff],
    ));
    perfbench::messages::features_request(v).encode(HV_XID + 2, &mut setup)?;
    if v == Version::V13 {
        setup.extend(ofwire::with_body(
            v,
            t13::MULTIPART_REQUEST,
            HV_XID + 3,
            &[0, 13, 0, 0, 0, 0, 0, 0],
        ));
    }
    stream.write_all(&setup)?;
    let (mut head, mut ports, mut dpid) = (None, None, 0);
    if v == Version::V10 {
        ports = Some(Vec::new());
    }
    while head.is_none() || ports.is_none() {
        let m = read_msg(
            &mut stream,
            &mut rb,
            deadline,
            "FEATURES_REPLY and port descriptions",
        )?;
        let (h, body) = codec::split(&m)?;
        match h.msg_type {
            types::ECHO_REQUEST => {
                stream.write_all(&ofwire::with_body(v, types::ECHO_REPLY, h.xid, body))?;
            }
            types::FEATURES_REPLY => {
                let n = if v == Version::V10 { 24 } else { body.len() };
                if body.len() < n.max(8) {
                    bail!("FEATURES_REPLY of {} bytes", body.len());
                }
                dpid = u64::from_be_bytes(body[0..8].try_into()?);
                head = Some(body[..n].to_vec());
                if v == Version::V10 {
                    ports =
                        Some(ofwire::split_ports(v, &body[n..]).context("FEATURES_REPLY ports")?);
                }
            }
            t13::MULTIPART_REPLY if v == Version::V13 && h.xid == HV_XID + 3 => {
                let got = ofwire::split_ports(v, &body[8..]).context("PORT_DESC reply")?;
                ports.get_or_insert_with(Vec::new).extend(got);
            }
            // A switch without PORT_DESC (or SET_CONFIG) support still gets sliced: no port list.
            types::ERROR if h.xid == HV_XID + 3 => {
                ports.get_or_insert_with(Vec::new);
            }
            types::ERROR if h.xid == HV_XID + 1 => {}
            types::ERROR => bail!("switch sent OFPT_ERROR during the handshake"),
            _ => {}
        }
    }
    let physical = |p: &Vec<u8>| {
        ofwire::port_no(v, p)
            < if v == Version::V10 {
                0xff00
            } else {
                0xffff_ff00
            }
    };
    let info = SwitchInfo {
        version: v,
        dpid,
        features_head: head.unwrap_or_default(),
        ports: ports
            .unwrap_or_default()
            .into_iter()
            .filter(physical)
            .collect(),
    };
    let mut sw = Chan::new(stream, shared.nodelay)?;
    // Messages that arrived behind the replies are still in the handshake's buffer.
    while let Some(m) = rb.next_msg()? {
        sw.push_input(m);
    }
    let (config, generation) = shared.snapshot();
    let mut s = Session {
        shared: shared.clone(),
        report: SessionReport {
            dpid: format!("{dpid:016x}"),
            version: v.to_string(),
            ..SessionReport::default()
        },
        info,
        sw,
        tenants: Vec::new(),
        config: config.clone(),
        generation,
        pending: PendingMap::default(),
        buffers: BufferMap::default(),
        port_stats_cache: None,
        next_uid: 1,
    };
    for slice in &config.slices {
        s.add_tenant(slice.clone());
    }
    Ok(s)
}

impl Session {
    pub fn version(&self) -> Version {
        self.info.version
    }

    fn add_tenant(&mut self, slice: Slice) {
        let now = now_ns();
        self.tenants.push(Tenant {
            uid: self.next_uid,
            bucket: TokenBucket::new(slice.limits.rate, slice.limits.burst, now),
            stats: TenantStats {
                slice: slice.name.clone(),
                ..TenantStats::default()
            },
            slice,
            chan: None,
            flows: FlowTable::default(),
            next_connect_ns: 0,
            throttled_until: 0,
        });
        self.next_uid += 1;
    }

    pub fn tenant_index(&self, uid: u64) -> Option<usize> {
        self.tenants.iter().position(|t| t.uid == uid)
    }

    /// Closes one tenant's channel (the others and the switch stay).
    pub fn close_tenant(&mut self, i: usize, why: String) {
        let t = &mut self.tenants[i];
        if let Some(c) = t.chan.take() {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
        }
        if t.stats.closes.len() < 20 {
            t.stats.closes.push(why);
        }
        t.next_connect_ns = now_ns() + RECONNECT_NS;
    }

    fn connect_tenants(&mut self, now: u64) {
        for i in 0..self.tenants.len() {
            let t = &mut self.tenants[i];
            if t.chan.is_some() || now < t.next_connect_ns {
                continue;
            }
            t.next_connect_ns = now + RECONNECT_NS;
            let Ok(s) = TcpStream::connect_timeout(&t.slice.controller, Duration::from_millis(200))
            else {
                continue;
            };
            let Ok(mut c) = Chan::new(s, self.shared.nodelay) else {
                continue;
            };
            let hello = perfbench::messages::hello(&[self.info.version]).to_bytes(HV_XID);
            c.send(&hello.unwrap_or_default());
            t.chan = Some(c);
            t.stats.connects += 1;
        }
    }

    /// Runs until the switch leaves or the hypervisor stops; returns why it ended.
    fn event_loop(&mut self) -> String {
        loop {
            let now = now_ns();
            if now >= self.shared.stop_ns || perfbench::signals::stop_requested() {
                return "hypervisor stopped".into();
            }
            self.reload_if_changed();
            self.connect_tenants(now);
            self.pending.expire(now);
            let mut fds = vec![(
                self.sw.fd(),
                poll_events(&self.sw, self.sw.buffered() < chan::INBOX_HIGH),
            )];
            let mut wake = now + 50_000_000;
            for t in &self.tenants {
                if let Some(c) = &t.chan {
                    let can_take = now >= t.throttled_until;
                    if !can_take {
                        wake = wake.min(t.throttled_until);
                    }
                    fds.push((
                        c.fd(),
                        poll_events(c, can_take && self.sw.out.pending() < chan::OUTBOX_HIGH),
                    ));
                }
            }
            let timeout_ms = wake.saturating_sub(now).div_ceil(1_000_000) as i32;
            let _ = chan::poll(&fds, timeout_ms);
            if let ReadOutcome::Closed(why) = self.sw.read() {
                return format!("switch: {why}");
            }
            if let Err(why) = self.switch_messages() {
                return why;
            }
            for i in 0..self.tenants.len() {
                self.serve_tenant(i);
            }
            if let Err(why) = self.sw.flush() {
                return format!("switch: {why}");
            }
            for i in 0..self.tenants.len() {
                if let Some(Err(why)) = self.tenants[i].chan.as_mut().map(|c| c.flush()) {
                    self.close_tenant(i, why);
                }
            }
        }
    }

    /// Reads a tenant and handles its messages as far as its token bucket allows.
    fn serve_tenant(&mut self, i: usize) {
        let now = now_ns();
        if now < self.tenants[i].throttled_until {
            return;
        }
        let Some(c) = self.tenants[i].chan.as_mut() else {
            return;
        };
        if let ReadOutcome::Closed(why) = c.read() {
            self.close_tenant(i, why);
            return;
        }
        while self.sw.out.pending() < chan::OUTBOX_HIGH {
            let t = &mut self.tenants[i];
            let Some(c) = t.chan.as_mut() else { return };
            match c.has_msg() {
                Ok(false) => return,
                Ok(true) => {}
                Err(e) => return self.close_tenant(i, format!("garbage from the tenant: {e}")),
            }
            if !t.bucket.take(now) {
                t.throttled_until = t.bucket.next_token_ns(now);
                t.stats.rate_limited_waits += 1;
                return;
            }
            let msg = match c.next_msg() {
                Ok(Some(m)) => m,
                _ => return,
            };
            if let Err(why) = self.tenant_message(i, &msg) {
                return self.close_tenant(i, why);
            }
        }
    }

    fn reload_if_changed(&mut self) {
        let (config, generation) = self.shared.snapshot();
        if generation == self.generation {
            return;
        }
        self.generation = generation;
        self.config = config.clone();
        // Tenants whose slice is gone are closed; the others keep their channel.
        let mut i = 0;
        while i < self.tenants.len() {
            if config
                .slices
                .iter()
                .any(|s| s.name == self.tenants[i].slice.name)
            {
                i += 1;
            } else {
                self.close_tenant(i, "slice removed".into());
                self.tenants.remove(i);
            }
        }
        for slice in &config.slices {
            match self.tenants.iter().position(|t| t.slice.name == slice.name) {
                None => self.add_tenant(slice.clone()),
                Some(k) => self.update_tenant(k, slice.clone()),
            }
        }
        let order = |t: &Tenant| config.slices.iter().position(|s| s.name == t.slice.name);
        self.tenants.sort_by_key(order);
    }

    fn update_tenant(&mut self, k: usize, slice: Slice) {
        let now = now_ns();
        let old = std::mem::replace(&mut self.tenants[k].slice, slice.clone());
        self.tenants[k]
            .bucket
            .reconfigure(slice.limits.rate, slice.limits.burst, now);
        if old.controller != slice.controller {
            self.close_tenant(k, "controller address changed".into());
            self.tenants[k].next_connect_ns = 0;
            return;
        }
        // Ports that appear or disappear are announced as PORT_STATUS add/delete.
        let v = self.info.version;
        let mut notes = Vec::new();
        for p in self.info.ports.iter().map(|d| ofwire::port_no(v, d)) {
            match (old.has_port(p), slice.has_port(p)) {
                (false, true) => notes.extend(self.info.port_status(p, 0)),
                (true, false) => notes.extend(self.info.port_status(p, 1)),
                _ => {}
            }
        }
        if let Some(c) = self.tenants[k].chan.as_mut() {
            for n in notes {
                c.send(&n);
            }
        }
    }

    /// Handles everything complete in the switch's inbox.
    fn switch_messages(&mut self) -> Result<(), String> {
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

    /// Sends to a tenant, counting; PACKET_INs to a tenant that does not keep up are dropped.
    pub fn to_tenant(&mut self, i: usize, msg: &[u8], optional: bool) {
        let t = &mut self.tenants[i];
        let Some(c) = t.chan.as_mut() else { return };
        if optional && c.out.pending() >= chan::OUTBOX_HIGH {
            t.stats.dropped_to_tenant += 1;
            return;
        }
        c.send(msg);
        t.stats.to_tenant_msgs += 1;
    }

    pub fn to_switch(&mut self, msg: &[u8]) {
        self.sw.send(msg);
        self.report.to_switch_msgs += 1;
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
        let Some(p) = self.pending.take(xid, more) else {
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

fn poll_events(c: &Chan, want_read: bool) -> i16 {
    let mut ev = 0;
    if want_read {
        ev |= libc::POLLIN;
    }
    if c.out.pending() > 0 {
        ev |= libc::POLLOUT;
    }
    ev
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
