//! `perfbench cp`: the tenant controllers (perfbenchCP).

use super::args::*;
use super::parse::*;
use anyhow::bail;
use perfbench::conn::parse_addr;
use perfbench::run::{self, Endpoints, RunConfig};
use perfbench::schedule::Schedule;
use perfbench::tenant::{Kind, TenantSpec};

pub fn cmd_cp(a: CpArgs) -> anyhow::Result<()> {
    check_timing(&a.timing)?;
    let n = a.tenants;
    if n == 0 || n > 1000 {
        bail!("--tenants must be within 1..=1000, got {n}");
    }
    let kinds = per_tenant(&a.kind, n, "type", |s| {
        s.parse::<Kind>().map_err(anyhow::Error::msg)
    })?;
    let nodelay = per_tenant(&a.nodelay, n, "nodelay", parse_bool)?;
    let schedules: Vec<Schedule> = if let Some(s) = &a.schedule {
        per_tenant(s, n, "schedule", |p| {
            Schedule::from_file(std::path::Path::new(p))
        })?
    } else if let Some(total) = a.total_rate {
        (0..n)
            .map(|_| Schedule::constant(total / n as f64))
            .collect::<anyhow::Result<_>>()?
    } else {
        let r = a.rate.as_deref().unwrap_or("1000");
        per_tenant(r, n, "rate", |s| Schedule::constant(parse_rate(s)?))?
    };
    if a.size > 9000 {
        bail!("--size {} is larger than 9000 bytes", a.size);
    }
    let tenants: Vec<TenantSpec> = (0..n)
        .map(|i| TenantSpec {
            id: i as u32,
            kind: kinds[i],
            schedule: schedules[i].clone(),
            nodelay: nodelay[i],
            version: a.version,
            out_port: a.out_port,
            size: a.size,
            install_table_miss: a.install_table_miss,
        })
        .collect();
    let endpoints = match (&a.listen, &a.connect) {
        (_, Some(c)) => {
            let b = parse_addr(c)?;
            let step = if a.same_port { 0 } else { 1 };
            Endpoints::Connect(
                (0..n)
                    .map(|i| nth_addr(b, i * step, "--connect"))
                    .collect::<anyhow::Result<_>>()?,
            )
        }
        (l, None) => {
            let b = parse_addr(l.as_deref().unwrap_or("127.0.0.1:6653"))?;
            Endpoints::Listen(
                (0..n)
                    .map(|i| nth_addr(b, i, "--listen"))
                    .collect::<anyhow::Result<_>>()?,
            )
        }
    };
    let cfg = RunConfig {
        label: "cp".into(),
        tenants,
        endpoints,
        duration_s: a.timing.duration,
        warmup_s: a.timing.warmup,
        cooldown_s: a.timing.cooldown,
        drain_s: a.timing.drain,
        setup_timeout_s: a.setup_timeout,
        emulate_switch: a.emulate_switch,
        inject_iface: a.inject_iface,
        capture_iface: a.capture_iface,
        cpu_pids: a.cpu_pids,
        out_dir: a.out,
        write_records: !a.no_records,
        pin_tenants: None,
        pin_switches: None,
        announce: true,
        external_dp: a.external_dp,
    };
    let rep = run::run_with(&cfg, a.confirm.config()?)?;
    eprintln!(
        "{:>6} {:>11} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "tenant", "type", "target/s", "achieved/s", "lost", "p50 µs", "p90 µs", "p99 µs", "max µs"
    );
    for s in &rep.tenants {
        eprintln!(
            "{:>6} {:>11} {:>10.0} {:>10.0} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            s.tenant,
            s.kind,
            s.target_rate,
            s.achieved_rate,
            s.lost,
            s.latency.p50_us,
            s.latency.p90_us,
            s.latency.p99_us,
            s.latency.max_us
        );
        if let Some(f) = &s.flow_insertion {
            eprintln!(
                "{:>6} flow insertion (FLOW_MOD → first forwarded packet): {} rules, {} confirmed, {} never; p50 {:.1} p99 {:.1} max {:.1} µs; BARRIER_REPLY first for {}",
                s.tenant,
                f.rules,
                f.confirmed,
                f.unconfirmed,
                f.latency.p50_us,
                f.latency.p99_us,
                f.latency.max_us,
                f.barrier_before_dataplane,
            );
        }
    }
    for p in &rep.problems {
        eprintln!("problem: {p}");
    }
    println!("{}", serde_json::to_string_pretty(&rep)?);
    Ok(())
}
