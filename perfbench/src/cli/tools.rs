//! `perfbench proxy`, `echo-peer` and `bench`: the pass-through proxy, the loopback peer, self-measurement.

use super::args::*;
use super::parse::*;
use anyhow::bail;
use perfbench::clock::now_ns;
use perfbench::conn::parse_addr;
use perfbench::{bench, echo_peer, proxy, signals};
use std::io::Write;

pub fn cmd_proxy(a: ProxyArgs) -> anyhow::Result<()> {
    signals::install();
    if a.listen.len() != a.upstream.len() {
        bail!(
            "{} --listen but {} --upstream: give them in pairs",
            a.listen.len(),
            a.upstream.len()
        );
    }
    if a.ports == 0 {
        bail!("--ports must be at least 1");
    }
    let mut routes = Vec::new();
    for (l, u) in a.listen.iter().zip(&a.upstream) {
        let (l, u) = (parse_addr(l)?, parse_addr(u)?);
        for i in 0..a.ports as usize {
            routes.push((nth_addr(l, i, "--listen")?, nth_addr(u, i, "--upstream")?));
        }
    }
    if !is_positive(a.max_seconds) {
        bail!("--max-seconds must be positive");
    }
    let cfg = proxy::ProxyConfig {
        routes: routes.clone(),
        nodelay: parse_bool(&a.nodelay)?,
        max_ns: now_ns() + (a.max_seconds * 1e9) as u64,
    };
    let stats = proxy::run(cfg, || {
        for (l, u) in &routes {
            println!("proxy {l} -> {u}");
        }
        println!("ready");
        let _ = std::io::stdout().flush();
    })?;
    println!("{}", serde_json::to_string(&stats)?);
    Ok(())
}

pub fn cmd_echo_peer(a: EchoPeerArgs) -> anyhow::Result<()> {
    signals::install();
    let versions = parse_versions(&a.versions)?;
    if !is_positive(a.max_seconds) {
        bail!("--max-seconds must be positive");
    }
    let (l, addr) = echo_peer::bind(parse_addr(&a.listen)?)?;
    println!("listening {addr}");
    let _ = std::io::stdout().flush();
    let stats = echo_peer::serve(
        l,
        versions,
        parse_bool(&a.nodelay)?,
        now_ns() + (a.max_seconds * 1e9) as u64,
        a.max_connections,
    )?;
    println!("{}", serde_json::to_string(&stats)?);
    Ok(())
}

pub fn cmd_bench(a: BenchArgs) -> anyhow::Result<()> {
    if a.warmup + a.cooldown >= a.duration {
        bail!("--warmup + --cooldown must be less than --duration");
    }
    let o = bench::BenchOptions {
        duration_s: a.duration,
        warmup_s: a.warmup,
        cooldown_s: a.cooldown,
        version: a.version,
        out: a.out,
        quick: a.quick,
        tenant_cpu: a.tenant_cpu,
        switch_cpu: a.switch_cpu,
    };
    let r = bench::run_all(&o, |s| {
        eprintln!(
            "{:<28} achieved {:>9.0}/s  err {:+.3}%  answered {}/{}  p50 {:.1} µs  p99 {:.1} µs",
            s.name, s.achieved_rate, s.rate_error_pct, s.answered, s.sent, s.p50_us, s.p99_us
        );
    })?;
    println!("{}", bench::markdown(&r));
    Ok(())
}
