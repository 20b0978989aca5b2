//! End-to-end runs on loopback of the flow-mod kind: confirmed by BARRIER, and in the emulated data plane.

mod common;

use common::{any, config, describe, one_at_a_time, rate_ok, spec};
use perfbench::codec::Version;
use perfbench::flow_confirm::ConfirmConfig;
use perfbench::run::{self, Endpoints};
use perfbench::tenant::Kind;

#[test]
fn flow_mod_confirmed_by_barrier() {
    let _serial = one_at_a_time();
    for v in [Version::V10, Version::V13] {
        let mut cfg = config(
            vec![spec(0, Kind::FlowMod, 2_000.0, v)],
            Endpoints::Listen(vec![any()]),
            1.0,
        );
        cfg.emulate_switch = true;
        let r = run::run(&cfg).unwrap();
        let (s, why) = (&r.tenants[0], describe(&r));
        assert!(r.problems.is_empty() && s.errors == 0, "{why}");
        assert_eq!(s.lost, 0, "every FLOW_MOD's barrier answered\n{why}");
        assert!(rate_ok(s, 0.6) && s.latency.p50_us > 0.0, "{why}");
    }
}

/// The emulated switch forwards a rule's probes once its FLOW_MOD is
/// processed: every rule is confirmed in the data plane. Only counts are
/// asserted; the generous timeout keeps a descheduled thread from turning
/// into "unconfirmed" on a loaded machine.
#[test]
fn flow_mod_confirmed_in_the_emulated_data_plane() {
    let _serial = one_at_a_time();
    let dir = std::env::temp_dir().join(format!("pb-flowconfirm-{}", std::process::id()));
    for v in [Version::V10, Version::V13] {
        let mut cfg = config(
            vec![spec(0, Kind::FlowMod, 500.0, v)],
            Endpoints::Listen(vec![any()]),
            1.0,
        );
        cfg.emulate_switch = true;
        cfg.out_dir = Some(dir.clone());
        cfg.write_records = true;
        let c = ConfirmConfig {
            probe_interval_ns: 200_000,
            max_probe_rate: 20_000.0,
            timeout_ns: 5_000_000_000,
        };
        let r = run::run_with(&cfg, Some(c)).unwrap();
        let (s, why) = (&r.tenants[0], describe(&r));
        let f = s.flow_insertion.as_ref().expect("flow insertion reported");
        assert!(
            r.problems.is_empty() && s.errors == 0 && s.lost == 0,
            "{why}"
        );
        assert_eq!(f.rules, s.sent, "{why}");
        assert_eq!(
            (f.confirmed, f.unconfirmed, f.ambiguous),
            (f.rules, 0, 0),
            "{why}"
        );
        assert_eq!(f.latency.count, f.confirmed);
        assert_eq!(
            f.barrier_before_dataplane + f.barrier_after_dataplane,
            f.confirmed
        );
        assert!(f.latency.min_us > 0.0 && f.probes_sent >= f.rules, "{why}");
        // One CSV row per rule of the whole run, all answered by a DATA_PACKET.
        let csv = std::fs::read_to_string(dir.join("flow_insertion.csv")).unwrap();
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert!(rows.len() as u64 >= f.rules, "{csv}");
        assert!(
            rows.iter()
                .all(|l| l.contains(",OFPT_FLOW_MOD,") && l.contains(",DATA_PACKET,"))
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
