//! Paces sends on CLOCK_MONOTONIC: sleep (or wait for input) until shortly
//! before the next message is due, then spin the rest of the way. The spin
//! margin absorbs the kernel's wake-up latency, so messages leave within a
//! few microseconds of their due time without burning a core at low rates.

use crate::clock::now_ns;
use crate::schedule::Schedule;
use std::os::fd::RawFd;

use std::sync::atomic::{AtomicU64, Ordering};

/// Default spin margin: sleeps end this long before a deadline, and the rest is spun.
pub const DEFAULT_SPIN_NS: u64 = 60_000;

static SPIN_NS: AtomicU64 = AtomicU64::new(DEFAULT_SPIN_NS);

/// Sets the spin margin for the whole process. 0 never spins: every wait
/// sleeps (less CPU taken from a system under test on the same machine, at
/// the price of sends leaving up to a wake-up latency late).
pub fn set_spin_ns(ns: u64) {
    SPIN_NS.store(ns, Ordering::Relaxed);
}

#[inline]
pub fn spin_ns() -> u64 {
    SPIN_NS.load(Ordering::Relaxed)
}

pub struct Pacer {
    schedule: Schedule,
    start_ns: u64,
    end_ns: u64,
    next: u64,
    next_due_abs: Option<u64>,
    /// Histogram of send lateness (actual send time - due time) in µs; the last bucket is overflow.
    pub lateness_us: Vec<u64>,
    pub lateness_max_ns: u64,
    pub lateness_sum_ns: u128,
}

const LATENESS_BUCKETS: usize = 100_001;

impl Pacer {
    /// Paces messages due in [start, end).
    pub fn new(schedule: Schedule, start_ns: u64, end_ns: u64) -> Pacer {
        let mut p = Pacer {
            schedule,
            start_ns,
            end_ns,
            next: 0,
            next_due_abs: None,
            lateness_us: vec![0; LATENESS_BUCKETS],
            lateness_max_ns: 0,
            lateness_sum_ns: 0,
        };
        p.next_due_abs = p.due_abs(0);
        p
    }

    fn due_abs(&self, n: u64) -> Option<u64> {
        self.schedule
            .due_ns(n)
            .map(|d| self.start_ns + d)
            .filter(|&t| t < self.end_ns)
    }

    /// Sequence number of the next message.
    pub fn sent(&self) -> u64 {
        self.next
    }

    /// Absolute due time of the next message, `None` when the schedule is done.
    #[inline]
    pub fn next_due(&self) -> Option<u64> {
        self.next_due_abs
    }

    /// If the next message is due at `now`, claims it: returns its sequence
    /// number and records its lateness against `sent_at`.
    #[inline]
    pub fn take_due(&mut self, now: u64, sent_at: u64) -> Option<u64> {
        let due = self.next_due_abs?;
        if due > now {
            return None;
        }
        let late = sent_at.saturating_sub(due);
        let b = ((late / 1000) as usize).min(LATENESS_BUCKETS - 1);
        self.lateness_us[b] += 1;
        self.lateness_sum_ns += late as u128;
        self.lateness_max_ns = self.lateness_max_ns.max(late);
        let n = self.next;
        self.next += 1;
        self.next_due_abs = self.due_abs(self.next);
        Some(n)
    }

    /// Lateness percentile in µs (bucket upper bound), from the histogram.
    pub fn lateness_percentile_us(&self, p: f64) -> f64 {
        let total: u64 = self.lateness_us.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((p * total as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, c) in self.lateness_us.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return (i + 1) as f64;
            }
        }
        LATENESS_BUCKETS as f64
    }
}

/// Waits until `deadline_ns` (CLOCK_MONOTONIC) or until `fd` becomes readable.
/// Returns true if `fd` is (probably) readable. Sleeps through most of the
/// wait and spins the last [`spin_ns`].
pub fn wait_until(deadline_ns: u64, fd: Option<RawFd>) -> bool {
    loop {
        let now = now_ns();
        if now >= deadline_ns {
            return false;
        }
        let left = deadline_ns - now;
        let spin = spin_ns();
        if left > spin {
            let sleep = left - spin;
            let ts = libc::timespec {
                tv_sec: (sleep / 1_000_000_000) as libc::time_t,
                tv_nsec: (sleep % 1_000_000_000) as libc::c_long,
            };
            match fd {
                Some(fd) => {
                    let mut pfd = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
                    let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
                    if r > 0 {
                        return true;
                    }
                }
                None => {
                    // SAFETY: nanosleep reads a valid timespec; an interrupted sleep just loops.
                    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
                }
            }
        } else {
            while now_ns() < deadline_ns {
                std::hint::spin_loop();
            }
            return false;
        }
    }
}

/// Blocks until `fd` is readable or `timeout_ns` passes; true if readable.
pub fn poll_readable(fd: RawFd, timeout_ns: u64) -> bool {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd and a valid timespec.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) > 0 }
}

/// Blocks until `fd` is readable or writable, or `timeout_ns` passes (used
/// while a send backlog waits for room in the socket, instead of spinning).
pub fn poll_read_write(fd: RawFd, timeout_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd and a valid timespec.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
}

/// In an event loop: if `deadline_ns` is far, sleep in ppoll on `fd` until
/// [`spin_ns`] before it (or until input arrives); if near, return at once so
/// the caller busy-polls, reading input as soon as it comes.
#[inline]
pub fn idle(deadline_ns: u64, fd: RawFd) {
    let now = now_ns();
    let spin = spin_ns();
    if deadline_ns > now + spin {
        poll_readable(fd, deadline_ns - now - spin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pacing logic on a virtual clock: which message is due when does
    /// not depend on how the OS schedules the test, so it is checked exactly.
    #[test]
    fn paces_a_constant_rate() {
        let rate = 20_000.0;
        let (start, dur) = (1_000_000u64, 300_000_000u64);
        let mut p = Pacer::new(Schedule::constant(rate).unwrap(), start, start + dur);
        let mut stamps = Vec::new();
        while let Some(due) = p.next_due() {
            // Each message is claimed exactly at its due time, never before.
            assert_eq!(p.take_due(due - 1, due - 1), None, "claimed before due");
            assert!(p.take_due(due, due).is_some());
            stamps.push(due);
        }
        assert_eq!(stamps.len(), 6000, "messages due in 0.3 s at 20k/s");
        let inside = stamps
            .iter()
            .filter(|&&t| t >= start + 50_000_000 && t < start + 250_000_000)
            .count();
        assert_eq!(inside, 4000, "20k/s over 200 ms");
        assert_eq!(p.lateness_max_ns, 0);
    }

    /// Real time: waits end at or after their deadline, whatever the load
    /// (how late they end depends on the machine's other work, so it is
    /// measured by `perfbench bench`, not asserted here).
    #[test]
    fn wait_until_never_returns_early() {
        crate::clock::tighten_timer_slack();
        for wait_ns in [0u64, 10_000, 100_000, 2_000_000] {
            let deadline = now_ns() + wait_ns;
            assert!(!wait_until(deadline, None));
            assert!(
                now_ns() >= deadline,
                "returned before a {wait_ns} ns deadline"
            );
        }
    }

    #[test]
    fn lateness_histogram() {
        let mut p = Pacer::new(Schedule::constant(1000.0).unwrap(), 0, 10_000_000);
        assert_eq!(p.take_due(0, 0), Some(0));
        assert_eq!(
            p.take_due(500_000, 500_000),
            None,
            "message 1 is not due before 1 ms"
        );
        assert_eq!(p.take_due(1_000_000, 1_004_500), Some(1));
        assert_eq!(p.lateness_max_ns, 4_500);
        assert_eq!(p.lateness_percentile_us(1.0), 5.0);
        assert_eq!(p.lateness_percentile_us(0.5), 1.0);
    }
}
