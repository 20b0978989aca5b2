use super::*;

const MS: u64 = 1_000_000;

fn cfg() -> ConfirmConfig {
    ConfirmConfig {
        probe_interval_ns: MS,
        max_probe_rate: 1e9,
        timeout_ns: 10 * MS,
    }
}

fn installed(rule: u32, sent_ns: u64) -> Installed {
    Installed { rule, sent_ns }
}

#[test]
fn probes_each_pending_rule_once_per_interval() {
    let mut t = Tracker::new(cfg(), 0);
    t.add(installed(1, 100), 100);
    t.add(installed(2, 200), 200);
    assert_eq!(t.next_probe(200), Some(1));
    assert_eq!(t.next_probe(200), Some(2));
    assert_eq!(t.next_probe(200), None, "both probed, next ones due later");
    assert_eq!(
        t.next_due(),
        Some(200 + MS),
        "re-queued one interval after the probe"
    );
    assert_eq!(t.next_probe(199 + MS), None, "never early");
    assert_eq!(t.forwarded(2, 150 + MS), Forwarded::Confirmed);
    // Rule 2 is confirmed: its queued probe is skipped.
    assert_eq!(t.next_probe(200 + MS), Some(1));
    assert_eq!(t.next_probe(200 + MS), None);
    assert_eq!(t.next_probe(200 + 2 * MS), Some(1));
    assert_eq!(t.probes_sent, 4);
}

#[test]
fn probe_rate_is_bounded() {
    let c = ConfirmConfig {
        max_probe_rate: 1_000.0,
        ..cfg()
    };
    let mut t = Tracker::new(c, 0);
    for r in 0..100 {
        t.add(installed(r, 0), 0);
    }
    let burst = std::iter::from_fn(|| t.next_probe(0)).count();
    assert_eq!(burst as f64, BURST);
    // 10 ms at 1000/s: ten more.
    let more = std::iter::from_fn(|| t.next_probe(10 * MS)).count();
    assert_eq!(more, 10);
    assert_eq!(t.max_probe_lateness_ns, 10 * MS, "held back by the budget");
    assert_eq!(t.next_due(), Some(11 * MS), "the next frame of budget");
}

#[test]
fn first_forwarded_frame_confirms_later_ones_are_counted() {
    let mut t = Tracker::new(cfg(), 0);
    t.add(installed(7, 1_000), 1_000);
    assert_eq!(t.forwarded(7, 5_000), Forwarded::Confirmed);
    assert_eq!(t.forwarded(7, 6_000), Forwarded::Again);
    assert_eq!(t.forwarded(8, 6_000), Forwarded::Unknown);
    assert_eq!(t.pending(), 0);
    let r = t.into_rules();
    assert_eq!(r[0].confirmed_ns, 5_000);
}

#[test]
fn rules_time_out_and_late_frames_do_not_confirm() {
    let mut t = Tracker::new(cfg(), 0);
    t.add(installed(1, 0), 0);
    t.add(installed(2, 5 * MS), 5 * MS);
    t.expire(10 * MS);
    assert_eq!(t.pending(), 1, "rule 1 timed out, rule 2 not yet");
    assert_eq!(t.forwarded(1, 10 * MS), Forwarded::Late);
    assert_eq!(t.forwarded(2, 10 * MS), Forwarded::Confirmed);
    let r = t.into_rules();
    assert_eq!((r[0].confirmed_ns, r[1].confirmed_ns), (0, 10 * MS));
}

#[test]
fn a_reused_source_port_makes_the_rule_ambiguous() {
    let mut t = Tracker::new(cfg(), 0);
    t.add(installed(5, 1), 1);
    t.add(installed(5 + 65_536, 2), 2);
    t.add(installed(6 + 65_536, 3), 3);
    t.add(installed(5 + 2 * 65_536, RULE_LIFETIME_NS + 2), 4);
    let amb: Vec<bool> = t.into_rules().iter().map(|r| r.ambiguous).collect();
    assert_eq!(amb, vec![false, true, false, false]);
}

#[test]
fn summary_counts_the_window_and_compares_with_the_barrier() {
    let rule = |n: u32, sent, confirmed, ambiguous| Confirmation {
        rule: n,
        sent_ns: sent,
        confirmed_ns: confirmed,
        probes: 1,
        ambiguous,
    };
    let c = ConfirmResult {
        rules: vec![
            rule(0, 50, 60, false),       // before the window
            rule(1, 100, 130, false),     // barrier at 120: before the data plane
            rule(2, 200, 210, false),     // barrier at 250: after
            rule(3, 300, 0, false),       // never forwarded
            rule(4, 400, 410, true),      // ambiguous
            rule(5, 1_000, 1_010, false), // after the window
        ],
        probes_sent: 9,
        ..ConfirmResult::default()
    };
    let barrier: Vec<Record> = [(50, 55), (100, 120), (200, 250), (300, 310), (400, 0)]
        .iter()
        .map(|&(req, resp)| Record {
            req_ns: req,
            resp_ns: resp,
            ..Record::default()
        })
        .collect();
    let w = Window {
        start_ns: 100,
        end_ns: 1_000,
    };
    let s = summarize(&c, &cfg(), &barrier, &w);
    assert_eq!(
        (s.rules, s.confirmed, s.unconfirmed, s.ambiguous),
        (4, 2, 1, 1)
    );
    assert_eq!(
        (s.barrier_before_dataplane, s.barrier_after_dataplane),
        (1, 1)
    );
    assert_eq!((s.latency.min_us, s.latency.max_us), (0.01, 0.03));
    let recs = records(&c, 14, 64);
    assert_eq!(recs.len(), 6);
    assert_eq!(recs[1].latency_ns(), Some(30));
    assert!(!recs[3].answered());
}
