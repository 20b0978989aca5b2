//! perfbench command line.

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use perfbench::clock::now_ns;
use perfbench::codec::Version;
use perfbench::conn::parse_addr;
use perfbench::flow_confirm::ConfirmConfig;
use perfbench::record;
use perfbench::run::{self, Endpoints, RunConfig};
use perfbench::schedule::Schedule;
use perfbench::summary::{self, Window};
use perfbench::tenant::{Kind, TenantSpec};
use perfbench::{bench, dp, echo_peer, proxy, signals, switch};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "perfbench",
    version,
    about = "OpenFlow 1.0/1.3 control-plane benchmark for SDN network hypervisors"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Tenant controllers (perfbenchCP), optionally with the data-plane side in the same process.
    Cp(CpArgs),
    /// Emulated OpenFlow switches that connect to a controller or hypervisor (perfbenchDP, emulation mode).
    Switch(SwitchArgs),
    /// Inject probe packets at / capture them from a real switch's port over AF_PACKET (perfbenchDP).
    Dp(DpArgs),
    /// Minimal OpenFlow pass-through hypervisor: switches connect here, it connects on to the controllers.
    Proxy(ProxyArgs),
    /// Loopback echo peer: a listening emulated switch that answers every request.
    EchoPeer(EchoPeerArgs),
    /// Measure perfbench's own goal figures on loopback (emulated switches).
    Bench(BenchArgs),
}

#[derive(Args, Clone)]
struct Timing {
    /// Spin this many µs before each send instead of sleeping (0: always sleep; frees the CPU for a
    /// system under test on the same machine, sends leave up to a wake-up latency late).
    #[arg(long, default_value_t = 60)]
    spin_us: u64,
    /// Run length in seconds.
    #[arg(long, default_value_t = 30.0)]
    duration: f64,
    /// Seconds cut from the start of the run for the summaries.
    #[arg(long, default_value_t = 5.0)]
    warmup: f64,
    /// Seconds cut from the end of the run for the summaries.
    #[arg(long, default_value_t = 5.0)]
    cooldown: f64,
    /// Seconds to wait for outstanding answers after the last request.
    #[arg(long, default_value_t = 1.0)]
    drain: f64,
}

#[derive(Args)]
struct CpArgs {
    /// Number of tenant controllers (each its own thread and TCP connection).
    #[arg(long, default_value_t = 1)]
    tenants: usize,
    /// Message type, one for all or a comma list per tenant: echo, features, port-stats, barrier, packet-out, packet-in, flow-mod.
    #[arg(long = "type", default_value = "echo")]
    kind: String,
    /// Messages/s per tenant, one for all or a comma list per tenant.
    #[arg(long, conflicts_with_all = ["total_rate", "schedule"])]
    rate: Option<String>,
    /// Messages/s in total, spread evenly over the tenants (the paper's multi-tenant setting).
    #[arg(long, conflicts_with = "schedule")]
    total_rate: Option<f64>,
    /// Schedule file of 'TIME RATE' lines (per tenant), one for all or a comma list per tenant.
    #[arg(long)]
    schedule: Option<String>,
    /// TCP_NODELAY per tenant: 1/0 (or on/off), one for all or a comma list.
    #[arg(long, default_value = "1")]
    nodelay: String,
    /// OpenFlow version: 1.0 or 1.3.
    #[arg(long = "of", default_value = "1.3")]
    version: Version,
    /// Tenants listen here, as controllers do; tenant i uses port+i. The default mode.
    #[arg(long, conflicts_with = "connect")]
    listen: Option<String>,
    /// Tenants connect here instead (a switch or hypervisor listening for controllers, e.g. OVS ptcp:); tenant i uses port+i.
    #[arg(long)]
    connect: Option<String>,
    /// With --connect: every tenant connects to the same address (instead of port+i).
    #[arg(long, requires = "connect")]
    same_port: bool,
    /// Switch port PACKET_OUTs output their frame on.
    #[arg(long, default_value_t = 1)]
    out_port: u32,
    /// Probe frame bytes (packet-in/out) or ECHO payload bytes.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Install a match-all → CONTROLLER flow first (needed for PACKET_IN at an OpenFlow 1.3 switch).
    #[arg(long)]
    install_table_miss: bool,
    /// Run emulated switches in this process that connect to the tenants.
    #[arg(long)]
    emulate_switch: bool,
    /// Inject probe frames on this interface for packet-in tenants (real switch).
    #[arg(long)]
    inject_iface: Option<String>,
    /// Capture PACKET_OUT'd probe frames on this interface (real switch).
    #[arg(long)]
    capture_iface: Option<String>,
    /// The data plane is another process (perfbench switch or dp): accept packet-in/packet-out tenants
    /// without a local source or receiver; PACKET_IN losses are counted from sequence gaps.
    #[arg(long)]
    external_dp: bool,
    /// Sample the CPU time of this PID (the system under test) over the measured window; repeatable.
    #[arg(long = "cpu-pid")]
    cpu_pids: Vec<u32>,
    /// Folder for records.csv and summary.json.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not write per-message records.
    #[arg(long)]
    no_records: bool,
    /// Seconds allowed for connections and handshakes.
    #[arg(long, default_value_t = 30.0)]
    setup_timeout: f64,
    #[command(flatten)]
    confirm: ConfirmArgs,
    #[command(flatten)]
    timing: Timing,
}

#[derive(Args)]
struct ConfirmArgs {
    /// flow-mod: also time each rule's first forwarded packet (flow insertion latency) by injecting
    /// its flow's probes on --inject-iface (the switch's --out-port) or into the emulated switch.
    #[arg(long)]
    confirm_flows: bool,
    /// With --confirm-flows: one probe per pending rule every this many µs (the latency's resolution).
    #[arg(long, default_value_t = 100.0, requires = "confirm_flows")]
    probe_interval_us: f64,
    /// With --confirm-flows: at most this many probe frames per second per tenant.
    #[arg(long, default_value_t = 20_000.0, requires = "confirm_flows")]
    probe_rate: f64,
    /// With --confirm-flows: seconds after its FLOW_MOD a rule counts as never confirmed.
    #[arg(long, default_value_t = 1.0, requires = "confirm_flows")]
    confirm_timeout: f64,
}

impl ConfirmArgs {
    fn config(&self) -> anyhow::Result<Option<ConfirmConfig>> {
        if !self.confirm_flows {
            return Ok(None);
        }
        if !(1.0..=1e6).contains(&self.probe_interval_us) {
            bail!("--probe-interval-us must be within 1..=1000000");
        }
        if !(1.0..=1e7).contains(&self.probe_rate) {
            bail!("--probe-rate must be within 1..=10000000");
        }
        if !(0.001..=60.0).contains(&self.confirm_timeout) {
            bail!("--confirm-timeout must be within 0.001..=60 seconds");
        }
        Ok(Some(ConfirmConfig {
            probe_interval_ns: (self.probe_interval_us * 1e3) as u64,
            max_probe_rate: self.probe_rate,
            timeout_ns: (self.confirm_timeout * 1e9) as u64,
        }))
    }
}

#[derive(Args)]
struct SwitchArgs {
    /// Controller or hypervisor address; switch i connects to port+i (or all to the same port with --same-port).
    #[arg(long)]
    connect: String,
    /// All switches connect to the same port.
    #[arg(long)]
    same_port: bool,
    #[arg(long, default_value_t = 1)]
    switches: usize,
    /// OpenFlow versions accepted, comma list.
    #[arg(long = "of", default_value = "1.3")]
    versions: String,
    /// PACKET_INs per second per switch (0: none).
    #[arg(long, default_value_t = 0.0)]
    packet_in_rate: f64,
    /// Schedule file for PACKET_IN generation instead of a constant rate.
    #[arg(long)]
    schedule: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    frame_size: usize,
    #[arg(long, default_value = "1")]
    nodelay: String,
    /// Folder for records.csv (PACKET_OUT arrivals) and summary.json.
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 30.0)]
    setup_timeout: f64,
    #[command(flatten)]
    timing: Timing,
}

#[derive(Args)]
struct DpArgs {
    /// Interface attached to the switch port.
    #[arg(long)]
    iface: String,
    /// Probe frames per second per tenant to inject (0: do not inject).
    #[arg(long, default_value_t = 0.0)]
    inject_rate: f64,
    /// Tenant ids 0..N-1 to inject for.
    #[arg(long, default_value_t = 1)]
    tenants: u32,
    /// Capture probe frames arriving on the interface.
    #[arg(long)]
    capture: bool,
    #[arg(long, default_value_t = 64)]
    frame_size: usize,
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    timing: Timing,
}

#[derive(Args)]
struct ProxyArgs {
    /// Address switches connect to (repeatable; paired in order with --upstream).
    #[arg(long, required = true)]
    listen: Vec<String>,
    /// Controller address to relay to (repeatable).
    #[arg(long, required = true)]
    upstream: Vec<String>,
    /// Expand one listen/upstream pair into N pairs on consecutive ports.
    #[arg(long, default_value_t = 1)]
    ports: u16,
    /// TCP_NODELAY on both sides: 1/0.
    #[arg(long, default_value = "1")]
    nodelay: String,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    max_seconds: f64,
}

#[derive(Args)]
struct EchoPeerArgs {
    /// Address to listen on (port 0: any free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:6653")]
    listen: String,
    /// OpenFlow versions accepted, comma list.
    #[arg(long = "of", default_value = "1.0,1.3")]
    versions: String,
    #[arg(long, default_value = "1")]
    nodelay: String,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    max_seconds: f64,
    /// Stop after serving this many connections.
    #[arg(long)]
    max_connections: Option<u64>,
}

#[derive(Args)]
struct BenchArgs {
    /// Seconds per scenario.
    #[arg(long, default_value_t = 4.0)]
    duration: f64,
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    #[arg(long, default_value_t = 1.0)]
    cooldown: f64,
    #[arg(long = "of", default_value = "1.3")]
    version: Version,
    /// Fewer scenarios.
    #[arg(long)]
    quick: bool,
    #[arg(long, default_value_t = 0)]
    tenant_cpu: usize,
    #[arg(long, default_value_t = 1)]
    switch_cpu: usize,
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Splits "a,b,c" into exactly `n` items (a single item applies to all).
fn per_tenant<T>(
    s: &str,
    n: usize,
    what: &str,
    parse: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 1 && parts.len() != n {
        bail!(
            "--{what} has {} values but there are {n} tenants (give one value or one per tenant)",
            parts.len()
        );
    }
    (0..n)
        .map(|i| {
            parse(parts[if parts.len() == 1 { 0 } else { i }]).with_context(|| format!("--{what}"))
        })
        .collect()
}

fn parse_bool(s: &str) -> anyhow::Result<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Ok(true),
        "0" | "off" | "false" | "no" => Ok(false),
        _ => bail!("'{s}' is not 1/0, on/off or true/false"),
    }
}

fn parse_versions(s: &str) -> anyhow::Result<Vec<Version>> {
    s.split(',')
        .map(|v| v.trim().parse::<Version>().map_err(anyhow::Error::msg))
        .collect()
}

fn parse_rate(s: &str) -> anyhow::Result<f64> {
    let s = s.trim();
    let (num, mul) = match s.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1e3),
        None => (s, 1.0),
    };
    let r: f64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("rate '{s}' is not a number (e.g. 5000 or 5k)"))?;
    Ok(r * mul)
}

/// Tenant i's address: base port + i.
fn nth_addr(base: SocketAddr, i: usize, what: &str) -> anyhow::Result<SocketAddr> {
    if base.port() == 0 {
        return Ok(base);
    }
    let p = base.port() as usize + i;
    let p = u16::try_from(p)
        .map_err(|_| anyhow::anyhow!("{what} port {} + {i} exceeds 65535", base.port()))?;
    Ok(SocketAddr::new(base.ip(), p))
}

/// A finite number above zero (NaN is not).
fn is_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn check_timing(t: &Timing) -> anyhow::Result<()> {
    if t.spin_us > 10_000 {
        bail!("--spin-us must be at most 10000, got {}", t.spin_us);
    }
    perfbench::pacer::set_spin_ns(t.spin_us * 1000);
    if !is_positive(t.duration) || t.duration > 86_400.0 {
        bail!(
            "--duration must be in (0, 86400] seconds, got {}",
            t.duration
        );
    }
    if t.warmup < 0.0 || t.cooldown < 0.0 || t.warmup + t.cooldown >= t.duration {
        bail!(
            "--warmup ({}) + --cooldown ({}) must be non-negative and less than --duration ({})",
            t.warmup,
            t.cooldown,
            t.duration
        );
    }
    if !(0.0..=600.0).contains(&t.drain) {
        bail!("--drain must be within 0..=600 seconds, got {}", t.drain);
    }
    Ok(())
}

fn cmd_cp(a: CpArgs) -> anyhow::Result<()> {
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

fn cmd_switch(a: SwitchArgs) -> anyhow::Result<()> {
    check_timing(&a.timing)?;
    let versions = parse_versions(&a.versions)?;
    let base = parse_addr(&a.connect)?;
    let nodelay = parse_bool(&a.nodelay)?;
    if a.switches == 0 || a.switches > 1000 {
        bail!("--switches must be within 1..=1000");
    }
    let sched = match (&a.schedule, a.packet_in_rate) {
        (Some(p), _) => Some(Schedule::from_file(p)?),
        (None, r) if r > 0.0 => Some(Schedule::constant(r)?),
        _ => None,
    };
    let deadline = now_ns() + (a.setup_timeout * 1e9) as u64;
    let st = switch::SwitchTiming {
        setup_deadline_ns: deadline,
        duration_ns: (a.timing.duration * 1e9) as u64,
        drain_ns: (a.timing.drain * 1e9) as u64,
    };
    let results: Vec<anyhow::Result<switch::SwitchResult>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..a.switches)
            .map(|i| {
                let addr = if a.same_port {
                    Ok(base)
                } else {
                    nth_addr(base, i, "--connect")
                };
                let spec = switch::SwitchSpec {
                    tenant: i as u32,
                    dpid: i as u64 + 1,
                    versions: versions.clone(),
                    nports: 2,
                    packet_in: sched.clone(),
                    in_port: 1,
                    frame_len: a.frame_size,
                    nodelay,
                };
                sc.spawn(move || {
                    let s = perfbench::conn::connect_until(addr?, deadline)?;
                    switch::run(spec, s, switch::StartAt::Handshake, st)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("switch thread panicked")))
            })
            .collect()
    });
    let mut out = Vec::new();
    let mut csv = Vec::new();
    for r in results {
        let r = r?;
        // Each switch starts on its own; its window starts at its first PACKET_IN or PACKET_OUT.
        let first = r
            .records
            .first()
            .map(|x| x.req_ns)
            .into_iter()
            .chain(r.arrivals.first().map(|x| x.tx_ns))
            .min()
            .unwrap_or(0);
        let w = Window::trimmed(first, a.timing.duration, a.timing.warmup, a.timing.cooldown);
        let recs = record::records_with_gaps(
            &r.arrivals,
            r.tenant as u16,
            perfbench::codec::types::PACKET_OUT,
            0,
        );
        let s = summary::summarize(r.tenant, "packet-out-received", 0.0, &recs, &w);
        out.push(serde_json::json!({
            "switch": r.tenant,
            "version": r.version,
            "packet_ins_sent": r.records.len(),
            "packet_in_sent_in_window": r.records.iter().filter(|x| w.contains(x.req_ns)).count(),
            "packet_in_send_lateness_p99_us": r.lateness_p99_us,
            "requests_answered": r.answered,
            "flow_mods": r.flow_mods,
            "unmatched": r.unmatched,
            "packet_out_arrivals": s,
            "aborted": r.aborted,
            "window": w,
        }));
        csv.push((r.version.map(|v| v.wire()).unwrap_or(4), recs));
    }
    let doc = serde_json::json!({"switches": out});
    if let Some(d) = &a.out {
        std::fs::create_dir_all(d)?;
        let sets: Vec<(u8, &[record::Record])> =
            csv.iter().map(|(v, r)| (*v, r.as_slice())).collect();
        record::write_csv(&d.join("records.csv"), &sets)?;
        std::fs::write(d.join("summary.json"), serde_json::to_vec_pretty(&doc)?)?;
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

fn cmd_dp(a: DpArgs) -> anyhow::Result<()> {
    check_timing(&a.timing)?;
    if a.inject_rate <= 0.0 && !a.capture {
        bail!("nothing to do: give --inject-rate R and/or --capture");
    }
    let dur = (a.timing.duration * 1e9) as u64;
    let drain = (a.timing.drain * 1e9) as u64;
    let inject_n = if a.inject_rate > 0.0 {
        a.tenants as usize
    } else {
        0
    };
    let sync = perfbench::start_sync::StartSync::new(inject_n + a.capture as usize);
    let sched = if a.inject_rate > 0.0 {
        Some(Schedule::constant(a.inject_rate)?)
    } else {
        None
    };
    let (inj, cap) = std::thread::scope(|sc| {
        let sync = &sync;
        let hs: Vec<_> = (0..inject_n as u32)
            .map(|t| {
                let (iface, sch) = (
                    a.iface.clone(),
                    sched.clone().unwrap_or(Schedule::constant(0.0).unwrap()),
                );
                sc.spawn(move || dp::inject(&iface, t, sch, a.frame_size, dur, sync))
            })
            .collect();
        let c = a.capture.then(|| {
            let iface = a.iface.clone();
            sc.spawn(move || dp::capture(&iface, dur, drain, sync))
        });
        let inj: Vec<_> = hs
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panic"))))
            .collect();
        (
            inj,
            c.map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panic")))),
        )
    });
    let w = Window::trimmed(
        sync.start_ns(),
        a.timing.duration,
        a.timing.warmup,
        a.timing.cooldown,
    );
    let mut injected = Vec::new();
    for r in inj {
        let r = r?;
        injected.push(serde_json::json!({
            "tenant": r.tenant,
            "sent": r.records.len(),
            "sent_in_window": r.records.iter().filter(|x| w.contains(x.req_ns)).count(),
            "send_errors": r.send_errors,
            "send_lateness_p99_us": r.lateness_p99_us,
        }));
    }
    let mut captured = Vec::new();
    let mut csv = Vec::new();
    if let Some(c) = cap {
        let c = c?;
        let mut ids: Vec<_> = c.arrivals.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let recs = record::records_with_gaps(
                &c.arrivals[&id],
                id as u16,
                perfbench::codec::types::PACKET_OUT,
                0,
            );
            captured.push(summary::summarize(
                id,
                "packet-out-received",
                0.0,
                &recs,
                &w,
            ));
            csv.push((4u8, recs));
        }
    }
    let doc = serde_json::json!({"iface": a.iface, "window": w, "injected": injected, "captured": captured});
    if let Some(d) = &a.out {
        std::fs::create_dir_all(d)?;
        let sets: Vec<(u8, &[record::Record])> =
            csv.iter().map(|(v, r)| (*v, r.as_slice())).collect();
        record::write_csv(&d.join("records.csv"), &sets)?;
        std::fs::write(d.join("summary.json"), serde_json::to_vec_pretty(&doc)?)?;
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

fn cmd_proxy(a: ProxyArgs) -> anyhow::Result<()> {
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

fn cmd_echo_peer(a: EchoPeerArgs) -> anyhow::Result<()> {
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

fn cmd_bench(a: BenchArgs) -> anyhow::Result<()> {
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

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Cp(a) => cmd_cp(a),
        Cmd::Switch(a) => cmd_switch(a),
        Cmd::Dp(a) => cmd_dp(a),
        Cmd::Proxy(a) => cmd_proxy(a),
        Cmd::EchoPeer(a) => cmd_echo_peer(a),
        Cmd::Bench(a) => cmd_bench(a),
    };
    if let Err(e) = r {
        eprintln!("perfbench: error: {e:#}");
        std::process::exit(2);
    }
}
