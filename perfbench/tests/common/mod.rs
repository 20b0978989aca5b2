//! What the loopback tests share: one run at a time, tenant and run
//! configurations, and how a report is judged and described.
// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use perfbench::codec::Version;
use perfbench::run::{Endpoints, RunConfig, RunReport};
use perfbench::schedule::Schedule;
use perfbench::summary::TenantSummary;
use perfbench::tenant::{Kind, TenantSpec};
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};

/// Every loopback test measures rates and latencies in real time with several
/// pacing (partly spinning) threads; run in parallel on a 2-core machine they
/// take the CPU from each other and each measures the others' load. One at a
/// time: this lock serializes the tests of one file, and cargo runs the test
/// files (each its own binary) one after another.
static TIMING: Mutex<()> = Mutex::new(());

pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    TIMING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

pub fn spec(id: u32, kind: Kind, rate: f64, v: Version) -> TenantSpec {
    TenantSpec {
        id,
        kind,
        schedule: Schedule::constant(rate).unwrap(),
        nodelay: true,
        version: v,
        out_port: 1,
        size: 64,
        install_table_miss: false,
    }
}

pub fn config(tenants: Vec<TenantSpec>, endpoints: Endpoints, duration: f64) -> RunConfig {
    RunConfig {
        label: "test".into(),
        tenants,
        endpoints,
        duration_s: duration,
        warmup_s: 0.2,
        cooldown_s: 0.2,
        drain_s: 0.5,
        setup_timeout_s: 5.0,
        emulate_switch: false,
        inject_iface: None,
        capture_iface: None,
        cpu_pids: vec![],
        out_dir: None,
        write_records: false,
        pin_tenants: None,
        pin_switches: None,
        announce: false,
        external_dp: false,
    }
}

/// A window counts the messages *sent* in it: a thread descheduled for `d`
/// at a window edge moves up to rate x `d` messages across the edge, and the
/// tenant reports that as send lateness. So the rate must be within 3 % plus
/// what the largest lateness explains (a load-independent bound).
pub fn rate_ok(s: &TenantSummary, window_s: f64) -> bool {
    s.rate_error.abs() <= 0.03 + s.send_lateness_max_us / 1e6 / window_s
}

pub fn describe(r: &RunReport) -> String {
    serde_json::to_string_pretty(&r.tenants).unwrap() + &format!("\nproblems: {:?}", r.problems)
}
