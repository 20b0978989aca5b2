//! The subcommands' flags (clap), one struct per subcommand.

use anyhow::bail;
use clap::Args;
use perfbench::codec::Version;
use perfbench::flow_confirm::ConfirmConfig;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct Timing {
    /// Spin this many µs before each send instead of sleeping (0: always sleep; frees the CPU for a
    /// system under test on the same machine, sends leave up to a wake-up latency late).
    #[arg(long, default_value_t = 60)]
    pub spin_us: u64,
    /// Run length in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub duration: f64,
    /// Seconds cut from the start of the run for the summaries.
    #[arg(long, default_value_t = 5.0)]
    pub warmup: f64,
    /// Seconds cut from the end of the run for the summaries.
    #[arg(long, default_value_t = 5.0)]
    pub cooldown: f64,
    /// Seconds to wait for outstanding answers after the last request.
    #[arg(long, default_value_t = 1.0)]
    pub drain: f64,
}

#[derive(Args)]
pub struct CpArgs {
    /// Number of tenant controllers (each its own thread and TCP connection).
    #[arg(long, default_value_t = 1)]
    pub tenants: usize,
    /// Message type, one for all or a comma list per tenant: echo, features, port-stats, barrier, packet-out, packet-in, flow-mod.
    #[arg(long = "type", default_value = "echo")]
    pub kind: String,
    /// Messages/s per tenant, one for all or a comma list per tenant.
    #[arg(long, conflicts_with_all = ["total_rate", "schedule"])]
    pub rate: Option<String>,
    /// Messages/s in total, spread evenly over the tenants (the paper's multi-tenant setting).
    #[arg(long, conflicts_with = "schedule")]
    pub total_rate: Option<f64>,
    /// Schedule file of 'TIME RATE' lines (per tenant), one for all or a comma list per tenant.
    #[arg(long)]
    pub schedule: Option<String>,
    /// TCP_NODELAY per tenant: 1/0 (or on/off), one for all or a comma list.
    #[arg(long, default_value = "1")]
    pub nodelay: String,
    /// OpenFlow version: 1.0 or 1.3.
    #[arg(long = "of", default_value = "1.3")]
    pub version: Version,
    /// Tenants listen here, as controllers do; tenant i uses port+i. The default mode.
    #[arg(long, conflicts_with = "connect")]
    pub listen: Option<String>,
    /// Tenants connect here instead (a switch or hypervisor listening for controllers, e.g. OVS ptcp:); tenant i uses port+i.
    #[arg(long)]
    pub connect: Option<String>,
    /// With --connect: every tenant connects to the same address (instead of port+i).
    #[arg(long, requires = "connect")]
    pub same_port: bool,
    /// Switch port PACKET_OUTs output their frame on.
    #[arg(long, default_value_t = 1)]
    pub out_port: u32,
    /// Probe frame bytes (packet-in/out) or ECHO payload bytes.
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Install a match-all → CONTROLLER flow first (needed for PACKET_IN at an OpenFlow 1.3 switch).
    #[arg(long)]
    pub install_table_miss: bool,
    /// Run emulated switches in this process that connect to the tenants.
    #[arg(long)]
    pub emulate_switch: bool,
    /// Inject probe frames on this interface for packet-in tenants (real switch).
    #[arg(long)]
    pub inject_iface: Option<String>,
    /// Capture PACKET_OUT'd probe frames on this interface (real switch).
    #[arg(long)]
    pub capture_iface: Option<String>,
    /// The data plane is another process (perfbench switch or dp): accept packet-in/packet-out tenants
    /// without a local source or receiver; PACKET_IN losses are counted from sequence gaps.
    #[arg(long)]
    pub external_dp: bool,
    /// Sample the CPU time of this PID (the system under test) over the measured window; repeatable.
    #[arg(long = "cpu-pid")]
    pub cpu_pids: Vec<u32>,
    /// Folder for records.csv and summary.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Do not write per-message records.
    #[arg(long)]
    pub no_records: bool,
    /// Seconds allowed for connections and handshakes.
    #[arg(long, default_value_t = 30.0)]
    pub setup_timeout: f64,
    #[command(flatten)]
    pub confirm: ConfirmArgs,
    #[command(flatten)]
    pub timing: Timing,
}

#[derive(Args)]
pub struct ConfirmArgs {
    /// flow-mod: also time each rule's first forwarded packet (flow insertion latency) by injecting
    /// its flow's probes on --inject-iface (the switch's --out-port) or into the emulated switch.
    #[arg(long)]
    pub confirm_flows: bool,
    /// With --confirm-flows: one probe per pending rule every this many µs (the latency's resolution).
    #[arg(long, default_value_t = 100.0, requires = "confirm_flows")]
    pub probe_interval_us: f64,
    /// With --confirm-flows: at most this many probe frames per second per tenant.
    #[arg(long, default_value_t = 20_000.0, requires = "confirm_flows")]
    pub probe_rate: f64,
    /// With --confirm-flows: seconds after its FLOW_MOD a rule counts as never confirmed.
    #[arg(long, default_value_t = 1.0, requires = "confirm_flows")]
    pub confirm_timeout: f64,
}

impl ConfirmArgs {
    pub fn config(&self) -> anyhow::Result<Option<ConfirmConfig>> {
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
pub struct SwitchArgs {
    /// Controller or hypervisor address; switch i connects to port+i (or all to the same port with --same-port).
    #[arg(long)]
    pub connect: String,
    /// All switches connect to the same port.
    #[arg(long)]
    pub same_port: bool,
    #[arg(long, default_value_t = 1)]
    pub switches: usize,
    /// OpenFlow versions accepted, comma list.
    #[arg(long = "of", default_value = "1.3")]
    pub versions: String,
    /// PACKET_INs per second per switch (0: none).
    #[arg(long, default_value_t = 0.0)]
    pub packet_in_rate: f64,
    /// Schedule file for PACKET_IN generation instead of a constant rate.
    #[arg(long)]
    pub schedule: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    pub frame_size: usize,
    #[arg(long, default_value = "1")]
    pub nodelay: String,
    /// Folder for records.csv (PACKET_OUT arrivals) and summary.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 30.0)]
    pub setup_timeout: f64,
    #[command(flatten)]
    pub timing: Timing,
}

#[derive(Args)]
pub struct DpArgs {
    /// Interface attached to the switch port.
    #[arg(long)]
    pub iface: String,
    /// Probe frames per second per tenant to inject (0: do not inject).
    #[arg(long, default_value_t = 0.0)]
    pub inject_rate: f64,
    /// Tenant ids 0..N-1 to inject for.
    #[arg(long, default_value_t = 1)]
    pub tenants: u32,
    /// Capture probe frames arriving on the interface.
    #[arg(long)]
    pub capture: bool,
    #[arg(long, default_value_t = 64)]
    pub frame_size: usize,
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub timing: Timing,
}

#[derive(Args)]
pub struct ProxyArgs {
    /// Address switches connect to (repeatable; paired in order with --upstream).
    #[arg(long, required = true)]
    pub listen: Vec<String>,
    /// Controller address to relay to (repeatable).
    #[arg(long, required = true)]
    pub upstream: Vec<String>,
    /// Expand one listen/upstream pair into N pairs on consecutive ports.
    #[arg(long, default_value_t = 1)]
    pub ports: u16,
    /// TCP_NODELAY on both sides: 1/0.
    #[arg(long, default_value = "1")]
    pub nodelay: String,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub max_seconds: f64,
}

#[derive(Args)]
pub struct EchoPeerArgs {
    /// Address to listen on (port 0: any free port; the bound address is printed).
    #[arg(long, default_value = "127.0.0.1:6653")]
    pub listen: String,
    /// OpenFlow versions accepted, comma list.
    #[arg(long = "of", default_value = "1.0,1.3")]
    pub versions: String,
    #[arg(long, default_value = "1")]
    pub nodelay: String,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 600.0)]
    pub max_seconds: f64,
    /// Stop after serving this many connections.
    #[arg(long)]
    pub max_connections: Option<u64>,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Seconds per scenario.
    #[arg(long, default_value_t = 4.0)]
    pub duration: f64,
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    #[arg(long, default_value_t = 1.0)]
    pub cooldown: f64,
    #[arg(long = "of", default_value = "1.3")]
    pub version: Version,
    /// Fewer scenarios.
    #[arg(long)]
    pub quick: bool,
    #[arg(long, default_value_t = 0)]
    pub tenant_cpu: usize,
    #[arg(long, default_value_t = 1)]
    pub switch_cpu: usize,
    #[arg(long)]
    pub out: Option<PathBuf>,
}
