//! One measurement run: tenant controllers plus whatever produces and
//! receives their data-plane side (emulated switches in this process, or
//! AF_PACKET injection/capture at a real switch), a common start, CPU
//! sampling of the system under test, and the merged records, per-tenant
//! summaries, CSV and JSON.

use crate::clock::{self, now_ns};
use crate::cpu;
use crate::dp;
use crate::flow_confirm::{self, ConfirmConfig, ConfirmResult, lanes};
use crate::record::{self, Arrival, Record};
use crate::start_sync::StartSync;
use crate::summary::{self, LatencyStats, Window};
use crate::switch::{self, SwitchSpec, SwitchTiming};
use crate::tenant::{self, Endpoint, Kind, Timing};
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// A send backlog this large means the peer, not perfbench, set the pace.
const BACKLOG_WARN_BYTES: usize = 256 * 1024;

enum Sender {
    Own,
    /// Another process sent the probes; only their arrivals are known here.
    External,
    Switch(usize),
    Injector(usize),
}

/// Runs one configuration and returns its report (files written if `out_dir` is set).
pub fn run(cfg: &RunConfig) -> anyhow::Result<RunReport> {
    run_with(cfg, None)
}

/// [`run`], with the flow-mod tenants' rules confirmed in the data plane
/// (flow insertion latency, see [`crate::flow_confirm`]) when `confirm` is set.
pub fn run_with(cfg: &RunConfig, confirm: Option<ConfirmConfig>) -> anyhow::Result<RunReport> {
    crate::run_config::validate(cfg)?;
    let mut lanes = match confirm {
        Some(_) => lanes::open(
            &cfg.tenants,
            cfg.emulate_switch,
            cfg.inject_iface.as_deref(),
        )?,
        None => vec![],
    };
    let (mut installed_tx, installed_rx) = lanes::channels(&mut lanes);
    let stop_forwarders = AtomicBool::new(false);
    let started_unix_s = clock::unix_time_s();
    let n = cfg.tenants.len();
    let (listeners, addrs, mode) = match &cfg.endpoints {
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
            (ls.into_iter().map(Some).collect::<Vec<_>>(), real, "listen")
        }
        Endpoints::Connect(a) => ((0..n).map(|_| None).collect(), a.clone(), "connect"),
    };
    let switch_count = if cfg.emulate_switch { n } else { 0 };
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
    // Emulated switches serve from their HELLO on and only read the common start.
    let parties = n + injected.len() + capture as usize;
    let sync = StartSync::new(parties);
    let duration_ns = (cfg.duration_s * 1e9) as u64;
    let drain_ns = (cfg.drain_s * 1e9) as u64;
    let setup_deadline_ns = now_ns() + (cfg.setup_timeout_s * 1e9) as u64;
    let timing = Timing {
        duration_ns,
        drain_ns,
        setup_deadline_ns,
    };

    let (tenant_results, switch_results, inject_results, capture_result, cpu, confirmed) =
        std::thread::scope(|sc| {
            let sync = &sync;
            let probers = match confirm {
                Some(c) => lanes::spawn(sc, &lanes, installed_rx, c, &stop_forwarders),
                None => vec![],
            };
            let tenant_h: Vec<_> = cfg
                .tenants
                .iter()
                .cloned()
                .zip(listeners)
                .zip(addrs.iter().copied())
                .enumerate()
                .map(|(i, ((spec, l), a))| {
                    let installed = installed_tx.get_mut(i).and_then(Option::take);
                    let ep = match l {
                        Some(l) => Endpoint::Listen(l),
                        None => Endpoint::Connect(a),
                    };
                    let pin = cfg.pin_tenants;
                    std::thread::Builder::new()
                        .name(format!("tenant-{}", spec.id))
                        .spawn_scoped(sc, move || {
                            if let Some(c) = pin {
                                pin_current_thread(c);
                            }
                            tenant::run_confirmed(spec, ep, sync, timing, installed)
                        })
                        .expect("spawn tenant thread")
                })
                .collect();
            let switch_h: Vec<_> = (0..switch_count)
                .map(|i| {
                    let t = &cfg.tenants[i];
                    let spec = SwitchSpec {
                        tenant: t.id,
                        dpid: t.id as u64 + 1,
                        versions: vec![t.version],
                        nports: 2,
                        packet_in: (t.kind == Kind::PacketIn).then(|| t.schedule.clone()),
                        in_port: 1,
                        frame_len: t.size,
                        nodelay: true,
                    };
                    let addr = addrs[i];
                    let rules = lanes
                        .get(i)
                        .and_then(|l| l.as_ref()?.emulated.as_ref())
                        .map(|(_, r)| r.clone());
                    let pin = cfg.pin_switches;
                    let st = SwitchTiming {
                        setup_deadline_ns,
                        duration_ns,
                        drain_ns: drain_ns + 200_000_000,
                    };
                    std::thread::Builder::new()
                        .name(format!("switch-{}", t.id))
                        .spawn_scoped(sc, move || {
                            if let Some(c) = pin {
                                pin_current_thread(c);
                            }
                            let s = crate::conn::connect_until(addr, setup_deadline_ns)?;
                            let at = switch::StartAt::Common(sync);
                            switch::run_with_rules(spec, s, at, st, rules)
                        })
                        .expect("spawn switch thread")
                })
                .collect();
            let inject_h: Vec<_> = injected
                .iter()
                .map(|&i| {
                    let t = &cfg.tenants[i];
                    let iface = cfg.inject_iface.clone().unwrap_or_default();
                    let (id, sch, size) = (t.id, t.schedule.clone(), t.size);
                    sc.spawn(move || dp::inject(&iface, id, sch, size, duration_ns, sync))
                })
                .collect();
            let capture_h = capture.then(|| {
                let iface = cfg.capture_iface.clone().unwrap_or_default();
                sc.spawn(move || dp::capture(&iface, duration_ns, drain_ns + 100_000_000, sync))
            });
            // Sample the system under test's CPU over the measured window.
            let mut cpu = Vec::new();
            if !cfg.cpu_pids.is_empty() {
                while sync.start_ns() == 0 && !tenant_h.iter().all(|h| h.is_finished()) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                if sync.start_ns() != 0 {
                    let w = Window::trimmed(
                        sync.start_ns(),
                        cfg.duration_s,
                        cfg.warmup_s,
                        cfg.cooldown_s,
                    );
                    cpu = cpu::monitor(cfg.cpu_pids.clone(), w.start_ns, w.end_ns)
                        .join()
                        .unwrap_or_default();
                }
            }
            (
                tenant_h.into_iter().map(join).collect::<Vec<_>>(),
                switch_h.into_iter().map(join).collect::<Vec<_>>(),
                inject_h.into_iter().map(join).collect::<Vec<_>>(),
                capture_h.map(join),
                cpu,
                {
                    // The probers end once their tenants have and every rule is settled.
                    let c: Vec<ConfirmResult> =
                        probers.into_iter().filter_map(|h| h.join().ok()).collect();
                    stop_forwarders.store(true, Ordering::Release);
                    c
                },
            )
        });

    let start = sync.start_ns();
    let mut problems = Vec::new();
    // Setup failures abort the run with the first root cause.
    let mut tenants = Vec::with_capacity(n);
    let mut failures = Vec::new();
    for r in tenant_results {
        match r {
            Ok(t) => tenants.push(t),
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        // Report the root cause, not the tenants that aborted because of it.
        let pos = failures
            .iter()
            .position(|e| !format!("{e:#}").contains("another participant"))
            .unwrap_or(0);
        return Err(failures.swap_remove(pos));
    }
    let mut switches = Vec::new();
    for r in switch_results {
        switches.push(r.context("emulated switch")?);
    }
    let mut injectors = Vec::new();
    for r in inject_results {
        injectors.push(r.context("injector")?);
    }
    let mut capture = match capture_result {
        Some(r) => Some(r.context("capture")?),
        None => None,
    };
    if start == 0 {
        bail!("the run never started");
    }
    let window = Window::trimmed(start, cfg.duration_s, cfg.warmup_s, cfg.cooldown_s);

    let mut summaries = Vec::with_capacity(n);
    let mut all_lat: Vec<u64> = Vec::new();
    let mut csv_sets: Vec<(u8, Vec<Record>)> = Vec::new();
    for (i, t) in tenants.iter_mut().enumerate() {
        let spec = &cfg.tenants[i];
        let sender = match spec.kind {
            Kind::PacketIn if cfg.external_dp => Sender::External,
            Kind::PacketIn if cfg.emulate_switch => Sender::Switch(i),
            Kind::PacketIn => Sender::Injector(
                injectors
                    .iter()
                    .position(|x| x.tenant == spec.id)
                    .unwrap_or(0),
            ),
            _ => Sender::Own,
        };
        let (mut recs, lat50, lat99, latmax) = match sender {
            Sender::External => (
                record::records_with_gaps(
                    &t.arrivals,
                    spec.id as u16,
                    record::DATA_PACKET,
                    spec.size as u16,
                ),
                0.0,
                0.0,
                0.0,
            ),
            Sender::Own => (
                std::mem::take(&mut t.records),
                t.lateness_p50_us,
                t.lateness_p99_us,
                t.lateness_max_us,
            ),
            Sender::Switch(k) => {
                let s = &mut switches[k];
                (
                    std::mem::take(&mut s.records),
                    s.lateness_p50_us,
                    s.lateness_p99_us,
                    s.lateness_max_us,
                )
            }
            Sender::Injector(k) => {
                let s = &mut injectors[k];
                if s.send_errors > 0 {
                    problems.push(format!(
                        "tenant {}: {} injected frames failed to send",
                        spec.id, s.send_errors
                    ));
                }
                (
                    std::mem::take(&mut s.records),
                    s.lateness_p50_us,
                    s.lateness_p99_us,
                    s.lateness_max_us,
                )
            }
        };
        let arrivals: Vec<Arrival> = match spec.kind {
            Kind::PacketIn if cfg.external_dp => vec![],
            Kind::PacketIn => std::mem::take(&mut t.arrivals),
            Kind::PacketOut if cfg.emulate_switch => std::mem::take(&mut switches[i].arrivals),
            Kind::PacketOut if cfg.external_dp => vec![],
            Kind::PacketOut => capture
                .as_mut()
                .and_then(|c| c.arrivals.remove(&spec.id))
                .unwrap_or_default(),
            _ => vec![],
        };
        if !arrivals.is_empty() {
            let (_, dup, unknown) = record::merge_arrivals(&mut recs, &arrivals);
            if dup + unknown > 0 {
                problems.push(format!(
                    "tenant {}: {dup} duplicate and {unknown} unmatched probe arrivals",
                    spec.id
                ));
            }
        }
        let target = spec.schedule.mean_rate(
            (window.start_ns - start) as f64 / 1e9,
            (window.end_ns - start) as f64 / 1e9,
        );
        let mut s = summary::summarize(spec.id, spec.kind.name(), target, &recs, &window);
        s.send_lateness_p50_us = lat50;
        s.send_lateness_p99_us = lat99;
        s.send_lateness_max_us = latmax;
        s.errors = t.errors;
        s.first_error = t.first_error.clone();
        if let Some(a) = &t.aborted {
            problems.push(format!("tenant {}: {a}", spec.id));
        }
        s.max_send_backlog_bytes = t.max_send_backlog as u64;
        if let (Some(c), Some(cc)) = (confirmed.iter().find(|c| c.tenant == spec.id), confirm) {
            let fi = flow_confirm::summarize(c, &cc, &recs, &window);
            problems.extend(flow_confirm::problems(c, &fi));
            s.flow_insertion = Some(fi);
        }
        if spec.kind == Kind::PacketOut && cfg.external_dp {
            s.measured_elsewhere = true;
            s.answered = 0;
            s.lost = 0;
            s.loss_ratio = 0.0;
            s.latency = LatencyStats::default();
            summaries.push(s);
            csv_sets.push((spec.version.wire(), recs));
            continue;
        }
        if t.max_send_backlog >= BACKLOG_WARN_BYTES {
            problems.push(format!(
                "tenant {}: the peer did not keep up: up to {} bytes waited in perfbench's send buffer (latency includes that wait)",
                spec.id, t.max_send_backlog
            ));
        }
        all_lat.extend(
            recs.iter()
                .filter(|r| window.contains(r.req_ns))
                .filter_map(|r| r.latency_ns()),
        );
        summaries.push(s);
        csv_sets.push((spec.version.wire(), recs));
    }
    for s in &switches {
        if let Some(a) = &s.aborted {
            problems.push(format!("emulated switch {}: {a}", s.tenant));
        }
    }
    let totals = Totals {
        tenants: n,
        sent: summaries.iter().map(|s| s.sent).sum(),
        answered: summaries.iter().map(|s| s.answered).sum(),
        lost: summaries.iter().map(|s| s.lost).sum(),
        achieved_rate: summaries.iter().map(|s| s.achieved_rate).sum(),
        target_rate: summaries.iter().map(|s| s.target_rate).sum(),
        latency: LatencyStats::from_ns(all_lat),
    };
    let params = Params {
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
            .zip(&addrs)
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
    };
    let mut report = RunReport {
        label: cfg.label.clone(),
        tool: format!("perfbench {}", env!("CARGO_PKG_VERSION")),
        started_unix_s,
        clock: "CLOCK_MONOTONIC",
        clock_resolution_ns: clock::resolution_ns(),
        parameters: params,
        window,
        window_seconds: window.seconds(),
        tenants: summaries,
        totals,
        cpu,
        problems,
        records_csv: None,
        records_written: 0,
        flow_insertion_csv: None,
    };
    if let Some(dir) = &cfg.out_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create output folder {}", dir.display()))?;
        if cfg.write_records {
            let p = dir.join("records.csv");
            let sets: Vec<(u8, &[Record])> =
                csv_sets.iter().map(|(v, r)| (*v, r.as_slice())).collect();
            report.records_written = record::write_csv(&p, &sets)?;
            report.records_csv = Some(p.display().to_string());
            if !confirmed.is_empty() {
                let p = dir.join("flow_insertion.csv");
                flow_confirm::write_csv(&p, &confirmed, &cfg.tenants)?;
                report.flow_insertion_csv = Some(p.display().to_string());
            }
        }
        let p = dir.join("summary.json");
        std::fs::write(&p, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(report)
}
