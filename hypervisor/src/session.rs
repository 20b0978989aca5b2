//! One switch connection and the tenant channels multiplexed onto it, run by
//! one thread with poll(2): the event loop, tenant connections, and
//! configuration reloads (`switch_setup`, `from_switch` and `tenant` hold
//! the handshake and what each side sends).

use crate::chan::{self, Chan, ReadOutcome};
use crate::config::{Config, Slice};
use crate::limits::{FlowTable, TokenBucket};
use crate::ofwire::{self, SwitchInfo};
use crate::poller::{self, Poller};
use crate::server::Shared;
use crate::switch_setup;
use crate::translate::{BufferMap, OWN_XIDS as HV_XID, PendingMap};
use perfbench::clock::now_ns;
use perfbench::codec::Version;
use serde::Serialize;
use std::net::TcpStream;
use std::sync::Arc;

const RECONNECT_NS: u64 = 1_000_000_000;
const CONNECT_TIMEOUT_NS: u64 = 2_000_000_000;
/// The poller's token for the switch's socket (tenants' are their uids, from 1).
const SWITCH_TOKEN: u64 = 0;

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
    /// PACKET_INs dropped by the slice's packet_in_rate.
    pub packet_ins_limited: u64,
    pub dropped_to_tenant: u64,
    pub flows: usize,
    pub closes: Vec<String>,
}

pub struct Tenant {
    pub uid: u64,
    pub slice: Slice,
    pub chan: Option<Chan>,
    /// A connect in progress and when it is given up.
    pub connecting: Option<(TcpStream, u64)>,
    pub bucket: TokenBucket,
    /// Meters PACKET_INs towards the tenant (`limits.packet_in_rate`).
    pub packet_in_bucket: TokenBucket,
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
    poller: Poller,
    next_uid: u64,
    pub report: SessionReport,
}

/// Runs one switch connection until the switch leaves or the hypervisor stops.
pub fn run(shared: Arc<Shared>, stream: TcpStream) -> SessionReport {
    let setup = switch_setup::handshake(&shared, stream)
        .and_then(|(info, sw)| Ok((info, sw, Poller::new()?)));
    let mut s = match setup {
        Ok((info, sw, poller)) => Session::new(shared, info, sw, poller),
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

impl Session {
    fn new(shared: Arc<Shared>, info: SwitchInfo, sw: Chan, poller: Poller) -> Session {
        let (config, generation) = shared.snapshot();
        let mut s = Session {
            shared,
            report: SessionReport {
                dpid: format!("{:016x}", info.dpid),
                version: info.version.to_string(),
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
            poller,
            next_uid: 1,
        };
        for slice in &config.slices {
            s.add_tenant(slice.clone());
        }
        s
    }

    pub fn version(&self) -> Version {
        self.info.version
    }

    fn add_tenant(&mut self, slice: Slice) {
        let now = now_ns();
        self.tenants.push(Tenant {
            uid: self.next_uid,
            bucket: TokenBucket::new(slice.limits.rate, slice.limits.burst, now),
            packet_in_bucket: TokenBucket::new(
                slice.limits.packet_in_rate,
                slice.limits.packet_in_burst,
                now,
            ),
            stats: TenantStats {
                slice: slice.name.clone(),
                ..TenantStats::default()
            },
            slice,
            chan: None,
            connecting: None,
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
        t.connecting = None;
        if let Some(mut c) = t.chan.take() {
            self.poller.remove(c.fd(), &mut c.interest);
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
        }
        if t.stats.closes.len() < 20 {
            t.stats.closes.push(why);
        }
        t.next_connect_ns = now_ns() + RECONNECT_NS;
    }

    /// Starts connects that are due and completes those that are done.
    fn connect_tenants(&mut self, now: u64) {
        for t in &mut self.tenants {
            if t.chan.is_some() {
                continue;
            }
            if let Some((s, give_up)) = &t.connecting {
                match chan::connect_done(s) {
                    None if now < *give_up => {}
                    Some(Ok(())) => {
                        let (s, _) = t.connecting.take().expect("checked above");
                        if let Ok(mut c) = Chan::new(s, self.shared.nodelay) {
                            let hello = perfbench::messages::hello(&[self.info.version]);
                            c.send(&hello.to_bytes(HV_XID).unwrap_or_default());
                            t.chan = Some(c);
                            t.stats.connects += 1;
                        }
                    }
                    _ => t.connecting = None,
                }
                continue;
            }
            if now >= t.next_connect_ns {
                t.next_connect_ns = now + RECONNECT_NS;
                t.connecting = chan::connect_start(t.slice.controller)
                    .ok()
                    .map(|s| (s, now + CONNECT_TIMEOUT_NS));
            }
        }
    }

    /// Runs until the switch leaves or the hypervisor stops; returns why it ended.
    fn event_loop(&mut self) -> String {
        let mut ready = Vec::new();
        loop {
            let now = now_ns();
            if now >= self.shared.stop_ns || perfbench::signals::stop_requested() {
                return "hypervisor stopped".into();
            }
            self.reload_if_changed();
            self.connect_tenants(now);
            let wake = match self.watch(now) {
                Ok(wake) => wake,
                Err(why) => return why,
            };
            self.poller.wait(wake.saturating_sub(now), &mut ready);
            let is_ready = |token: u64| ready.iter().any(|r| r.token == token && r.readable());
            if is_ready(SWITCH_TOKEN)
                && let ReadOutcome::Closed(why) = self.sw.read()
            {
                return format!("switch: {why}");
            }
            if let Err(why) = self.switch_messages() {
                return why;
            }
            for i in 0..self.tenants.len() {
                let readable = is_ready(self.tenants[i].uid);
                self.serve_tenant(i, readable);
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

    /// Tells the poller what each socket is waiting for; returns when to wake
    /// at the latest (a throttled tenant's next token, a connect to check).
    fn watch(&mut self, now: u64) -> Result<u64, String> {
        let sw_in = self.sw.buffered() < chan::INBOX_HIGH;
        let sw_fd = self.sw.fd();
        let ev = wanted(&self.sw, sw_in);
        self.poller
            .set(sw_fd, SWITCH_TOKEN, &mut self.sw.interest, ev)
            .map_err(|e| format!("epoll: {e}"))?;
        let connecting = self.tenants.iter().any(|t| t.connecting.is_some());
        let mut wake = now + if connecting { 2_000_000 } else { 50_000_000 };
        let room = self.sw.out.pending() < chan::OUTBOX_HIGH;
        for t in &mut self.tenants {
            let Some(c) = t.chan.as_mut() else { continue };
            let can_take = now >= t.throttled_until;
            if !can_take {
                wake = wake.min(t.throttled_until);
            }
            let ev = wanted(c, can_take && room);
            let fd = c.fd();
            if let Err(e) = self.poller.set(fd, t.uid, &mut c.interest, ev) {
                return Err(format!("epoll, tenant {}: {e}", t.slice.name));
            }
        }
        Ok(wake)
    }

    /// Reads a tenant and handles its messages as far as its token bucket allows.
    fn serve_tenant(&mut self, i: usize, readable: bool) {
        let now = now_ns();
        if now < self.tenants[i].throttled_until && !readable {
            return;
        }
        let Some(c) = self.tenants[i].chan.as_mut() else {
            return;
        };
        if readable && let ReadOutcome::Closed(why) = c.read() {
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
        let (t, l) = (&mut self.tenants[k], &slice.limits);
        t.bucket.reconfigure(l.rate, l.burst, now);
        t.packet_in_bucket
            .reconfigure(l.packet_in_rate, l.packet_in_burst, now);
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
}

/// The poller's interest for a channel: input when it may be read, output while bytes wait.
fn wanted(c: &Chan, want_read: bool) -> u32 {
    let mut ev = 0;
    if want_read {
        ev |= poller::IN;
    }
    if c.out.pending() > 0 {
        ev |= poller::OUT;
    }
    ev
}
