//! What one measurement run is given: the tenants, where they meet the
//! switch side, the timing and the outputs ([`RunConfig`]), and the checks
//! that refuse a configuration that cannot be measured, before anything starts.

use crate::tenant::{Kind, TenantSpec};
use anyhow::bail;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub enum Endpoints {
    /// Tenant i listens on address i (the switch or hypervisor connects).
    Listen(Vec<SocketAddr>),
    /// Tenant i connects to address i.
    Connect(Vec<SocketAddr>),
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    pub label: String,
    pub tenants: Vec<TenantSpec>,
    pub endpoints: Endpoints,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub cooldown_s: f64,
    pub drain_s: f64,
    pub setup_timeout_s: f64,
    /// Emulated switches in this process connect to the tenants' listen addresses.
    pub emulate_switch: bool,
    /// Inject probe frames here for PACKET_IN tenants (real switch).
    pub inject_iface: Option<String>,
    /// Capture PACKET_OUT'd probe frames here (real switch).
    pub capture_iface: Option<String>,
    pub cpu_pids: Vec<u32>,
    pub out_dir: Option<PathBuf>,
    pub write_records: bool,
    /// Pin tenant threads / emulated-switch threads to these CPUs.
    pub pin_tenants: Option<usize>,
    pub pin_switches: Option<usize>,
    /// Another process (`perfbench switch` or `perfbench dp`) sends the PACKET_IN
    /// probes and receives the PACKET_OUT frames.
    pub external_dp: bool,
    /// Print "perfbench: tenant I listening on ADDR" to stderr once bound (for orchestration).
    pub announce: bool,
}

/// Refuses a configuration that cannot run, naming the flag or field at fault.
pub fn validate(cfg: &RunConfig) -> anyhow::Result<()> {
    let n = cfg.tenants.len();
    if n == 0 {
        bail!("no tenants to run");
    }
    let eps = match &cfg.endpoints {
        Endpoints::Listen(a) | Endpoints::Connect(a) => a.len(),
    };
    if eps != n {
        bail!("{n} tenants but {eps} addresses");
    }
    if !(cfg.duration_s > 0.0 && cfg.duration_s.is_finite()) {
        bail!(
            "duration must be a positive number of seconds, got {}",
            cfg.duration_s
        );
    }
    if cfg.warmup_s < 0.0 || cfg.cooldown_s < 0.0 || cfg.warmup_s + cfg.cooldown_s >= cfg.duration_s
    {
        bail!(
            "warm-up ({} s) plus cool-down ({} s) must be non-negative and shorter than the duration ({} s)",
            cfg.warmup_s,
            cfg.cooldown_s,
            cfg.duration_s
        );
    }
    if cfg.emulate_switch && matches!(cfg.endpoints, Endpoints::Connect(_)) {
        bail!(
            "--emulate-switch needs the tenants to listen (the emulated switches connect to them)"
        );
    }
    if cfg.external_dp
        && (cfg.emulate_switch || cfg.inject_iface.is_some() || cfg.capture_iface.is_some())
    {
        bail!("--external-dp excludes --emulate-switch, --inject-iface and --capture-iface");
    }
    for t in &cfg.tenants {
        match t.kind {
            _ if cfg.external_dp => {}
            Kind::PacketIn if !cfg.emulate_switch && cfg.inject_iface.is_none() => bail!(
                "tenant {} measures PACKET_IN but nothing sends the packets: give --inject-iface IF (real switch), --emulate-switch, or --external-dp (perfbench switch/dp in another process)",
                t.id
            ),
            Kind::PacketOut if !cfg.emulate_switch && cfg.capture_iface.is_none() => bail!(
                "tenant {} sends PACKET_OUT but nothing receives the frames: give --capture-iface IF (real switch), --emulate-switch, or --external-dp (perfbench switch/dp in another process)",
                t.id
            ),
            _ => {}
        }
    }
    let mut ids: Vec<u32> = cfg.tenants.iter().map(|t| t.id).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != n {
        bail!("tenant ids must be unique");
    }
    Ok(())
}
