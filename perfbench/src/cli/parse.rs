//! Flag values: per-tenant lists, booleans, versions, rates, addresses, run timing.

use super::args::*;
use anyhow::{Context, bail};
use perfbench::codec::Version;
use std::net::SocketAddr;

/// Splits "a,b,c" into exactly `n` items (a single item applies to all).
pub fn per_tenant<T>(
    s: &str,
    n: usize,
    what: &str,
    parse: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 1 && parts.len() != n {
        bail!(
            "--{what} has {} values but there are {n} tenants (give one value or one per tenant)",
            parts.len()
        );
    }
    (0..n)
        .map(|i| {
            parse(parts[if parts.len() == 1 { 0 } else { i }]).with_context(|| format!("--{what}"))
        })
        .collect()
}

pub fn parse_bool(s: &str) -> anyhow::Result<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Ok(true),
        "0" | "off" | "false" | "no" => Ok(false),
        _ => bail!("'{s}' is not 1/0, on/off or true/false"),
    }
}

pub fn parse_versions(s: &str) -> anyhow::Result<Vec<Version>> {
    s.split(',')
        .map(|v| v.trim().parse::<Version>().map_err(anyhow::Error::msg))
        .collect()
}

pub fn parse_rate(s: &str) -> anyhow::Result<f64> {
    let s = s.trim();
    let (num, mul) = match s.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1e3),
        None => (s, 1.0),
    };
    let r: f64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("rate '{s}' is not a number (e.g. 5000 or 5k)"))?;
    Ok(r * mul)
}

/// Tenant i's address: base port + i.
pub fn nth_addr(base: SocketAddr, i: usize, what: &str) -> anyhow::Result<SocketAddr> {
    if base.port() == 0 {
        return Ok(base);
    }
    let p = base.port() as usize + i;
    let p = u16::try_from(p)
        .map_err(|_| anyhow::anyhow!("{what} port {} + {i} exceeds 65535", base.port()))?;
    Ok(SocketAddr::new(base.ip(), p))
}

/// A finite number above zero (NaN is not).
pub fn is_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

pub fn check_timing(t: &Timing) -> anyhow::Result<()> {
    if t.spin_us > 10_000 {
        bail!("--spin-us must be at most 10000, got {}", t.spin_us);
    }
    perfbench::pacer::set_spin_ns(t.spin_us * 1000);
    if !is_positive(t.duration) || t.duration > 86_400.0 {
        bail!(
            "--duration must be in (0, 86400] seconds, got {}",
            t.duration
        );
    }
    if t.warmup < 0.0 || t.cooldown < 0.0 || t.warmup + t.cooldown >= t.duration {
        bail!(
            "--warmup ({}) + --cooldown ({}) must be non-negative and less than --duration ({})",
            t.warmup,
            t.cooldown,
            t.duration
        );
    }
    if !(0.0..=600.0).contains(&t.drain) {
        bail!("--drain must be within 0..=600 seconds, got {}", t.drain);
    }
    Ok(())
}
