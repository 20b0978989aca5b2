//! Per-slice isolation: a token bucket on the tenant's control messages and
//! a quota on the flow-table entries it holds.

use crate::fields::Fields;
use std::collections::HashSet;

/// Messages per second with a burst; rate 0 = unlimited.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    pub fn new(rate: f64, burst: Option<f64>, now_ns: u64) -> TokenBucket {
        let burst = burst.unwrap_or((rate / 10.0).max(1.0));
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            last_ns: now_ns,
        }
    }

    pub fn unlimited(&self) -> bool {
        self.rate <= 0.0
    }

    fn refill(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns) as f64 / 1e9;
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        self.last_ns = now_ns;
    }

    /// Takes one token if there is one.
    pub fn take(&mut self, now_ns: u64) -> bool {
        if self.unlimited() {
            return true;
        }
        self.refill(now_ns);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// When the next token will be there (now if there is one).
    pub fn next_token_ns(&self, now_ns: u64) -> u64 {
        if self.unlimited() || self.tokens >= 1.0 {
            return now_ns;
        }
        let wait = (1.0 - self.tokens) / self.rate;
        self.last_ns.max(now_ns) + (wait * 1e9).ceil() as u64
    }

    /// Keeps the level, takes a new rate and burst (configuration reload).
    pub fn reconfigure(&mut self, rate: f64, burst: Option<f64>, now_ns: u64) {
        self.refill(now_ns);
        self.rate = rate;
        self.burst = burst.unwrap_or((rate / 10.0).max(1.0));
        self.tokens = self.tokens.min(self.burst);
    }
}

/// A flow as the switch identifies it for strict operations.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub fields: Fields,
    /// Match parts the flowspace does not model, in wire form.
    pub rest: Vec<u8>,
    pub priority: u16,
}

/// The flows a slice holds on one switch, as far as the hypervisor knows
/// (its FLOW_MODs and the switch's FLOW_REMOVED notices).
#[derive(Debug, Default)]
pub struct FlowTable {
    flows: HashSet<FlowKey>,
    /// Keys whose FLOW_REMOVED the tenant asked for (others are swallowed).
    wants_removed: HashSet<FlowKey>,
}

impl FlowTable {
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Whether adding `keys` keeps the table within `quota` (0 = unlimited).
    pub fn admits(&self, keys: &[FlowKey], quota: usize) -> bool {
        let new = keys.iter().filter(|k| !self.flows.contains(k)).count();
        quota == 0 || self.flows.len() + new <= quota
    }

    pub fn add(&mut self, key: FlowKey, wants_removed: bool) {
        if wants_removed {
            self.wants_removed.insert(key.clone());
        } else {
            self.wants_removed.remove(&key);
        }
        self.flows.insert(key);
    }

    /// Strict delete (or a FLOW_REMOVED): returns whether the tenant wants to hear of it.
    pub fn remove(&mut self, key: &FlowKey) -> bool {
        self.flows.remove(key);
        self.wants_removed.remove(key)
    }

    /// Non-strict delete: every flow within `pattern` (and, when the pattern
    /// has unmodeled parts, only flows with exactly those parts).
    pub fn remove_within(&mut self, pattern: &FlowKey) {
        let gone: Vec<FlowKey> = self
            .flows
            .iter()
            .filter(|k| {
                k.fields.is_within(&pattern.fields)
                    && (pattern.rest.is_empty() || pattern.rest == k.rest)
            })
            .cloned()
            .collect();
        for k in gone {
            self.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_limits_the_rate_after_the_burst() {
        let mut b = TokenBucket::new(1000.0, Some(10.0), 0);
        let burst = (0..100).filter(|_| b.take(0)).count();
        assert_eq!(burst, 10);
        assert_eq!(b.next_token_ns(0), 1_000_000);
        // One second later: 1000 more tokens, capped at the burst of 10.
        let mut got = 0;
        for i in 0..2000u64 {
            if b.take(i * 500_000) {
                got += 1;
            }
        }
        assert!((999..=1011).contains(&got), "{got} in 1 s at 1000/s");
        let mut free = TokenBucket::new(0.0, None, 0);
        assert!((0..10_000).all(|_| free.take(0)));
    }

    fn key(port: u32, prio: u16) -> FlowKey {
        FlowKey {
            fields: Fields {
                in_port: Some(port),
                vlan: Some(10),
                ..Fields::default()
            },
            rest: vec![],
            priority: prio,
        }
    }

    #[test]
    fn quota_counts_distinct_flows() {
        let mut t = FlowTable::default();
        assert!(t.admits(&[key(1, 1), key(2, 1)], 2));
        t.add(key(1, 1), false);
        t.add(key(2, 1), true);
        assert!(
            t.admits(&[key(1, 1)], 2),
            "re-adding an existing flow is free"
        );
        assert!(!t.admits(&[key(3, 1)], 2));
        assert!(t.admits(&[key(3, 1)], 0), "0 = no quota");
        assert!(t.remove(&key(2, 1)), "the tenant asked for FLOW_REMOVED");
        assert!(!t.remove(&key(1, 1)));
        t.add(key(1, 1), false);
        t.add(key(1, 2), false);
        t.add(key(2, 2), false);
        let all_vlan10 = FlowKey {
            fields: Fields {
                vlan: Some(10),
                ..Fields::default()
            },
            rest: vec![],
            priority: 0,
        };
        t.remove_within(&FlowKey {
            fields: Fields {
                in_port: Some(1),
                ..all_vlan10.fields.clone()
            },
            ..all_vlan10.clone()
        });
        assert_eq!(t.len(), 1);
        t.remove_within(&all_vlan10);
        assert!(t.is_empty());
    }
}
