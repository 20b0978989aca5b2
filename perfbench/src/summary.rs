//! Per-tenant summaries over the measured window (warm-up and cool-down cut).

use crate::record::Record;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Window {
    /// The run [start, start+duration) with `warmup` cut from its start and `cooldown` from its end.
    pub fn trimmed(start_ns: u64, duration_s: f64, warmup_s: f64, cooldown_s: f64) -> Window {
        let s = start_ns + (warmup_s * 1e9) as u64;
        let e = start_ns + ((duration_s - cooldown_s).max(warmup_s) * 1e9) as u64;
        Window {
            start_ns: s,
            end_ns: e,
        }
    }

    pub fn seconds(&self) -> f64 {
        (self.end_ns.saturating_sub(self.start_ns)) as f64 / 1e9
    }

    #[inline]
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start_ns && t < self.end_ns
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub p1_us: f64,
    pub p10_us: f64,
    pub p25_us: f64,
    pub p50_us: f64,
    pub p75_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl LatencyStats {
    pub fn from_ns(mut v: Vec<u64>) -> LatencyStats {
        if v.is_empty() {
            return LatencyStats::default();
        }
        v.sort_unstable();
        let us = |ns: u64| ns as f64 / 1000.0;
        let sum: u128 = v.iter().map(|&x| x as u128).sum();
        LatencyStats {
            count: v.len() as u64,
            min_us: us(v[0]),
            mean_us: sum as f64 / v.len() as f64 / 1000.0,
            p1_us: us(percentile(&v, 0.01)),
            p10_us: us(percentile(&v, 0.10)),
            p25_us: us(percentile(&v, 0.25)),
            p50_us: us(percentile(&v, 0.50)),
            p75_us: us(percentile(&v, 0.75)),
            p90_us: us(percentile(&v, 0.90)),
            p99_us: us(percentile(&v, 0.99)),
            p999_us: us(percentile(&v, 0.999)),
            max_us: us(*v.last().unwrap()),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TenantSummary {
    pub tenant: u32,
    pub kind: String,
    pub target_rate: f64,
    /// Requests sent with a send time inside the window.
    pub sent: u64,
    /// Of those, how many were answered (or arrived at the receiver).
    pub answered: u64,
    pub lost: u64,
    pub loss_ratio: f64,
    pub achieved_rate: f64,
    pub rate_error: f64,
    pub reply_rate: f64,
    pub latency: LatencyStats,
    pub send_lateness_p50_us: f64,
    pub send_lateness_p99_us: f64,
    pub send_lateness_max_us: f64,
    /// True when another process receives this tenant's messages (PACKET_OUT
    /// with `--external-dp`): latency and losses are in that process's report.
    pub measured_elsewhere: bool,
    /// Most bytes queued in perfbench because the socket was full (0: the peer kept up).
    pub max_send_backlog_bytes: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Flow-mod with data-plane confirmation: FLOW_MOD → first packet the rule
    /// forwarded (`latency` above stays FLOW_MOD → BARRIER_REPLY).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_insertion: Option<crate::flow_confirm::FlowInsertionSummary>,
}

/// Summarises one tenant's records inside `w`. Requests sent after the window
/// ends are not counted; answered ones inside it count wherever the answer fell.
pub fn summarize(
    tenant: u32,
    kind: &str,
    target_rate: f64,
    recs: &[Record],
    w: &Window,
) -> TenantSummary {
    let mut lat = Vec::with_capacity(recs.len());
    let mut sent = 0u64;
    let mut answered_in = 0u64;
    for r in recs.iter().filter(|r| w.contains(r.req_ns)) {
        sent += 1;
        if let Some(l) = r.latency_ns() {
            lat.push(l);
            if w.contains(r.resp_ns) {
                answered_in += 1;
            }
        }
    }
    let secs = w.seconds();
    let answered = lat.len() as u64;
    let achieved = if secs > 0.0 { sent as f64 / secs } else { 0.0 };
    TenantSummary {
        tenant,
        kind: kind.to_string(),
        target_rate,
        sent,
        answered,
        lost: sent - answered,
        loss_ratio: if sent > 0 {
            (sent - answered) as f64 / sent as f64
        } else {
            0.0
        },
        achieved_rate: achieved,
        rate_error: if target_rate > 0.0 {
            (achieved - target_rate) / target_rate
        } else {
            0.0
        },
        reply_rate: if secs > 0.0 {
            answered_in as f64 / secs
        } else {
            0.0
        },
        latency: LatencyStats::from_ns(lat),
        ..TenantSummary::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(req: u64, resp: u64) -> Record {
        Record {
            req_ns: req,
            resp_ns: resp,
            ..Record::default()
        }
    }

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&[7], 0.9), 7);
    }

    #[test]
    fn window_trims_and_counts_losses() {
        let w = Window::trimmed(0, 10.0, 2.0, 3.0);
        assert_eq!((w.start_ns, w.end_ns), (2_000_000_000, 7_000_000_000));
        // One request per 100 ms for 10 s; every 10th lost; latency 5 µs.
        let recs: Vec<Record> = (0..100u64)
            .map(|i| {
                let t = i * 100_000_000;
                rec(t, if i % 10 == 0 { 0 } else { t + 5_000 })
            })
            .collect();
        let s = summarize(1, "echo", 10.0, &recs, &w);
        assert_eq!(s.sent, 50);
        assert_eq!(s.lost, 5);
        assert_eq!(s.answered, 45);
        assert!((s.achieved_rate - 10.0).abs() < 1e-9);
        assert_eq!(s.latency.p99_us, 5.0);
        assert!(s.rate_error.abs() < 1e-12);
    }
}
