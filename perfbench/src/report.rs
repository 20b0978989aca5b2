//! What a run reports: its parameters, per-tenant summaries, totals, CPU
//! time and problems (serialised as summary.json).

use crate::codec::Version;
use crate::cpu::CpuUsage;
use crate::kind::Kind;
use crate::schedule::Step;
use crate::summary::{LatencyStats, TenantSummary, Window};
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct TenantParams {
    pub id: u32,
    pub kind: Kind,
    pub version: Version,
    pub nodelay: bool,
    pub schedule: Vec<Step>,
    pub size: usize,
    pub endpoint: String,
}

#[derive(Debug, Serialize)]
pub struct Params {
    pub duration_s: f64,
    pub warmup_s: f64,
    pub cooldown_s: f64,
    pub drain_s: f64,
    pub mode: &'static str,
    pub emulate_switch: bool,
    pub inject_iface: Option<String>,
    pub capture_iface: Option<String>,
    pub external_dp: bool,
    pub cpu_pids: Vec<u32>,
    pub tenants: Vec<TenantParams>,
}

#[derive(Debug, Default, Serialize)]
pub struct Totals {
    pub tenants: usize,
    pub sent: u64,
    pub answered: u64,
    pub lost: u64,
    pub achieved_rate: f64,
    pub target_rate: f64,
    pub latency: LatencyStats,
}

#[derive(Debug, Serialize)]
pub struct RunReport {
    pub label: String,
    pub tool: String,
    pub started_unix_s: f64,
    pub clock: &'static str,
    pub clock_resolution_ns: u64,
    pub parameters: Params,
    pub window: Window,
    pub window_seconds: f64,
    pub tenants: Vec<TenantSummary>,
    pub totals: Totals,
    pub cpu: Vec<CpuUsage>,
    pub problems: Vec<String>,
    pub records_csv: Option<String>,
    pub records_written: u64,
    /// Flow-mod tenants with data-plane confirmation: FLOW_MOD → first forwarded packet, per rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_insertion_csv: Option<String>,
}
