//! The slices file (TOML): per slice a controller, the ports it sees, a
//! flowspace and limits. Parsed and checked into [`Slice`]s; read again on SIGHUP.
//!
//! ```toml
//! stats_cache_ms = 0          # serve port statistics from a cache this young (0: never)
//!
//! [[slice]]
//! name = "red"
//! controller = "127.0.0.1:6653"
//! ports = [1, 2]              # the switch ports this tenant sees (omit: all)
//! [slice.flowspace]           # every field optional; omitted = any value
//! vlan = 10                   # VLAN id, or "none" for untagged
//! vni = 5000                  # tunnel id (OpenFlow 1.3 only)
//! eth_type = 0x0800
//! eth_src = "02:50:00:00:00:00"
//! ip_proto = 17
//! ipv4_dst = "10.1.0.0/16"
//! ipv6_src = "2001:db8::/32"
//! tp_dst = 53
//! [slice.limits]
//! rate = 1000                 # control messages/s from the tenant (token bucket)
//! burst = 200
//! flows = 500                 # flow-table entries the tenant may hold
//! packet_in_rate = 500        # PACKET_INs/s to the tenant's controller (excess dropped)
//! packet_in_burst = 50
//! ```

use crate::fields::{Fields, Prefix4, Prefix6, VLAN_NONE};
use anyhow::{Context, anyhow, bail};
use serde::Deserialize;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    stats_cache_ms: u64,
    #[serde(default)]
    slice: Vec<SliceDoc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SliceDoc {
    name: String,
    controller: String,
    ports: Option<Vec<u32>>,
    #[serde(default)]
    flowspace: FlowspaceDoc,
    #[serde(default)]
    limits: LimitsDoc,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowspaceDoc {
    vlan: Option<toml::Value>,
    vni: Option<u64>,
    eth_type: Option<u16>,
    eth_src: Option<String>,
    eth_dst: Option<String>,
    ip_proto: Option<u8>,
    ipv4_src: Option<String>,
    ipv4_dst: Option<String>,
    ipv6_src: Option<String>,
    ipv6_dst: Option<String>,
    tp_src: Option<u16>,
    tp_dst: Option<u16>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Control messages per second accepted from the tenant (0: unlimited).
    #[serde(default)]
    pub rate: f64,
    /// Token-bucket depth (default: a tenth of a second at `rate`, at least 1).
    pub burst: Option<f64>,
    /// Flow-table entries the tenant may hold per switch (0: unlimited).
    #[serde(default)]
    pub flows: usize,
    /// PACKET_INs per second sent to the tenant's controller (0: unlimited);
    /// the switch's PACKET_INs beyond it are dropped and counted.
    #[serde(default)]
    pub packet_in_rate: f64,
    /// Its token-bucket depth (default: a tenth of a second, at least 1).
    pub packet_in_burst: Option<f64>,
}

type LimitsDoc = Limits;

/// One tenant's slice of every switch.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    pub name: String,
    pub controller: SocketAddr,
    /// Ports the tenant sees; `None` = all.
    pub ports: Option<Vec<u32>>,
    /// Packets the tenant owns (in_port is expressed by `ports`).
    pub flowspace: Fields,
    pub limits: Limits,
    /// Marks the tenant's flows in the top byte of their cookies (1..=255).
    pub cookie_tag: u8,
}

impl Slice {
    pub fn has_port(&self, port: u32) -> bool {
        self.ports.as_ref().is_none_or(|p| p.contains(&port))
    }

    /// The flowspace including the port restriction for one in_port.
    pub fn owns_packet(&self, packet: &Fields) -> bool {
        packet.in_port.is_none_or(|p| self.has_port(p)) && self.flowspace.matches_packet(packet)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub slices: Vec<Slice>,
    pub stats_cache_ms: u64,
}

pub fn load(path: &Path) -> anyhow::Result<Config> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read slices file {}", path.display()))?;
    parse(&text).with_context(|| format!("slices file {}", path.display()))
}

pub fn parse(text: &str) -> anyhow::Result<Config> {
    let doc: FileDoc = toml::from_str(text).map_err(|e| anyhow!("{e}"))?;
    if doc.slice.is_empty() {
        bail!("no [[slice]] defined");
    }
    if doc.slice.len() > 255 {
        bail!(
            "{} slices: at most 255 (one cookie tag each)",
            doc.slice.len()
        );
    }
    let mut slices = Vec::new();
    for (i, s) in doc.slice.into_iter().enumerate() {
        let name = s.name.clone();
        if slices.iter().any(|x: &Slice| x.name == name) {
            bail!("slice '{name}' is defined twice");
        }
        let slice = build(s, i as u8 + 1).with_context(|| format!("slice '{name}'"))?;
        slices.push(slice);
    }
    Ok(Config {
        slices,
        stats_cache_ms: doc.stats_cache_ms,
    })
}

/// Gives slices that existed in `old` their old cookie tag (their flows on
/// the switches carry it) and new slices tags nobody uses.
pub fn keep_tags(old: &Config, new: &mut Config) {
    let old_tag = |name: &str| {
        old.slices
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.cookie_tag)
    };
    let mut used: Vec<u8> = new.slices.iter().filter_map(|s| old_tag(&s.name)).collect();
    for s in &mut new.slices {
        s.cookie_tag = match old_tag(&s.name) {
            Some(t) => t,
            None => {
                let t = (1..=255u8).find(|t| !used.contains(t)).unwrap_or(255);
                used.push(t);
                t
            }
        };
    }
}

/// Slices made on the command line: tenant `i` at `upstream` port + i, all
/// ports, no flowspace restriction (or, with `probe_macs`, the Ethernet
/// source of perfbench tenant `i`'s probe frames, so PACKET_INs are routed per tenant).
pub fn generated(
    n: usize,
    upstream: SocketAddr,
    probe_macs: bool,
    limits: Limits,
) -> anyhow::Result<Config> {
    if n == 0 || n > 255 {
        bail!("--tenants must be 1..255");
    }
    check_limits(&limits)?;
    let mut slices = Vec::new();
    for i in 0..n {
        let port = upstream
            .port()
            .checked_add(i as u16)
            .ok_or_else(|| anyhow!("upstream port {} + {i} exceeds 65535", upstream.port()))?;
        let flowspace = Fields {
            eth_src: probe_macs.then(|| perfbench::probe::tenant_mac(i as u32)),
            ..Fields::default()
        };
        slices.push(Slice {
            name: format!("tenant{i}"),
            controller: SocketAddr::new(upstream.ip(), port),
            ports: None,
            flowspace,
            limits,
            cookie_tag: i as u8 + 1,
        });
    }
    Ok(Config {
        slices,
        stats_cache_ms: 0,
    })
}

/// Rates finite and >= 0 (0: unlimited), bucket depths >= 1.
fn check_limits(l: &Limits) -> anyhow::Result<()> {
    let bad = |rate: f64, burst: Option<f64>| {
        !(rate >= 0.0 && rate.is_finite()) || burst.is_some_and(|b| !(b >= 1.0 && b.is_finite()))
    };
    if bad(l.rate, l.burst) {
        bail!("limits: rate must be >= 0 and burst >= 1");
    }
    if bad(l.packet_in_rate, l.packet_in_burst) {
        bail!("limits: packet_in_rate must be >= 0 and packet_in_burst >= 1");
    }
    Ok(())
}

fn build(s: SliceDoc, cookie_tag: u8) -> anyhow::Result<Slice> {
    let controller = s
        .controller
        .parse()
        .map_err(|_| anyhow!("controller '{}' is not IP:PORT", s.controller))?;
    if s.ports.as_ref().is_some_and(|p| p.is_empty()) {
        bail!("ports = [] leaves the tenant nothing; omit it for all ports");
    }
    check_limits(&s.limits)?;
    Ok(Slice {
        name: s.name,
        controller,
        ports: s.ports,
        flowspace: flowspace(&s.flowspace)?,
        limits: s.limits,
        cookie_tag,
    })
}

fn flowspace(d: &FlowspaceDoc) -> anyhow::Result<Fields> {
    let mut f = Fields {
        vlan: d.vlan.as_ref().map(vlan).transpose()?,
        vni: d.vni,
        eth_type: d.eth_type,
        eth_src: d.eth_src.as_deref().map(mac).transpose()?,
        eth_dst: d.eth_dst.as_deref().map(mac).transpose()?,
        ip_proto: d.ip_proto,
        ipv4_src: d.ipv4_src.as_deref().map(prefix4).transpose()?,
        ipv4_dst: d.ipv4_dst.as_deref().map(prefix4).transpose()?,
        ipv6_src: d.ipv6_src.as_deref().map(prefix6).transpose()?,
        ipv6_dst: d.ipv6_dst.as_deref().map(prefix6).transpose()?,
        tp_src: d.tp_src,
        tp_dst: d.tp_dst,
        in_port: None,
    };
    let v4 = f.ipv4_src.is_some() || f.ipv4_dst.is_some();
    let v6 = f.ipv6_src.is_some() || f.ipv6_dst.is_some();
    // An IP prefix implies its Ethernet type (OpenFlow prerequisites).
    for (on, et) in [(v4, 0x0800u16), (v6, 0x86dd)] {
        if on {
            match f.eth_type {
                None => f.eth_type = Some(et),
                Some(t) if t != et => bail!("eth_type 0x{t:04x} contradicts an IP prefix"),
                _ => {}
            }
        }
    }
    if v4 && v6 {
        bail!("IPv4 and IPv6 prefixes in one flowspace match nothing");
    }
    if (f.tp_src.is_some() || f.tp_dst.is_some()) && !matches!(f.ip_proto, Some(6 | 17 | 132)) {
        bail!("tp_src/tp_dst need ip_proto = 6, 17 or 132");
    }
    if f.ip_proto.is_some() && !matches!(f.eth_type, Some(0x0800 | 0x86dd)) {
        bail!("ip_proto needs eth_type 0x0800 or 0x86dd (or an IP prefix)");
    }
    Ok(f)
}

fn vlan(v: &toml::Value) -> anyhow::Result<u16> {
    match v {
        toml::Value::String(s) if s == "none" => Ok(VLAN_NONE),
        toml::Value::Integer(n) if (0..4096).contains(n) => Ok(*n as u16),
        other => bail!("vlan {other} is not 0..4095 or \"none\""),
    }
}

fn mac(s: &str) -> anyhow::Result<[u8; 6]> {
    let parts: Vec<_> = s.split(':').collect();
    let bytes: Result<Vec<u8>, _> = parts.iter().map(|p| u8::from_str_radix(p, 16)).collect();
    match bytes {
        Ok(b) if b.len() == 6 => Ok(b.try_into().unwrap()),
        _ => bail!("'{s}' is not a MAC address like 02:00:00:00:00:01"),
    }
}

fn split_prefix(s: &str, max: u8) -> anyhow::Result<(&str, u8)> {
    match s.split_once('/') {
        None => Ok((s, max)),
        Some((a, b)) => match b.parse::<u8>() {
            Ok(n) if n <= max => Ok((a, n)),
            _ => bail!("'{s}': prefix length must be 0..{max}"),
        },
    }
}

fn prefix4(s: &str) -> anyhow::Result<Prefix4> {
    let (a, bits) = split_prefix(s, 32)?;
    let ip: Ipv4Addr = a
        .parse()
        .map_err(|_| anyhow!("'{s}' is not an IPv4 prefix"))?;
    Ok(Prefix4::new(ip.into(), bits))
}

fn prefix6(s: &str) -> anyhow::Result<Prefix6> {
    let (a, bits) = split_prefix(s, 128)?;
    let ip: Ipv6Addr = a
        .parse()
        .map_err(|_| anyhow!("'{s}' is not an IPv6 prefix"))?;
    Ok(Prefix6::new(ip.into(), bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
stats_cache_ms = 50
[[slice]]
name = "red"
controller = "127.0.0.1:6653"
ports = [1, 2]
[slice.flowspace]
vlan = 10
ipv4_dst = "10.1.0.0/16"
[slice.limits]
rate = 100
flows = 5
packet_in_rate = 300

[[slice]]
name = "blue"
controller = "127.0.0.1:6654"
[slice.flowspace]
vlan = "none"
ip_proto = 17
tp_dst = 53
ipv6_src = "2001:db8::/32"
"#;

    #[test]
    fn parses_two_slices() {
        let c = parse(TWO).unwrap();
        assert_eq!(c.stats_cache_ms, 50);
        let (red, blue) = (&c.slices[0], &c.slices[1]);
        assert_eq!(red.ports, Some(vec![1, 2]));
        assert_eq!(red.flowspace.vlan, Some(10));
        assert_eq!(
            red.flowspace.eth_type,
            Some(0x0800),
            "implied by the prefix"
        );
        assert_eq!(red.flowspace.ipv4_dst, Some(Prefix4::new(0x0a01_0000, 16)));
        assert_eq!(red.limits.rate, 100.0);
        assert_eq!(red.limits.flows, 5);
        assert_eq!(red.limits.packet_in_rate, 300.0);
        assert_eq!(blue.limits.packet_in_rate, 0.0, "unlimited unless given");
        assert_eq!((red.cookie_tag, blue.cookie_tag), (1, 2));
        assert!(blue.has_port(77));
        assert_eq!(blue.flowspace.vlan, Some(VLAN_NONE));
        assert_eq!(blue.flowspace.eth_type, Some(0x86dd));
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            ("", "no [[slice]]"),
            ("[[slice]]\nname='a'\ncontroller='x'", "not IP:PORT"),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\n[slice.flowspace]\ntp_dst=1",
                "need ip_proto",
            ),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\n[slice.flowspace]\neth_type=0x86dd\nipv4_src='10.0.0.0/8'",
                "contradicts",
            ),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\n[slice.flowspace]\nvlan=5000",
                "not 0..4095",
            ),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\n[slice.flowspace]\nipv4_src='10.0.0.0/33'",
                "prefix length",
            ),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\n[[slice]]\nname='a'\ncontroller='127.0.0.1:2'",
                "defined twice",
            ),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\ncolour=1",
                "unknown field",
            ),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\n[slice.limits]\npacket_in_rate=-1",
                "packet_in_rate must be >= 0",
            ),
            (
                "[[slice]]\nname='a'\ncontroller='127.0.0.1:1'\n[slice.limits]\npacket_in_burst=0.5",
                "packet_in_burst >= 1",
            ),
        ];
        for (text, want) in cases {
            let e = format!("{:#}", parse(text).unwrap_err());
            assert!(e.contains(want), "{text:?}: expected '{want}' in: {e}");
        }
    }
}
