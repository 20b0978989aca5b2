//! The one clock every timestamp comes from: CLOCK_MONOTONIC in nanoseconds.
//!
//! It is system-wide, so timestamps taken by different perfbench processes
//! on the same host (a controller side and a data-plane side) compare directly.

/// Nanoseconds on CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Resolution of CLOCK_MONOTONIC in nanoseconds, as the kernel reports it.
pub fn resolution_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Seconds since the Unix epoch (for run metadata only, never for latency).
pub fn unix_time_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Asks the kernel for 1 ns timer slack on the calling thread, so sleeps end
/// when asked instead of up to 50 µs later (the default slack).
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and touches only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_fine_grained() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
        assert!(
            resolution_ns() <= 1_000,
            "clock resolution {} ns is coarser than 1 µs",
            resolution_ns()
        );
    }
}
