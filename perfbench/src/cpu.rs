//! CPU time of a process from /proc/PID/stat (utime + stime of all its threads).

use anyhow::{Context, bail};
use serde::Serialize;

/// utime + stime of `pid`, in seconds.
pub fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {path} (is PID {pid} running?)"))?;
    parse_stat(&text).with_context(|| format!("unexpected format of {path}"))
}

/// Parses utime and stime (fields 14 and 15) from the text of /proc/PID/stat.
pub fn parse_stat(text: &str) -> anyhow::Result<f64> {
    // The command name (field 2) is in parentheses and may itself contain ") ".
    let close = text.rfind(')').context("no ')' after the command name")?;
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // fields[0] is field 3 (state), so utime (14) is fields[11] and stime (15) fields[12].
    if fields.len() < 13 {
        bail!("only {} fields after the command name", fields.len());
    }
    let utime: u64 = fields[11].parse().context("utime is not a number")?;
    let stime: u64 = fields[12].parse().context("stime is not a number")?;
    Ok((utime + stime) as f64 / clock_ticks_per_second())
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

#[derive(Debug, Clone, Serialize)]
pub struct CpuUsage {
    pub pid: u32,
    pub cpu_seconds: f64,
    pub window_seconds: f64,
    /// Percent of one core over the window.
    pub percent_of_core: f64,
    pub error: Option<String>,
}

/// Samples the CPU time of each PID at `start_ns` and `end_ns` (CLOCK_MONOTONIC)
/// on a thread of its own.
pub fn monitor(
    pids: Vec<u32>,
    start_ns: u64,
    end_ns: u64,
) -> std::thread::JoinHandle<Vec<CpuUsage>> {
    std::thread::spawn(move || {
        crate::pacer::wait_until(start_ns, None);
        let a: Vec<_> = pids
            .iter()
            .map(|&p| (crate::clock::now_ns(), cpu_seconds(p)))
            .collect();
        crate::pacer::wait_until(end_ns, None);
        pids.iter()
            .zip(a)
            .map(|(&pid, (t0, c0))| {
                let t1 = crate::clock::now_ns();
                let window = (t1 - t0) as f64 / 1e9;
                match (c0, cpu_seconds(pid)) {
                    (Ok(c0), Ok(c1)) => CpuUsage {
                        pid,
                        cpu_seconds: c1 - c0,
                        window_seconds: window,
                        percent_of_core: 100.0 * (c1 - c0) / window,
                        error: None,
                    },
                    (Err(e), _) | (_, Err(e)) => CpuUsage {
                        pid,
                        cpu_seconds: 0.0,
                        window_seconds: window,
                        percent_of_core: 0.0,
                        error: Some(format!("{e:#}")),
                    },
                }
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_parens_and_spaces() {
        let t =
            "1234 (a) b (c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 1 0 100 0 0\n";
        let want = 400.0 / clock_ticks_per_second();
        assert!((parse_stat(t).unwrap() - want).abs() < 1e-9);
        assert!(parse_stat("1 (x) S 1 2").is_err());
    }

    #[test]
    fn own_cpu_time_grows_while_spinning() {
        // Spin until the kernel has charged this process 150 ms of CPU (by
        // its own CPU clock), however long that takes on a loaded machine:
        // /proc must then show at least that much more, minus a tick.
        let cpu_clock = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes one valid timespec.
            unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
        };
        let me = std::process::id();
        let a = cpu_seconds(me).unwrap();
        let start = cpu_clock();
        let wall = std::time::Instant::now();
        let mut x = 0u64;
        while cpu_clock() - start < 0.15 && wall.elapsed().as_secs() < 30 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let b = cpu_seconds(me).unwrap();
        let tick = 1.0 / clock_ticks_per_second();
        assert!(
            b - a >= 0.15 - 2.0 * tick,
            "150 ms of CPU spent, /proc/PID/stat shows {:.3} s more",
            b - a
        );
        assert!(
            cpu_seconds(u32::MAX)
                .unwrap_err()
                .to_string()
                .contains("is PID")
        );
    }
}
