//! A common start: every participant (tenant, switch, injector, capture)
//! finishes its setup, then all start at the same CLOCK_MONOTONIC instant.
//! A participant whose setup failed still arrives, so nobody waits forever,
//! and then everybody aborts.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub struct StartSync {
    barrier: Barrier,
    start_ns: AtomicU64,
    failed: AtomicBool,
}

/// Lead time between the last arrival and the common start.
const LEAD_NS: u64 = 20_000_000;

impl StartSync {
    pub fn new(parties: usize) -> StartSync {
        StartSync {
            barrier: Barrier::new(parties),
            start_ns: AtomicU64::new(0),
            failed: AtomicBool::new(false),
        }
    }

    /// Arrives at the start line. Returns the common start time, or `None`
    /// if any participant (this one included, when `ok` is false) failed.
    pub fn arrive(&self, ok: bool) -> Option<u64> {
        if !ok {
            self.failed.store(true, Ordering::SeqCst);
        }
        if self.barrier.wait().is_leader() {
            self.start_ns
                .store(crate::clock::now_ns() + LEAD_NS, Ordering::SeqCst);
        }
        self.barrier.wait();
        if self.failed.load(Ordering::SeqCst) {
            None
        } else {
            Some(self.start_ns.load(Ordering::SeqCst))
        }
    }

    /// Whether a participant reported a failed setup.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// The common start, once everyone has arrived (0 before).
    pub fn start_ns(&self) -> u64 {
        self.start_ns.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn all_get_the_same_start_or_all_abort() {
        let s = Arc::new(StartSync::new(3));
        let h: Vec<_> = (0..3)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || s.arrive(true))
            })
            .collect();
        let got: Vec<_> = h.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(got[0].is_some() && got.iter().all(|g| *g == got[0]));

        let s = Arc::new(StartSync::new(2));
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.arrive(false));
        assert_eq!(s.arrive(true), None);
        assert_eq!(t.join().unwrap(), None);
    }
}
