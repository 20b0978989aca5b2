//! After a run: the threads' results checked (a setup failure aborts with its
//! root cause), then one summary per tenant from whoever sent its probes and
//! whoever saw them arrive.

use crate::dp::{CaptureResult, InjectResult};
use crate::flow_confirm::{self, ConfirmConfig, ConfirmResult};
use crate::record::{self, Arrival, Record};
use crate::run_config::RunConfig;
use crate::summary::{self, LatencyStats, TenantSummary, Window};
use crate::switch::SwitchResult;
use crate::tenant::{Kind, TenantResult, TenantSpec};
use anyhow::Context;

/// A send backlog this large means the peer, not perfbench, set the pace.
const BACKLOG_WARN_BYTES: usize = 256 * 1024;

/// Who sent a tenant's probes (and so holds their send records).
enum Sender {
    Own,
    /// Another process sent the probes; only their arrivals are known here.
    External,
    Switch(usize),
    Injector(usize),
}

/// The results of every party of a run that set up successfully.
pub(super) struct Parties {
    pub tenants: Vec<TenantResult>,
    pub switches: Vec<SwitchResult>,
    pub injectors: Vec<InjectResult>,
    pub capture: Option<CaptureResult>,
}

impl Parties {
    /// The parties' results, or the first setup failure (its root cause).
    pub(super) fn check(
        tenants: Vec<anyhow::Result<TenantResult>>,
        switches: Vec<anyhow::Result<SwitchResult>>,
        injectors: Vec<anyhow::Result<InjectResult>>,
        capture: Option<anyhow::Result<CaptureResult>>,
    ) -> anyhow::Result<Parties> {
        let tenants = root_cause_first(tenants)?;
        let mut checked_switches = Vec::new();
        for r in switches {
            checked_switches.push(r.context("emulated switch")?);
        }
        let mut checked_injectors = Vec::new();
        for r in injectors {
            checked_injectors.push(r.context("injector")?);
        }
        let capture = match capture {
            Some(r) => Some(r.context("capture")?),
            None => None,
        };
        Ok(Parties {
            tenants,
            switches: checked_switches,
            injectors: checked_injectors,
            capture,
        })
    }
}

/// Every tenant's result, or the root cause among their failures, not the
/// tenants that aborted because of it.
fn root_cause_first(
    results: Vec<anyhow::Result<TenantResult>>,
) -> anyhow::Result<Vec<TenantResult>> {
    let mut tenants = Vec::with_capacity(results.len());
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(t) => tenants.push(t),
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        return Ok(tenants);
    }
    let pos = failures
        .iter()
        .position(|e| !format!("{e:#}").contains("another participant"))
        .unwrap_or(0);
    Err(failures.swap_remove(pos))
}

/// What a run's summaries are computed against.
pub(super) struct Measured<'a> {
    pub cfg: &'a RunConfig,
    pub confirm: Option<ConfirmConfig>,
    pub confirmed: &'a [ConfirmResult],
    /// The common start (CLOCK_MONOTONIC ns).
    pub start: u64,
    pub window: Window,
}

/// Per-tenant summaries, every in-window latency, and the records for the CSV.
pub(super) struct Tally {
    pub summaries: Vec<TenantSummary>,
    pub all_lat: Vec<u64>,
    pub csv_sets: Vec<(u8, Vec<Record>)>,
}

/// A tenant's send records and how late the sender was against its schedule.
struct Sent {
    records: Vec<Record>,
    lateness_p50_us: f64,
    lateness_p99_us: f64,
    lateness_max_us: f64,
}

/// Summarizes every tenant, appending what went wrong to `problems`.
pub(super) fn summarize_tenants(
    m: &Measured<'_>,
    parties: &mut Parties,
    problems: &mut Vec<String>,
) -> Tally {
    let mut tally = Tally {
        summaries: Vec::with_capacity(parties.tenants.len()),
        all_lat: Vec::new(),
        csv_sets: Vec::new(),
    };
    for i in 0..parties.tenants.len() {
        let spec = &m.cfg.tenants[i];
        let sender = sender_of(m.cfg, spec, i, &parties.injectors);
        let mut sent = take_sent(sender, spec, i, parties, problems);
        let arrivals = take_arrivals(m.cfg, spec, i, parties);
        merge_arrivals(spec, &mut sent.records, &arrivals, problems);
        let t = &parties.tenants[i];
        let mut s = summarize_one(m, spec, t, &sent, problems);
        if spec.kind == Kind::PacketOut && m.cfg.external_dp {
            mark_measured_elsewhere(&mut s);
        } else {
            if t.max_send_backlog >= BACKLOG_WARN_BYTES {
                problems.push(format!(
                    "tenant {}: the peer did not keep up: up to {} bytes waited in perfbench's send buffer (latency includes that wait)",
                    spec.id, t.max_send_backlog
                ));
            }
            tally.all_lat.extend(
                sent.records
                    .iter()
                    .filter(|r| m.window.contains(r.req_ns))
                    .filter_map(|r| r.latency_ns()),
            );
        }
        tally.summaries.push(s);
        tally.csv_sets.push((spec.version.wire(), sent.records));
    }
    tally
}

/// The problems the emulated switches reported.
pub(super) fn switch_problems(switches: &[SwitchResult], problems: &mut Vec<String>) {
    for s in switches {
        if let Some(a) = &s.aborted {
            problems.push(format!("emulated switch {}: {a}", s.tenant));
        }
    }
}

fn sender_of(cfg: &RunConfig, spec: &TenantSpec, i: usize, injectors: &[InjectResult]) -> Sender {
    match spec.kind {
        Kind::PacketIn if cfg.external_dp => Sender::External,
        Kind::PacketIn if cfg.emulate_switch => Sender::Switch(i),
        Kind::PacketIn => Sender::Injector(
            injectors
                .iter()
                .position(|x| x.tenant == spec.id)
                .unwrap_or(0),
        ),
        _ => Sender::Own,
    }
}

/// Takes the send records out of whoever sent the tenant's probes.
fn take_sent(
    sender: Sender,
    spec: &TenantSpec,
    i: usize,
    parties: &mut Parties,
    problems: &mut Vec<String>,
) -> Sent {
    let t = &mut parties.tenants[i];
    match sender {
        Sender::External => Sent {
            records: record::records_with_gaps(
                &t.arrivals,
                spec.id as u16,
                record::DATA_PACKET,
                spec.size as u16,
            ),
            lateness_p50_us: 0.0,
            lateness_p99_us: 0.0,
            lateness_max_us: 0.0,
        },
        Sender::Own => Sent {
            records: std::mem::take(&mut t.records),
            lateness_p50_us: t.lateness_p50_us,
            lateness_p99_us: t.lateness_p99_us,
            lateness_max_us: t.lateness_max_us,
        },
        Sender::Switch(k) => {
            let s = &mut parties.switches[k];
            Sent {
                records: std::mem::take(&mut s.records),
                lateness_p50_us: s.lateness_p50_us,
                lateness_p99_us: s.lateness_p99_us,
                lateness_max_us: s.lateness_max_us,
            }
        }
        Sender::Injector(k) => {
            let s = &mut parties.injectors[k];
            if s.send_errors > 0 {
                problems.push(format!(
                    "tenant {}: {} injected frames failed to send",
                    spec.id, s.send_errors
                ));
            }
            Sent {
                records: std::mem::take(&mut s.records),
                lateness_p50_us: s.lateness_p50_us,
                lateness_p99_us: s.lateness_p99_us,
                lateness_max_us: s.lateness_max_us,
            }
        }
    }
}

/// Takes the probe arrivals out of whoever saw the tenant's probes arrive.
fn take_arrivals(
    cfg: &RunConfig,
    spec: &TenantSpec,
    i: usize,
    parties: &mut Parties,
) -> Vec<Arrival> {
    match spec.kind {
        Kind::PacketIn if cfg.external_dp => vec![],
        Kind::PacketIn => std::mem::take(&mut parties.tenants[i].arrivals),
        Kind::PacketOut if cfg.emulate_switch => std::mem::take(&mut parties.switches[i].arrivals),
        Kind::PacketOut if cfg.external_dp => vec![],
        Kind::PacketOut => parties
            .capture
            .as_mut()
            .and_then(|c| c.arrivals.remove(&spec.id))
            .unwrap_or_default(),
        _ => vec![],
    }
}

fn merge_arrivals(
    spec: &TenantSpec,
    records: &mut [Record],
    arrivals: &[Arrival],
    problems: &mut Vec<String>,
) {
    if arrivals.is_empty() {
        return;
    }
    let (_, dup, unknown) = record::merge_arrivals(records, arrivals);
    if dup + unknown > 0 {
        problems.push(format!(
            "tenant {}: {dup} duplicate and {unknown} unmatched probe arrivals",
            spec.id
        ));
    }
}

/// The tenant's summary over the window, with its errors, send lateness and
/// (for confirmed flow-mod tenants) flow insertion latency.
fn summarize_one(
    m: &Measured<'_>,
    spec: &TenantSpec,
    t: &TenantResult,
    sent: &Sent,
    problems: &mut Vec<String>,
) -> TenantSummary {
    let w = &m.window;
    let target = spec.schedule.mean_rate(
        (w.start_ns - m.start) as f64 / 1e9,
        (w.end_ns - m.start) as f64 / 1e9,
    );
    let mut s = summary::summarize(spec.id, spec.kind.name(), target, &sent.records, w);
    s.send_lateness_p50_us = sent.lateness_p50_us;
    s.send_lateness_p99_us = sent.lateness_p99_us;
    s.send_lateness_max_us = sent.lateness_max_us;
    s.errors = t.errors;
    s.first_error = t.first_error.clone();
    if let Some(a) = &t.aborted {
        problems.push(format!("tenant {}: {a}", spec.id));
    }
    s.max_send_backlog_bytes = t.max_send_backlog as u64;
    let confirmed = m.confirmed.iter().find(|c| c.tenant == spec.id);
    if let (Some(c), Some(cc)) = (confirmed, m.confirm) {
        let fi = flow_confirm::summarize(c, &cc, &sent.records, w);
        problems.extend(flow_confirm::problems(c, &fi));
        s.flow_insertion = Some(fi);
    }
    s
}

/// PACKET_OUT probes answered at an external data plane: their answers and
/// latency are measured there, not here.
fn mark_measured_elsewhere(s: &mut TenantSummary) {
    s.measured_elsewhere = true;
    s.answered = 0;
    s.lost = 0;
    s.loss_ratio = 0.0;
    s.latency = LatencyStats::default();
}
