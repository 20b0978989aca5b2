//! `perfbench bench`: measures the tool's own goal figures on loopback with
//! emulated switches in the same process — echo round trips per second with
//! every latency recorded, rate accuracy from 1k to 200k messages/s,
//! timestamp resolution, and the emulated PACKET_IN and PACKET_OUT paths.

use crate::clock;
use crate::codec::Version;
use crate::run::{self, Endpoints, RunConfig, RunReport};
use crate::schedule::Schedule;
use crate::tenant::{Kind, TenantSpec};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub duration_s: f64,
    pub warmup_s: f64,
    pub cooldown_s: f64,
    pub version: Version,
    pub out: Option<PathBuf>,
    pub quick: bool,
    /// CPUs for the tenant and the emulated switch threads.
    pub tenant_cpu: usize,
    pub switch_cpu: usize,
}

#[derive(Debug, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub kind: String,
    pub tenants: usize,
    pub target_rate: f64,
    pub achieved_rate: f64,
    pub rate_error_pct: f64,
    pub sent: u64,
    pub answered: u64,
    pub lost: u64,
    pub every_latency_recorded: bool,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub send_lateness_p99_us: f64,
    pub tenant_cpu: usize,
    pub switch_cpu: usize,
    pub problems: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct TimestampCheck {
    pub clock_getres_ns: u64,
    pub min_step_ns: u64,
    pub median_step_ns: u64,
}

#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub tool: String,
    pub cpus: usize,
    pub options: String,
    pub timestamps: TimestampCheck,
    pub scenarios: Vec<ScenarioResult>,
    pub goals: Vec<(String, bool)>,
}

fn timestamp_check() -> TimestampCheck {
    let mut steps = Vec::with_capacity(10_000);
    let mut last = clock::now_ns();
    while steps.len() < 10_000 {
        let t = clock::now_ns();
        if t != last {
            steps.push(t - last);
            last = t;
        }
    }
    steps.sort_unstable();
    TimestampCheck {
        clock_getres_ns: clock::resolution_ns(),
        min_step_ns: steps[0],
        median_step_ns: steps[steps.len() / 2],
    }
}

fn scenario(
    o: &BenchOptions,
    name: &str,
    kind: Kind,
    rate: f64,
    tenants: usize,
    tenant_cpu: usize,
    switch_cpu: usize,
) -> anyhow::Result<(ScenarioResult, RunReport)> {
    let any: SocketAddr = "127.0.0.1:0".parse()?;
    let cfg = RunConfig {
        label: name.to_string(),
        tenants: (0..tenants as u32)
            .map(|id| {
                Ok(TenantSpec {
                    id,
                    kind,
                    schedule: Schedule::constant(rate / tenants as f64)?,
                    nodelay: true,
                    version: o.version,
                    out_port: 2,
                    size: if kind == Kind::Echo { 8 } else { 64 },
                    install_table_miss: false,
                })
            })
            .collect::<anyhow::Result<_>>()?,
        endpoints: Endpoints::Listen(vec![any; tenants]),
        duration_s: o.duration_s,
        warmup_s: o.warmup_s,
        cooldown_s: o.cooldown_s,
        drain_s: 0.5,
        setup_timeout_s: 10.0,
        emulate_switch: true,
        inject_iface: None,
        capture_iface: None,
        cpu_pids: vec![],
        out_dir: o.out.as_ref().map(|d| d.join(name)),
        write_records: false,
        pin_tenants: Some(tenant_cpu),
        pin_switches: Some(switch_cpu),
        announce: false,
        external_dp: false,
    };
    let rep = run::run(&cfg)?;
    let t = &rep.totals;
    let lateness = rep
        .tenants
        .iter()
        .map(|s| s.send_lateness_p99_us)
        .fold(0.0, f64::max);
    let res = ScenarioResult {
        name: name.to_string(),
        kind: kind.name().to_string(),
        tenants,
        target_rate: t.target_rate,
        achieved_rate: t.achieved_rate,
        rate_error_pct: if t.target_rate > 0.0 {
            100.0 * (t.achieved_rate - t.target_rate) / t.target_rate
        } else {
            0.0
        },
        sent: t.sent,
        answered: t.answered,
        lost: t.lost,
        every_latency_recorded: t.sent > 0 && t.answered == t.sent && t.latency.count == t.sent,
        p50_us: t.latency.p50_us,
        p99_us: t.latency.p99_us,
        max_us: t.latency.max_us,
        send_lateness_p99_us: lateness,
        tenant_cpu,
        switch_cpu,
        problems: rep.problems.clone(),
    };
    Ok((res, rep))
}

/// Runs every scenario and checks the goals.
pub fn run_all(
    o: &BenchOptions,
    mut progress: impl FnMut(&ScenarioResult),
) -> anyhow::Result<BenchReport> {
    let (tc, sc) = (o.tenant_cpu, o.switch_cpu);
    let mut plan: Vec<(String, Kind, f64, usize, usize, usize)> = vec![
        ("echo-400k".into(), Kind::Echo, 400_000.0, 1, tc, sc),
        ("echo-500k".into(), Kind::Echo, 500_000.0, 1, tc, sc),
    ];
    if !o.quick {
        plan.push((
            "echo-400k-one-core".into(),
            Kind::Echo,
            400_000.0,
            1,
            tc,
            tc,
        ));
    }
    for r in [1_000.0, 10_000.0, 100_000.0, 200_000.0] {
        plan.push((
            format!("echo-rate-{}k", r / 1000.0),
            Kind::Echo,
            r,
            1,
            tc,
            sc,
        ));
    }
    for r in [1_000.0, 10_000.0, 40_000.0, 100_000.0, 200_000.0] {
        plan.push((
            format!("packet-in-{}k", r / 1000.0),
            Kind::PacketIn,
            r,
            1,
            tc,
            sc,
        ));
        plan.push((
            format!("packet-out-{}k", r / 1000.0),
            Kind::PacketOut,
            r,
            1,
            tc,
            sc,
        ));
    }
    if !o.quick {
        plan.push((
            "packet-out-60k-20-tenants".into(),
            Kind::PacketOut,
            60_000.0,
            20,
            tc,
            sc,
        ));
        plan.push(("port-stats-8k".into(), Kind::PortStats, 8_000.0, 1, tc, sc));
    }
    let mut scenarios = Vec::new();
    for (name, kind, rate, n, tcpu, scpu) in plan {
        let (r, _) = scenario(o, &name, kind, rate, n, tcpu, scpu)?;
        progress(&r);
        scenarios.push(r);
    }
    let ts = timestamp_check();
    let mut goals = Vec::new();
    let echo400 = scenarios.iter().find(|s| s.name == "echo-400k");
    goals.push((
        "echo >= 400k round trips/s with every latency recorded".to_string(),
        echo400.is_some_and(|s| {
            s.every_latency_recorded
                && s.achieved_rate >= 0.99 * 400_000.0
                && s.rate_error_pct.abs() <= 1.0
        }),
    ));
    goals.push((
        "rate error <= 1% from 1k to 200k msgs/s (echo, PACKET_IN, PACKET_OUT)".to_string(),
        scenarios
            .iter()
            .filter(|s| {
                s.tenants == 1 && s.target_rate <= 200_000.0 && !s.name.contains("one-core")
            })
            .all(|s| s.rate_error_pct.abs() <= 1.0),
    ));
    goals.push((
        "timestamps at 1 µs resolution or better".to_string(),
        ts.clock_getres_ns <= 1000 && ts.median_step_ns <= 1000,
    ));
    goals.push((
        "emulated PACKET_IN and PACKET_OUT up to 200k/s without loss".to_string(),
        scenarios
            .iter()
            .filter(|s| s.kind.starts_with("packet") && s.tenants == 1)
            .all(|s| s.lost == 0 && s.every_latency_recorded),
    ));
    let report = BenchReport {
        tool: format!("perfbench {}", env!("CARGO_PKG_VERSION")),
        // SAFETY: sysconf has no preconditions.
        cpus: unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } as usize,
        options: format!("{o:?}"),
        timestamps: ts,
        scenarios,
        goals,
    };
    if let Some(d) = &o.out {
        std::fs::create_dir_all(d)?;
        std::fs::write(d.join("bench.json"), serde_json::to_vec_pretty(&report)?)?;
    }
    Ok(report)
}

pub fn markdown(r: &BenchReport) -> String {
    let mut s = String::new();
    s.push_str("| scenario | tenants | target/s | achieved/s | rate err % | sent | answered | lost | p50 µs | p99 µs | max µs | send lateness p99 µs | cpus (tenant/switch) |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for x in &r.scenarios {
        s.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:+.3} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {}/{} |\n",
            x.name,
            x.tenants,
            x.target_rate,
            x.achieved_rate,
            x.rate_error_pct,
            x.sent,
            x.answered,
            x.lost,
            x.p50_us,
            x.p99_us,
            x.max_us,
            x.send_lateness_p99_us,
            x.tenant_cpu,
            x.switch_cpu
        ));
    }
    s.push_str(&format!(
        "\nclock: CLOCK_MONOTONIC, clock_getres {} ns, consecutive reads differ by min {} ns, median {} ns\n\n",
        r.timestamps.clock_getres_ns, r.timestamps.min_step_ns, r.timestamps.median_step_ns
    ));
    for (g, ok) in &r.goals {
        s.push_str(&format!("- [{}] {g}\n", if *ok { "x" } else { " " }));
    }
    s
}
