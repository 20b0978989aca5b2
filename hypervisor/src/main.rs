//! `hypervisor`: slices OpenFlow switches between tenant controllers.
//! Prints one line per slice, `listening ADDR` and `ready` on stdout once it
//! accepts switches, and a JSON report when it stops (SIGINT/SIGTERM or
//! --max-seconds). SIGHUP reads the slices file again.

use anyhow::bail;
use clap::Parser;
use hypervisor::config::{self, Limits};
use hypervisor::server::{self, Server, Shared};
use perfbench::clock::now_ns;
use perfbench::codec::Version;
use std::io::Write;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "hypervisor",
    about = "OpenFlow 1.0/1.3 network hypervisor (FlowVisor-style slicing)"
)]
struct Cli {
    /// Address switches connect to.
    #[arg(long, default_value = "127.0.0.1:6753")]
    listen: String,
    /// Slices file (TOML; see docs/hypervisor.md). Reloaded on SIGHUP.
    #[arg(long, conflicts_with = "tenants")]
    slices: Option<PathBuf>,
    /// Instead of a file: N slices over all ports, tenant i's controller at --upstream port + i.
    #[arg(long, requires = "upstream")]
    tenants: Option<usize>,
    /// First tenant controller for --tenants.
    #[arg(long)]
    upstream: Option<String>,
    /// With --tenants: slice i owns frames from perfbench tenant i's probe MAC (PACKET_IN routing).
    #[arg(long)]
    probe_macs: bool,
    /// With --tenants: control messages/s per tenant (0: unlimited).
    #[arg(long, default_value_t = 0.0)]
    rate_limit: f64,
    /// With --tenants: token-bucket depth (default rate/10).
    #[arg(long)]
    burst: Option<f64>,
    /// With --tenants: flow entries per tenant and switch (0: unlimited).
    #[arg(long, default_value_t = 0)]
    flow_quota: usize,
    /// With --tenants: PACKET_INs/s to each tenant's controller (0: unlimited; excess dropped).
    #[arg(long, default_value_t = 0.0)]
    packet_in_limit: f64,
    /// OpenFlow versions offered to switches, comma list.
    #[arg(long = "of", default_value = "1.0,1.3")]
    versions: String,
    /// TCP_NODELAY on every connection: 1/0.
    #[arg(long, default_value = "1")]
    nodelay: String,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    max_seconds: f64,
}

fn run(cli: Cli) -> anyhow::Result<()> {
    server::install_signals();
    let listen = perfbench::conn::parse_addr(&cli.listen)?;
    let config = match (&cli.slices, cli.tenants) {
        (Some(path), _) => config::load(path)?,
        (None, Some(n)) => {
            let up = perfbench::conn::parse_addr(cli.upstream.as_deref().unwrap_or_default())?;
            let limits = Limits {
                rate: cli.rate_limit,
                burst: cli.burst,
                flows: cli.flow_quota,
                packet_in_rate: cli.packet_in_limit,
                packet_in_burst: None,
            };
            config::generated(n, up, cli.probe_macs, limits)?
        }
        (None, None) => bail!("give --slices FILE or --tenants N --upstream ADDR"),
    };
    let versions = cli
        .versions
        .split(',')
        .map(|v| v.trim().parse::<Version>().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let nodelay = match cli.nodelay.as_str() {
        "1" => true,
        "0" => false,
        other => bail!("--nodelay '{other}' is not 1/0"),
    };
    if !(cli.max_seconds > 0.0 && cli.max_seconds.is_finite()) {
        bail!("--max-seconds must be positive");
    }
    for s in &config.slices {
        let ports = s.ports.as_ref().map_or("all".to_string(), |p| {
            p.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        });
        println!("slice {} -> {} ports={ports}", s.name, s.controller);
    }
    let stop_ns = now_ns() + (cli.max_seconds * 1e9) as u64;
    let server = Server::bind(
        listen,
        Shared::new(config, versions, nodelay, stop_ns),
        cli.slices,
    )?;
    println!("listening {}", server.listener.local_addr()?);
    println!("ready");
    std::io::stdout().flush()?;
    let report = server.run();
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("hypervisor: error: {e:#}");
        std::process::exit(2);
    }
}
