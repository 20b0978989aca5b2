//! One measurement run: tenant controllers plus whatever produces and
//! receives their data-plane side (emulated switches in this process, or
//! AF_PACKET injection/capture at a real switch), a common start, CPU
//! sampling of the system under test, and the merged records, per-tenant
//! summaries, CSV and JSON.
//!
//! The steps: bind the endpoints and plan the parties here, start and join
//! every thread in `threads`, check and summarize their results in `collect`,
//! then build the report and write its files here.

mod collect;
mod threads;

use crate::clock::{self, now_ns};
use crate::cpu::CpuUsage;
use crate::flow_confirm::{self, ConfirmConfig, ConfirmResult, lanes};
use crate::record::{self, Record};
use crate::start_sync::StartSync;
use crate::summary::{LatencyStats, TenantSummary, Window};
use crate::tenant::{Kind, Timing};
use anyhow::{Context, bail};
use collect::{Measured, Parties};
use std::net::{SocketAddr, TcpListener};
use threads::{Confirmation, Controllers};

pub use crate::report::{Params, RunReport, TenantParams, Totals};
pub use crate::run_config::{Endpoints, RunConfig};

pub fn pin_current_thread(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity on the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn join<T>(h: std::thread::ScopedJoinHandle<'_, anyhow::Result<T>>) -> anyhow::Result<T> {
    h.join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("thread panicked")))
}

/// Runs one configuration and returns its report (files written if `out_dir` is set).
pub fn run(cfg: &RunConfig) -> anyhow::Result<RunReport> {
    run_with(cfg, None)
}

/// [`run`], with the flow-mod tenants' rules confirmed in the data plane
/// (flow insertion latency, see [`crate::flow_confirm`]) when `confirm` is set.
pub fn run_with(cfg: &RunConfig, confirm: Option<ConfirmConfig>) -> anyhow::Result<RunReport> {
    crate::run_config::validate(cfg)?;
    let mut lanes = open_lanes(cfg, confirm)?;
    let (installed_tx, installed_rx) = lanes::channels(&mut lanes);
    let started_unix_s = clock::unix_time_s();
    let bound = Bound::endpoints(cfg)?;
    let plan = Plan::new(cfg);
    let sync = StartSync::new(plan.parties(cfg));
    let controllers = Controllers {
        listeners: bound.listeners,
        addrs: &bound.addrs,
    };
    let confirmation = Confirmation {
        config: confirm,
        lanes: &lanes,
        installed_tx,
        installed_rx,
    };
    let outcome = threads::run_all(cfg, &plan, &sync, controllers, confirmation);

    let start = sync.start_ns();
    // Setup failures abort the run with the first root cause.
    let mut parties = Parties::check(
        outcome.tenants,
        outcome.switches,
        outcome.injectors,
        outcome.capture,
    )?;
    if start == 0 {
        bail!("the run never started");
    }
    let measured = Measured {
        cfg,
        confirm,
        confirmed: &outcome.confirmed,
        start,
        window: Window::trimmed(start, cfg.duration_s, cfg.warmup_s, cfg.cooldown_s),
    };
    let mut problems = Vec::new();
    let tally = collect::summarize_tenants(&measured, &mut parties, &mut problems);
    collect::switch_problems(&parties.switches, &mut problems);
    let parameters = params(cfg, bound.mode, &bound.addrs);
    let head = ReportHead {
        label: cfg.label.clone(),
        started_unix_s,
        parameters,
        window: measured.window,
    };
    let mut report = assemble(head, tally.summaries, tally.all_lat, outcome.cpu, problems);
    write_files(cfg, &mut report, &tally.csv_sets, &outcome.confirmed)?;
    Ok(report)
}

/// The flow-confirmation lanes, opened before anything starts (none without `confirm`).
fn open_lanes(
    cfg: &RunConfig,
    confirm: Option<ConfirmConfig>,
) -> anyhow::Result<Vec<Option<lanes::Lane>>> {
    match confirm {
        Some(_) => lanes::open(
            &cfg.tenants,
            cfg.emulate_switch,
            cfg.inject_iface.as_deref(),
        ),
        None => Ok(vec![]),
    }
}

/// What a report says about the run as a whole.
struct ReportHead {
    label: String,
    started_unix_s: f64,
    parameters: Params,
    window: Window,
}

fn assemble(
    head: ReportHead,
    summaries: Vec<TenantSummary>,
    all_lat: Vec<u64>,
    cpu: Vec<CpuUsage>,
    problems: Vec<String>,
) -> RunReport {
    RunReport {
        label: head.label,
        tool: format!("perfbench {}", env!("CARGO_PKG_VERSION")),
        started_unix_s: head.started_unix_s,
        clock: "CLOCK_MONOTONIC",
        clock_resolution_ns: clock::resolution_ns(),
        parameters: head.parameters,
        window: head.window,
        window_seconds: head.window.seconds(),
        totals: totals(&summaries, all_lat),
        tenants: summaries,
        cpu,
        problems,
        records_csv: None,
        records_written: 0,
        flow_insertion_csv: None,
    }
}

/// Where the tenants' controllers are: listeners bound here, or the
/// addresses to connect to.
struct Bound {
    listeners: Vec<Option<TcpListener>>,
    addrs: Vec<SocketAddr>,
    mode: &'static str,
}

impl Bound {
    fn endpoints(cfg: &RunConfig) -> anyhow::Result<Bound> {
        let n = cfg.tenants.len();
        match &cfg.endpoints {
            Endpoints::Listen(a) => {
                let ls = a
                    .iter()
                    .map(|x| crate::conn::bind(*x))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let real: Vec<SocketAddr> = ls
                    .iter()
                    .map(|l| l.local_addr())
                    .collect::<Result<_, _>>()?;
                if cfg.announce {
                    for (i, a) in real.iter().enumerate() {
                        eprintln!("perfbench: tenant {} listening on {a}", cfg.tenants[i].id);
                    }
                }
                Ok(Bound {
                    listeners: ls.into_iter().map(Some).collect(),
                    addrs: real,
                    mode: "listen",
                })
            }
            Endpoints::Connect(a) => Ok(Bound {
                listeners: (0..n).map(|_| None).collect(),
                addrs: a.clone(),
                mode: "connect",
            }),
        }
    }
}

/// Who takes part in a run besides the tenants, and its timing.
struct Plan {
    /// Emulated switches: one per tenant, for the first `switch_count` tenants.
    switch_count: usize,
    /// Tenants whose probes are injected at a real switch (AF_PACKET).
    injected: Vec<usize>,
    /// Whether PACKET_OUT probes are captured at a real switch.
    capture: bool,
    timing: Timing,
}

impl Plan {
    fn new(cfg: &RunConfig) -> Plan {
        let n = cfg.tenants.len();
        let injected: Vec<usize> = if cfg.inject_iface.is_some() && !cfg.emulate_switch {
            (0..n)
                .filter(|&i| cfg.tenants[i].kind == Kind::PacketIn)
                .collect()
        } else {
            vec![]
        };
        let capture = cfg.capture_iface.is_some()
            && !cfg.emulate_switch
            && cfg.tenants.iter().any(|t| t.kind == Kind::PacketOut);
        Plan {
            switch_count: if cfg.emulate_switch { n } else { 0 },
            injected,
            capture,
            timing: Timing {
                duration_ns: (cfg.duration_s * 1e9) as u64,
                drain_ns: (cfg.drain_s * 1e9) as u64,
                setup_deadline_ns: now_ns() + (cfg.setup_timeout_s * 1e9) as u64,
            },
        }
    }

    /// The parties of the common start. Emulated switches serve from their
    /// HELLO on and only read the common start.
    fn parties(&self, cfg: &RunConfig) -> usize {
        cfg.tenants.len() + self.injected.len() + self.capture as usize
    }
}

fn totals(summaries: &[TenantSummary], all_lat: Vec<u64>) -> Totals {
    Totals {
        tenants: summaries.len(),
        sent: summaries.iter().map(|s| s.sent).sum(),
        answered: summaries.iter().map(|s| s.answered).sum(),
        lost: summaries.iter().map(|s| s.lost).sum(),
        achieved_rate: summaries.iter().map(|s| s.achieved_rate).sum(),
        target_rate: summaries.iter().map(|s| s.target_rate).sum(),
        latency: LatencyStats::from_ns(all_lat),
    }
}

fn params(cfg: &RunConfig, mode: &'static str, addrs: &[SocketAddr]) -> Params {
    Params {
        duration_s: cfg.duration_s,
        warmup_s: cfg.warmup_s,
        cooldown_s: cfg.cooldown_s,
        drain_s: cfg.drain_s,
        mode,
        emulate_switch: cfg.emulate_switch,
        inject_iface: cfg.inject_iface.clone(),
        capture_iface: cfg.capture_iface.clone(),
        external_dp: cfg.external_dp,
        cpu_pids: cfg.cpu_pids.clone(),
        tenants: cfg
            .tenants
            .iter()
            .zip(addrs)
            .map(|(t, a)| TenantParams {
                id: t.id,
                kind: t.kind,
                version: t.version,
                nodelay: t.nodelay,
                schedule: t.schedule.steps().to_vec(),
                size: t.size,
                endpoint: a.to_string(),
            })
            .collect(),
    }
}

/// Writes records.csv, flow_insertion.csv and summary.json to `out_dir`, if set.
fn write_files(
    cfg: &RunConfig,
    report: &mut RunReport,
    csv_sets: &[(u8, Vec<Record>)],
    confirmed: &[ConfirmResult],
) -> anyhow::Result<()> {
    let Some(dir) = &cfg.out_dir else {
        return Ok(());
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output folder {}", dir.display()))?;
    if cfg.write_records {
        let p = dir.join("records.csv");
        let sets: Vec<(u8, &[Record])> = csv_sets.iter().map(|(v, r)| (*v, r.as_slice())).collect();
        report.records_written = record::write_csv(&p, &sets)?;
        report.records_csv = Some(p.display().to_string());
        if !confirmed.is_empty() {
            let p = dir.join("flow_insertion.csv");
            flow_confirm::write_csv(&p, confirmed, &cfg.tenants)?;
            report.flow_insertion_csv = Some(p.display().to_string());
        }
    }
    let p = dir.join("summary.json");
    std::fs::write(&p, serde_json::to_vec_pretty(&report)?)
        .with_context(|| format!("cannot write {}", p.display()))?;
    Ok(())
}
