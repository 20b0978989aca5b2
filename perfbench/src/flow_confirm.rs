//! Data-plane confirmation of flow setup (OFLOPS-style flow insertion
//! latency): while a flow-mod tenant sends FLOW_MOD *n*, this side injects
//! probe frames of rule *n*'s flow (UDP source port *n*) into the switch port
//! the rule matches on, and times the first one the switch sends back out of
//! it. The latency runs from the FLOW_MOD's send time to that frame's
//! arrival; the BARRIER_REPLY time is reported next to it, because a switch
//! may answer the barrier before the rule forwards anything.

use crate::clock::now_ns;
use crate::probe;
use crate::record::{DATA_PACKET, Record};
use crate::summary::{LatencyStats, Window};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};

/// Hard timeout of the flow-setup rules ([`crate::messages::flow_setup`]): a
/// rule whose UDP source port an earlier rule used this recently may be
/// forwarded by that earlier rule.
const RULE_LIFETIME_NS: u64 = 11_000_000_000;
/// Most probes sent back to back when the rate budget allows.
const BURST: f64 = 32.0;

/// A FLOW_MOD the tenant has written: rule number (= xid) and send time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    pub rule: u32,
    pub sent_ns: u64,
}

/// How confirmation probes are paced.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ConfirmConfig {
    /// One probe per pending rule every this many ns (the latency's resolution).
    pub probe_interval_ns: u64,
    /// Most probe frames per second per tenant (bounds the load on the switch).
    pub max_probe_rate: f64,
    /// A rule that forwards nothing within this time counts as never confirmed.
    pub timeout_ns: u64,
}

/// The fate of one rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Confirmation {
    pub rule: u32,
    pub sent_ns: u64,
    /// Arrival of the first probe the rule forwarded; 0 if none did in time.
    pub confirmed_ns: u64,
    pub probes: u32,
    /// An earlier rule with the same UDP source port may still be installed.
    pub ambiguous: bool,
}

/// What a frame coming back out of the switch meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarded {
    /// The first packet the rule forwarded.
    Confirmed,
    /// Another probe of an already confirmed rule (several were in flight).
    Again,
    /// A probe of a rule that had already timed out.
    Late,
    /// Not a probe of any rule we installed.
    Unknown,
}

/// Pending rules, their probe schedule and the probe-rate budget.
pub struct Tracker {
    cfg: ConfirmConfig,
    rules: Vec<Confirmation>,
    pending: HashMap<u32, usize>,
    /// (index into `rules`, next probe due), in due order: every rule is
    /// re-queued `probe_interval_ns` after its last probe, so the order holds.
    probe_queue: VecDeque<(usize, u64)>,
    /// Indices in FLOW_MOD send order (each tenant sends in order).
    expiry_queue: VecDeque<usize>,
    last_use_of_port: Vec<u64>,
    tokens: f64,
    refilled_ns: u64,
    pub probes_sent: u64,
    /// Most a probe left after its due time (the rate budget or a busy thread delayed it).
    pub max_probe_lateness_ns: u64,
    pub late: u64,
    pub again: u64,
    pub unknown: u64,
}

impl Tracker {
    pub fn new(cfg: ConfirmConfig, now: u64) -> Tracker {
        Tracker {
            cfg,
            rules: Vec::new(),
            pending: HashMap::new(),
            probe_queue: VecDeque::new(),
            expiry_queue: VecDeque::new(),
            last_use_of_port: vec![0; 1 << 16],
            tokens: BURST,
            refilled_ns: now,
            probes_sent: 0,
            max_probe_lateness_ns: 0,
            late: 0,
            again: 0,
            unknown: 0,
        }
    }

    /// A FLOW_MOD was written: probe its flow from now on.
    pub fn add(&mut self, i: Installed, now: u64) {
        let port = i.rule as u16 as usize;
        let last = self.last_use_of_port[port];
        let ambiguous = last != 0 && i.sent_ns < last + RULE_LIFETIME_NS;
        self.last_use_of_port[port] = i.sent_ns.max(1);
        let idx = self.rules.len();
        self.rules.push(Confirmation {
            rule: i.rule,
            sent_ns: i.sent_ns,
            ambiguous,
            ..Confirmation::default()
        });
        // A rule number seen again (after 2^32 rules) replaces the older one.
        self.pending.insert(i.rule, idx);
        self.probe_queue.push_back((idx, now));
        self.expiry_queue.push_back(idx);
    }

    /// The rule whose probe is due now, if the rate budget allows one more.
    pub fn next_probe(&mut self, now: u64) -> Option<u32> {
        self.tokens = (self.tokens
            + now.saturating_sub(self.refilled_ns) as f64 * self.cfg.max_probe_rate / 1e9)
            .min(BURST);
        self.refilled_ns = now;
        while let Some(&(idx, due)) = self.probe_queue.front() {
            if due > now || self.tokens < 1.0 {
                return None;
            }
            self.probe_queue.pop_front();
            let r = &mut self.rules[idx];
            if self.pending.get(&r.rule) != Some(&idx) {
                continue; // confirmed or expired meanwhile
            }
            self.tokens -= 1.0;
            self.max_probe_lateness_ns = self.max_probe_lateness_ns.max(now - due);
            r.probes += 1;
            self.probes_sent += 1;
            self.probe_queue
                .push_back((idx, now + self.cfg.probe_interval_ns));
            return Some(r.rule);
        }
        None
    }

    /// When the earliest queued probe may leave: its due time, or later when
    /// the rate budget has no frame left (None: nothing queued).
    pub fn next_due(&self) -> Option<u64> {
        let (_, due) = *self.probe_queue.front()?;
        let refill_ns = ((1.0 - self.tokens).max(0.0) * 1e9 / self.cfg.max_probe_rate) as u64;
        Some(due.max(self.refilled_ns + refill_ns))
    }

    /// A probe of `rule` came back out of the switch at `rx_ns`.
    pub fn forwarded(&mut self, rule: u32, rx_ns: u64) -> Forwarded {
        if let Some(idx) = self.pending.remove(&rule) {
            self.rules[idx].confirmed_ns = rx_ns;
            return Forwarded::Confirmed;
        }
        let seen = self.rules.iter().rev().find(|r| r.rule == rule);
        let f = match seen {
            Some(r) if r.confirmed_ns != 0 => Forwarded::Again,
            Some(_) => Forwarded::Late,
            None => Forwarded::Unknown,
        };
        match f {
            Forwarded::Again => self.again += 1,
            Forwarded::Late => self.late += 1,
            _ => self.unknown += 1,
        }
        f
    }

    /// Gives up on rules older than the timeout.
    pub fn expire(&mut self, now: u64) {
        while let Some(&idx) = self.expiry_queue.front() {
            let r = self.rules[idx];
            if r.sent_ns + self.cfg.timeout_ns > now {
                break;
            }
            self.expiry_queue.pop_front();
            if self.pending.get(&r.rule) == Some(&idx) {
                self.pending.remove(&r.rule);
            }
        }
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    pub fn into_rules(self) -> Vec<Confirmation> {
        self.rules
    }
}

/// A data-plane port: an AF_PACKET socket at a real switch, or a datagram
/// socket to the emulated switch.
pub trait FramePort: Send {
    fn send_frame(&self, frame: &[u8]) -> std::io::Result<()>;
    /// One frame the switch sent out of the port; `Ok(None)` after `timeout_ns` without one.
    fn recv_frame(&self, buf: &mut [u8], timeout_ns: u64) -> std::io::Result<Option<usize>>;
}

impl FramePort for crate::dp::RawSocket {
    fn send_frame(&self, frame: &[u8]) -> std::io::Result<()> {
        self.send(frame)
    }
    fn recv_frame(&self, buf: &mut [u8], timeout_ns: u64) -> std::io::Result<Option<usize>> {
        self.recv_incoming(buf, timeout_ns)
    }
}

#[derive(Debug, Default)]
pub struct ConfirmResult {
    pub tenant: u32,
    pub rules: Vec<Confirmation>,
    pub probes_sent: u64,
    pub max_probe_lateness_ns: u64,
    pub send_errors: u64,
    pub recv_errors: u64,
    /// Forwarded probes of rules already confirmed / already timed out / unknown.
    pub again: u64,
    pub late: u64,
    pub unknown: u64,
}

/// Probes the rules of `tenant` that arrive on `installed` until the tenant
/// is done (its sender dropped) and every rule is confirmed or timed out.
pub fn confirm(
    port: &dyn FramePort,
    tenant: u32,
    installed: Receiver<Installed>,
    cfg: ConfirmConfig,
    frame_len: usize,
) -> ConfirmResult {
    crate::clock::tighten_timer_slack();
    let mut t = Tracker::new(cfg, now_ns());
    let mut frame = probe::template(tenant, frame_len);
    let mut buf = vec![0u8; 65_536];
    let mut res = ConfirmResult {
        tenant,
        ..ConfirmResult::default()
    };
    let mut tenant_done = false;
    loop {
        if t.pending() == 0 && !tenant_done {
            // Nothing to probe: sleep until the tenant writes a FLOW_MOD.
            match installed.recv_timeout(std::time::Duration::from_millis(50)) {
                Ok(i) => t.add(i, now_ns()),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => tenant_done = true,
            }
        }
        let now = now_ns();
        loop {
            match installed.try_recv() {
                Ok(i) => t.add(i, now),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    tenant_done = true;
                    break;
                }
            }
        }
        t.expire(now);
        if tenant_done && t.pending() == 0 {
            break;
        }
        while let Some(rule) = t.next_probe(now) {
            probe::set_udp_src_port(&mut frame, rule as u16);
            probe::stamp(&mut frame, rule as u64, now_ns());
            if port.send_frame(&frame).is_err() {
                res.send_errors += 1;
            }
        }
        // Wait for a forwarded frame, at most until the next probe is due;
        // new FLOW_MODs are picked up at least every 100 µs.
        let wait = t.next_due().map_or(100_000, |d| d.saturating_sub(now_ns()));
        match port.recv_frame(&mut buf, wait.clamp(1_000, 100_000)) {
            Ok(Some(n)) => {
                let rx = now_ns();
                match probe::parse(&buf[..n]) {
                    Some(p) if p.tenant == tenant => {
                        t.forwarded(p.seq as u32, rx);
                    }
                    _ => {} // another tenant's probe or unrelated traffic
                }
            }
            Ok(None) => {}
            Err(_) => res.recv_errors += 1,
        }
    }
    res.probes_sent = t.probes_sent;
    res.max_probe_lateness_ns = t.max_probe_lateness_ns;
    (res.again, res.late, res.unknown) = (t.again, t.late, t.unknown);
    res.rules = t.into_rules();
    res
}

/// Flow insertion latency of one tenant's rules sent inside the window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowInsertionSummary {
    /// FLOW_MODs sent in the window.
    pub rules: u64,
    /// Rules that forwarded a probe within the timeout.
    pub confirmed: u64,
    /// Rules that forwarded nothing within `confirm_timeout_s`.
    pub unconfirmed: u64,
    /// Rules left out because an earlier rule with the same UDP source port
    /// (rule number mod 65536) could still be installed (10 s hard timeout).
    pub ambiguous: u64,
    /// FLOW_MOD sent → first probe forwarded by the rule.
    pub latency: LatencyStats,
    /// Of the confirmed rules: BARRIER_REPLY read before / after the first forwarded probe.
    pub barrier_before_dataplane: u64,
    pub barrier_after_dataplane: u64,
    pub probes_sent: u64,
    pub probe_interval_us: f64,
    /// Most a probe left after its due time: the latency's resolution is the
    /// interval plus this (raise --probe-rate or lower the rule rate if it is large).
    pub max_probe_lateness_us: f64,
    pub max_probe_rate: f64,
    pub confirm_timeout_s: f64,
}

/// Summarises `c` over `w`; `barrier` holds the tenant's FLOW_MOD records (index = rule).
pub fn summarize(
    c: &ConfirmResult,
    cfg: &ConfirmConfig,
    barrier: &[Record],
    w: &Window,
) -> FlowInsertionSummary {
    let mut s = FlowInsertionSummary {
        probes_sent: c.probes_sent,
        probe_interval_us: cfg.probe_interval_ns as f64 / 1e3,
        max_probe_lateness_us: c.max_probe_lateness_ns as f64 / 1e3,
        max_probe_rate: cfg.max_probe_rate,
        confirm_timeout_s: cfg.timeout_ns as f64 / 1e9,
        ..FlowInsertionSummary::default()
    };
    let mut lat = Vec::new();
    for r in c.rules.iter().filter(|r| w.contains(r.sent_ns)) {
        s.rules += 1;
        if r.ambiguous {
            s.ambiguous += 1;
        } else if r.confirmed_ns == 0 {
            s.unconfirmed += 1;
        } else {
            s.confirmed += 1;
            lat.push(r.confirmed_ns.saturating_sub(r.sent_ns));
            match barrier.get(r.rule as usize).filter(|b| b.answered()) {
                Some(b) if b.resp_ns <= r.confirmed_ns => s.barrier_before_dataplane += 1,
                Some(_) => s.barrier_after_dataplane += 1,
                None => {}
            }
        }
    }
    s.latency = LatencyStats::from_ns(lat);
    s
}

/// CSV rows in perfbench's record format: FLOW_MOD → first forwarded DATA_PACKET.
pub fn records(c: &ConfirmResult, flow_mod_type: u8, frame_len: usize) -> Vec<Record> {
    c.rules
        .iter()
        .map(|r| Record {
            req_ns: r.sent_ns,
            resp_ns: r.confirmed_ns,
            xid: r.rule,
            conn: c.tenant as u16,
            req_type: flow_mod_type,
            resp_type: if r.confirmed_ns != 0 { DATA_PACKET } else { 0 },
            req_size: 0,
            resp_size: if r.confirmed_ns != 0 {
                frame_len.max(probe::MIN_FRAME) as u16
            } else {
                0
            },
        })
        .collect()
}

/// Writes every rule of the confirmed tenants as a CSV row (perfbench's record columns).
pub fn write_csv(
    path: &std::path::Path,
    confirmed: &[ConfirmResult],
    tenants: &[crate::tenant::TenantSpec],
) -> anyhow::Result<u64> {
    let sets: Vec<(u8, Vec<Record>)> = confirmed
        .iter()
        .filter_map(|c| {
            let t = tenants.iter().find(|t| t.id == c.tenant)?;
            let flow_mod = crate::messages::flow_setup(t.version, 0, t.out_port);
            let size = flow_mod.to_bytes(0).map_or(0, |b| b.len() as u16);
            let mut recs = records(c, crate::codec::types::FLOW_MOD, t.size);
            for r in &mut recs {
                r.req_size = size; // every rule's FLOW_MOD has the same length
            }
            Some((t.version.wire(), recs))
        })
        .collect();
    let refs: Vec<(u8, &[Record])> = sets.iter().map(|(v, r)| (*v, r.as_slice())).collect();
    crate::record::write_csv(path, &refs)
}

/// What a report should point out about one tenant's confirmation.
pub fn problems(c: &ConfirmResult, s: &FlowInsertionSummary) -> Vec<String> {
    let mut p = Vec::new();
    let t = c.tenant;
    if c.send_errors + c.recv_errors > 0 {
        p.push(format!(
            "tenant {t}: {} confirmation probes failed to send, {} receive errors",
            c.send_errors, c.recv_errors
        ));
    }
    if s.ambiguous > 0 {
        p.push(format!(
            "tenant {t}: {} rules reused a UDP source port (rule number mod 65536) within the 10 s hard timeout and are not in the flow insertion figures",
            s.ambiguous
        ));
    }
    if s.unconfirmed > 0 {
        p.push(format!(
            "tenant {t}: {} of {} rules forwarded no probe within {} s",
            s.unconfirmed, s.rules, s.confirm_timeout_s
        ));
    }
    p
}

pub mod lanes;

#[cfg(test)]
mod tests;
