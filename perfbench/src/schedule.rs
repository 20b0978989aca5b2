//! Message-rate schedules: a constant rate, or piecewise-constant steps read
//! from a file of `(time, rate)` lines.
//!
//! Message `n` (0-based) is due at the time where the integral of the rate
//! reaches `n`, so the first message goes at once and a constant rate R
//! sends exactly floor(R·T) messages in [0, T).

use anyhow::{Context, bail};
use std::path::Path;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Step {
    /// Start of this step, seconds after the run starts.
    pub at_s: f64,
    /// Messages per second from `at_s` until the next step.
    pub rate: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Schedule {
    steps: Vec<Step>,
    /// Messages due before each step starts (same length as `steps`).
    #[serde(skip)]
    before: Vec<f64>,
}

/// The highest rate a schedule may ask for (one message per 100 ns).
pub const MAX_RATE: f64 = 10_000_000.0;

impl Schedule {
    pub fn constant(rate: f64) -> anyhow::Result<Schedule> {
        Schedule::from_steps(vec![Step { at_s: 0.0, rate }])
    }

    pub fn from_steps(mut steps: Vec<Step>) -> anyhow::Result<Schedule> {
        if steps.is_empty() {
            bail!("a schedule needs at least one (time, rate) step");
        }
        for (i, s) in steps.iter().enumerate() {
            if !(s.rate.is_finite() && (0.0..=MAX_RATE).contains(&s.rate)) {
                bail!(
                    "step {}: rate {} is not within 0..={MAX_RATE} messages/s",
                    i + 1,
                    s.rate
                );
            }
            if !(s.at_s.is_finite() && s.at_s >= 0.0) {
                bail!(
                    "step {}: time {} s is not a finite non-negative number",
                    i + 1,
                    s.at_s
                );
            }
            if i > 0 && s.at_s <= steps[i - 1].at_s {
                bail!(
                    "step {}: time {} s is not after the previous step's {} s (times must increase)",
                    i + 1,
                    s.at_s,
                    steps[i - 1].at_s
                );
            }
        }
        if steps[0].at_s > 0.0 {
            steps.insert(
                0,
                Step {
                    at_s: 0.0,
                    rate: 0.0,
                },
            );
        }
        let mut before = Vec::with_capacity(steps.len());
        let mut acc = 0.0;
        for (i, s) in steps.iter().enumerate() {
            if i > 0 {
                let p = &steps[i - 1];
                acc += p.rate * (s.at_s - p.at_s);
            }
            before.push(acc);
        }
        Ok(Schedule { steps, before })
    }

    /// Parses lines `TIME RATE` (seconds, messages/s; separated by blanks or a
    /// comma). Blank lines and `#` comments are skipped.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Schedule> {
        let mut steps = Vec::new();
        for (no, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let parts: Vec<&str> = line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|p| !p.is_empty())
                .collect();
            if parts.len() != 2 {
                bail!(
                    "{origin}:{}: expected 'TIME RATE' (two numbers), got '{line}'",
                    no + 1
                );
            }
            let num = |s: &str, what: &str| -> anyhow::Result<f64> {
                s.parse::<f64>().map_err(|_| {
                    anyhow::anyhow!("{origin}:{}: {what} '{s}' is not a number", no + 1)
                })
            };
            steps.push(Step {
                at_s: num(parts[0], "time")?,
                rate: num(parts[1], "rate")?,
            });
        }
        Schedule::from_steps(steps).with_context(|| format!("in schedule {origin}"))
    }

    pub fn from_file(path: &Path) -> anyhow::Result<Schedule> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read schedule file {}", path.display()))?;
        Schedule::parse(&text, &path.display().to_string())
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Time, in ns after the start, at which message `n` is due; `None` if the
    /// schedule never reaches it.
    #[inline]
    pub fn due_ns(&self, n: u64) -> Option<u64> {
        let n = n as f64;
        // Fast path: a single constant step.
        if self.steps.len() == 1 {
            let r = self.steps[0].rate;
            return (r > 0.0).then(|| (n / r * 1e9) as u64);
        }
        let k = self.before.partition_point(|&b| b <= n).saturating_sub(1);
        for i in k..self.steps.len() {
            let s = &self.steps[i];
            if s.rate <= 0.0 {
                continue;
            }
            let end = self.before.get(i + 1).copied().unwrap_or(f64::INFINITY);
            if n < end {
                let base = self.before[i].max(0.0);
                let t = s.at_s + (n - base).max(0.0) / s.rate;
                return Some((t * 1e9) as u64);
            }
        }
        None
    }

    /// How many messages are due in [0, `t_s`).
    pub fn count_before(&self, t_s: f64) -> u64 {
        let mut acc = 0.0;
        for (i, s) in self.steps.iter().enumerate() {
            if s.at_s >= t_s {
                break;
            }
            let end = self.steps.get(i + 1).map_or(t_s, |n| n.at_s.min(t_s));
            acc += s.rate * (end - s.at_s);
        }
        acc.ceil() as u64
    }

    /// Mean rate over [a_s, b_s).
    pub fn mean_rate(&self, a_s: f64, b_s: f64) -> f64 {
        if b_s <= a_s {
            return 0.0;
        }
        (self.count_before(b_s) as f64 - self.count_before(a_s) as f64) / (b_s - a_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_spacing() {
        let s = Schedule::constant(1000.0).unwrap();
        assert_eq!(s.due_ns(0), Some(0));
        assert_eq!(s.due_ns(1), Some(1_000_000));
        assert_eq!(s.due_ns(1500), Some(1_500_000_000));
        assert_eq!(s.count_before(2.0), 2000);
        assert_eq!(Schedule::constant(0.0).unwrap().due_ns(0), None);
    }

    #[test]
    fn steps_from_text() {
        let s = Schedule::parse("# t rate\n0 100\n1.0, 1000\n2 0\n3 10 # tail\n", "t").unwrap();
        assert_eq!(s.due_ns(99), Some(990_000_000));
        assert_eq!(s.due_ns(100), Some(1_000_000_000));
        assert_eq!(s.due_ns(1099), Some(1_999_000_000));
        // Nothing is due while the rate is 0 between 2 s and 3 s.
        assert_eq!(s.due_ns(1100), Some(3_000_000_000));
        assert_eq!(s.count_before(2.5), 1100);
        assert!((s.mean_rate(0.0, 2.0) - 550.0).abs() < 1e-9);
    }

    #[test]
    fn late_first_step_means_silence_before_it() {
        let s = Schedule::parse("2 10\n", "t").unwrap();
        assert_eq!(s.due_ns(0), Some(2_000_000_000));
    }

    #[test]
    fn errors_name_the_line() {
        let e = Schedule::parse("0 10\n1 abc\n", "f.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.txt:2") && e.contains("abc"), "{e}");
        let e = format!(
            "{:#}",
            Schedule::parse("0 10\n0 20\n", "f.txt").unwrap_err()
        );
        assert!(e.contains("must increase"), "{e}");
        let e = format!("{:#}", Schedule::parse("0 -5\n", "f.txt").unwrap_err());
        assert!(e.contains("rate -5"), "{e}");
        let e = format!("{:#}", Schedule::parse("0 1 2\n", "f.txt").unwrap_err());
        assert!(e.contains("two numbers"), "{e}");
    }
}
