//! End-to-end runs on loopback against emulated switches: every message kind in both versions, and a step schedule.

mod common;

use common::{any, config, describe, one_at_a_time, rate_ok, spec};
use perfbench::codec::Version;
use perfbench::run::{self, Endpoints};
use perfbench::schedule::Schedule;
use perfbench::tenant::Kind;

#[test]
fn emulated_switch_all_kinds_both_versions() {
    let _serial = one_at_a_time();
    for v in [Version::V10, Version::V13] {
        let kinds = [
            Kind::Echo,
            Kind::Features,
            Kind::PortStats,
            Kind::Barrier,
            Kind::PacketOut,
            Kind::PacketIn,
        ];
        let tenants: Vec<_> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| spec(i as u32, *k, 2_000.0, v))
            .collect();
        let mut cfg = config(tenants, Endpoints::Listen(vec![any(); kinds.len()]), 1.0);
        cfg.emulate_switch = true;
        let dir = std::env::temp_dir().join(format!("pb-test-{}-{v}", std::process::id()));
        cfg.out_dir = Some(dir.clone());
        cfg.write_records = true;
        let r = run::run(&cfg).unwrap();
        let why = describe(&r);
        assert!(r.problems.is_empty(), "{why}");
        for s in &r.tenants {
            // 0.6 s window at 2k/s.
            assert_eq!(s.lost, 0, "OF {v} {}\n{why}", s.kind);
            assert!(
                rate_ok(s, 0.6),
                "OF {v} {}: sent {} in window, rate error {}\n{why}",
                s.kind,
                s.sent,
                s.rate_error
            );
            assert!(
                s.latency.p50_us > 0.0 && s.latency.p50_us < 5_000.0,
                "OF {v} {}: p50 {}",
                s.kind,
                s.latency.p50_us
            );
        }
        // The CSV has one row per message of the whole run, every one answered.
        let csv = std::fs::read_to_string(dir.join("records.csv")).unwrap();
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert_eq!(rows.len() as u64, r.records_written);
        assert!(rows.len() >= 6 * 2000, "{} rows", rows.len());
        assert!(
            rows.iter().all(|l| !l.contains(",,,")),
            "a message without answer in the CSV"
        );
        assert!(
            csv.contains("OFPT_PACKET_OUT")
                && csv.contains("DATA_PACKET")
                && csv.contains("OFPT_PACKET_IN")
        );
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
        assert_eq!(json["tenants"].as_array().unwrap().len(), 6);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn step_schedule_is_followed() {
    let _serial = one_at_a_time();
    let sched = Schedule::parse("0 2000\n0.5 6000\n", "test").unwrap();
    let mut t = spec(0, Kind::Echo, 1.0, Version::V13);
    t.schedule = sched;
    let mut cfg = config(vec![t], Endpoints::Listen(vec![any()]), 1.0);
    cfg.emulate_switch = true;
    cfg.warmup_s = 0.0;
    cfg.cooldown_s = 0.0;
    let r = run::run(&cfg).unwrap();
    let s = &r.tenants[0];
    // 0.5 s at 2k + 0.5 s at 6k.
    assert!(
        (3_900..=4_100).contains(&s.sent) || rate_ok(s, 1.0),
        "{}",
        describe(&r)
    );
    assert!((s.target_rate - 4_000.0).abs() < 1.0);
    assert_eq!(s.lost, 0);
}
