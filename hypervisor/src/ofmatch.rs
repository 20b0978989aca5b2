//! OpenFlow matches to and from [`Fields`]: the 1.0 fixed match (wildcard
//! bits) and the 1.3 OXM list. OXM fields the flowspace does not model (or
//! masks that are not prefixes) stay in a `rest` list and pass through unchanged.

use crate::fields::{Field, Fields, Prefix4, Prefix6, VLAN_NONE};
use perfbench::codec::{of10, of13};

pub mod fw {
    pub const IN_PORT: u32 = 1 << 0;
    pub const DL_VLAN: u32 = 1 << 1;
    pub const DL_SRC: u32 = 1 << 2;
    pub const DL_DST: u32 = 1 << 3;
    pub const DL_TYPE: u32 = 1 << 4;
    pub const NW_PROTO: u32 = 1 << 5;
    pub const TP_SRC: u32 = 1 << 6;
    pub const TP_DST: u32 = 1 << 7;
    pub const NW_SRC_SHIFT: u32 = 8;
    pub const NW_DST_SHIFT: u32 = 14;
    pub const NW_ADDR_MASK: u32 = 0x3f;
}

/// OXM field numbers (OpenFlow 1.3.5 §7.2.3.7).
pub mod oxm {
    pub const IN_PORT: u8 = 0;
    pub const ETH_DST: u8 = 3;
    pub const ETH_SRC: u8 = 4;
    pub const ETH_TYPE: u8 = 5;
    pub const VLAN_VID: u8 = 6;
    pub const IP_PROTO: u8 = 10;
    pub const IPV4_SRC: u8 = 11;
    pub const IPV4_DST: u8 = 12;
    pub const TCP_SRC: u8 = 13;
    pub const TCP_DST: u8 = 14;
    pub const UDP_SRC: u8 = 15;
    pub const UDP_DST: u8 = 16;
    pub const SCTP_SRC: u8 = 17;
    pub const SCTP_DST: u8 = 18;
    pub const IPV6_SRC: u8 = 26;
    pub const IPV6_DST: u8 = 27;
    pub const TUNNEL_ID: u8 = 38;
    pub const VID_PRESENT: u16 = 0x1000;
}

/// A field the flowspace may constrain but this version cannot express.
#[derive(Debug, PartialEq, Eq)]
pub struct Inexpressible(pub &'static str);

fn nw_bits(wildcards: u32, shift: u32) -> u8 {
    32 - ((wildcards >> shift) & fw::NW_ADDR_MASK).min(32) as u8
}

/// The fields an OpenFlow 1.0 match constrains.
pub fn from_of10(m: &of10::Match) -> Fields {
    let w = m.wildcards;
    let on = |bit: u32| w & bit == 0;
    let src_bits = nw_bits(w, fw::NW_SRC_SHIFT);
    let dst_bits = nw_bits(w, fw::NW_DST_SHIFT);
    Fields {
        in_port: on(fw::IN_PORT).then_some(m.in_port as u32),
        eth_src: on(fw::DL_SRC).then_some(m.dl_src),
        eth_dst: on(fw::DL_DST).then_some(m.dl_dst),
        vlan: on(fw::DL_VLAN).then_some(m.dl_vlan),
        eth_type: on(fw::DL_TYPE).then_some(m.dl_type),
        ip_proto: on(fw::NW_PROTO).then_some(m.nw_proto),
        ipv4_src: (src_bits > 0).then(|| Prefix4::new(m.nw_src, src_bits)),
        ipv4_dst: (dst_bits > 0).then(|| Prefix4::new(m.nw_dst, dst_bits)),
        tp_src: on(fw::TP_SRC).then_some(m.tp_src),
        tp_dst: on(fw::TP_DST).then_some(m.tp_dst),
        ..Fields::default()
    }
}

/// Writes every field `f` constrains into the 1.0 match `m` (other fields of `m` are kept).
pub fn apply_of10(m: &mut of10::Match, f: &Fields) -> Result<(), Inexpressible> {
    if f.ipv6_src.is_some() || f.ipv6_dst.is_some() {
        return Err(Inexpressible("IPv6 addresses (OpenFlow 1.0)"));
    }
    if f.vni.is_some() {
        return Err(Inexpressible("a VNI / tunnel id (OpenFlow 1.0)"));
    }
    let mut set = |bit: u32| m.wildcards &= !bit;
    if let Some(p) = f.in_port {
        set(fw::IN_PORT);
        m.in_port = u16::try_from(p).map_err(|_| Inexpressible("a 32-bit port (OpenFlow 1.0)"))?;
    }
    if let Some(v) = f.eth_src {
        set(fw::DL_SRC);
        m.dl_src = v;
    }
    if let Some(v) = f.eth_dst {
        set(fw::DL_DST);
        m.dl_dst = v;
    }
    if let Some(v) = f.vlan {
        set(fw::DL_VLAN);
        m.dl_vlan = v;
    }
    if let Some(v) = f.eth_type {
        set(fw::DL_TYPE);
        m.dl_type = v;
    }
    if let Some(v) = f.ip_proto {
        set(fw::NW_PROTO);
        m.nw_proto = v;
    }
    if let Some(v) = f.tp_src {
        set(fw::TP_SRC);
        m.tp_src = v;
    }
    if let Some(v) = f.tp_dst {
        set(fw::TP_DST);
        m.tp_dst = v;
    }
    for (p, shift, addr) in [
        (f.ipv4_src, fw::NW_SRC_SHIFT, &mut m.nw_src),
        (f.ipv4_dst, fw::NW_DST_SHIFT, &mut m.nw_dst),
    ] {
        if let Some(p) = p {
            m.wildcards =
                (m.wildcards & !(fw::NW_ADDR_MASK << shift)) | ((32 - p.bits as u32) << shift);
            *addr = p.addr;
        }
    }
    Ok(())
}

fn prefix_len(mask: &[u8]) -> Option<u8> {
    let ones: u32 = mask.iter().map(|b| b.leading_ones().min(8)).sum();
    let bits = mask.len() as u32 * 8;
    let contiguous = mask.iter().enumerate().all(|(i, b)| {
        let want_ones = ones.saturating_sub(i as u32 * 8).min(8);
        *b == if want_ones == 0 {
            0
        } else {
            0xffu8 << (8 - want_ones)
        }
    });
    (contiguous && ones <= bits).then_some(ones as u8)
}

fn be_u128(b: &[u8]) -> u128 {
    b.iter().fold(0u128, |a, x| (a << 8) | *x as u128)
}

/// Splits an OXM match into the modeled fields and the rest (kept as is).
pub fn from_oxms(fields: &[of13::Oxm]) -> (Fields, Vec<of13::Oxm>) {
    let mut f = Fields::default();
    let mut rest = Vec::new();
    for o in fields {
        if !take_oxm(&mut f, o) {
            rest.push(o.clone());
        }
    }
    (f, rest)
}

fn take_oxm(f: &mut Fields, o: &of13::Oxm) -> bool {
    if o.class != of13::OFPXMC_OPENFLOW_BASIC {
        return false;
    }
    let n = o.value.len();
    let (val, mask) = if o.hasmask {
        o.value.split_at(n / 2)
    } else {
        (&o.value[..], &[][..])
    };
    let plen = |width: usize| {
        if val.len() != width {
            None
        } else if o.hasmask {
            prefix_len(mask)
        } else {
            Some(width as u8 * 8)
        }
    };
    let exact = !o.hasmask;
    match o.field {
        oxm::IN_PORT if exact && n == 4 => f.in_port = Some(be_u128(val) as u32),
        oxm::ETH_DST if exact && n == 6 => f.eth_dst = val.try_into().ok(),
        oxm::ETH_SRC if exact && n == 6 => f.eth_src = val.try_into().ok(),
        oxm::ETH_TYPE if exact && n == 2 => f.eth_type = Some(be_u128(val) as u16),
        oxm::VLAN_VID if exact && n == 2 => {
            let v = be_u128(val) as u16;
            f.vlan = Some(if v & oxm::VID_PRESENT != 0 {
                v & 0x0fff
            } else {
                VLAN_NONE
            });
        }
        oxm::IP_PROTO if exact && n == 1 => f.ip_proto = Some(val[0]),
        oxm::IPV4_SRC | oxm::IPV4_DST => {
            let Some(bits) = plen(4) else { return false };
            let p = Some(Prefix4::new(be_u128(val) as u32, bits));
            if o.field == oxm::IPV4_SRC {
                f.ipv4_src = p
            } else {
                f.ipv4_dst = p
            }
        }
        oxm::IPV6_SRC | oxm::IPV6_DST => {
            let Some(bits) = plen(16) else { return false };
            let p = Some(Prefix6::new(be_u128(val), bits));
            if o.field == oxm::IPV6_SRC {
                f.ipv6_src = p
            } else {
                f.ipv6_dst = p
            }
        }
        oxm::TCP_SRC | oxm::UDP_SRC | oxm::SCTP_SRC if exact && n == 2 => {
            f.tp_src = Some(be_u128(val) as u16)
        }
        oxm::TCP_DST | oxm::UDP_DST | oxm::SCTP_DST if exact && n == 2 => {
            f.tp_dst = Some(be_u128(val) as u16)
        }
        oxm::TUNNEL_ID if exact && n == 8 => f.vni = Some(be_u128(val) as u64),
        _ => return false,
    }
    true
}

/// The flowspace field an OXM field number (of the basic class) touches, if any.
pub fn oxm_field(field: u8) -> Option<Field> {
    Some(match field {
        oxm::IN_PORT => Field::InPort,
        oxm::ETH_DST => Field::EthDst,
        oxm::ETH_SRC => Field::EthSrc,
        oxm::ETH_TYPE => Field::EthType,
        oxm::VLAN_VID => Field::Vlan,
        oxm::IP_PROTO => Field::IpProto,
        oxm::IPV4_SRC => Field::Ipv4Src,
        oxm::IPV4_DST => Field::Ipv4Dst,
        oxm::TCP_SRC | oxm::UDP_SRC | oxm::SCTP_SRC => Field::TpSrc,
        oxm::TCP_DST | oxm::UDP_DST | oxm::SCTP_DST => Field::TpDst,
        oxm::IPV6_SRC => Field::Ipv6Src,
        oxm::IPV6_DST => Field::Ipv6Dst,
        oxm::TUNNEL_ID => Field::Vni,
        _ => return None,
    })
}

fn basic(field: u8, value: Vec<u8>, mask: Option<Vec<u8>>) -> of13::Oxm {
    let hasmask = mask.is_some();
    let mut value = value;
    if let Some(m) = mask {
        value.extend(m);
    }
    of13::Oxm {
        class: of13::OFPXMC_OPENFLOW_BASIC,
        field,
        hasmask,
        value,
    }
}

fn prefix_oxm(field: u8, addr: Vec<u8>, bits: u8) -> of13::Oxm {
    let width = addr.len() as u32 * 8;
    if bits as u32 == width {
        return basic(field, addr, None);
    }
    let mask = (0..addr.len())
        .map(|i| {
            let ones = (bits as u32).saturating_sub(i as u32 * 8).min(8);
            if ones == 0 { 0 } else { 0xffu8 << (8 - ones) }
        })
        .collect();
    basic(field, addr, Some(mask))
}

/// The OXM list for `f` followed by `rest`, prerequisites first.
pub fn to_oxms(f: &Fields, rest: &[of13::Oxm]) -> Result<Vec<of13::Oxm>, Inexpressible> {
    let mut out = Vec::new();
    if let Some(p) = f.in_port {
        out.push(basic(oxm::IN_PORT, p.to_be_bytes().to_vec(), None));
    }
    push_ethernet_oxms(f, &mut out);
    push_ip_oxms(f, &mut out);
    push_transport_oxms(f, &mut out)?;
    if let Some(v) = f.vni {
        out.push(basic(oxm::TUNNEL_ID, v.to_be_bytes().to_vec(), None));
    }
    out.extend(rest.iter().cloned());
    Ok(out)
}

/// Ethernet addresses, type and VLAN.
fn push_ethernet_oxms(f: &Fields, out: &mut Vec<of13::Oxm>) {
    if let Some(v) = f.eth_dst {
        out.push(basic(oxm::ETH_DST, v.to_vec(), None));
    }
    if let Some(v) = f.eth_src {
        out.push(basic(oxm::ETH_SRC, v.to_vec(), None));
    }
    if let Some(v) = f.eth_type {
        out.push(basic(oxm::ETH_TYPE, v.to_be_bytes().to_vec(), None));
    }
    if let Some(v) = f.vlan {
        let wire = if v == VLAN_NONE {
            0
        } else {
            oxm::VID_PRESENT | (v & 0x0fff)
        };
        out.push(basic(oxm::VLAN_VID, wire.to_be_bytes().to_vec(), None));
    }
}

/// IP protocol and the IPv4/IPv6 prefixes.
fn push_ip_oxms(f: &Fields, out: &mut Vec<of13::Oxm>) {
    if let Some(v) = f.ip_proto {
        out.push(basic(oxm::IP_PROTO, vec![v], None));
    }
    let v4 = [(oxm::IPV4_SRC, f.ipv4_src), (oxm::IPV4_DST, f.ipv4_dst)];
    for (field, p) in v4 {
        if let Some(p) = p {
            out.push(prefix_oxm(field, p.addr.to_be_bytes().to_vec(), p.bits));
        }
    }
    let v6 = [(oxm::IPV6_SRC, f.ipv6_src), (oxm::IPV6_DST, f.ipv6_dst)];
    for (field, p) in v6 {
        if let Some(p) = p {
            out.push(prefix_oxm(field, p.addr.to_be_bytes().to_vec(), p.bits));
        }
    }
}

/// Transport ports, as the OXM fields of the protocol `ip_proto` names.
fn push_transport_oxms(f: &Fields, out: &mut Vec<of13::Oxm>) -> Result<(), Inexpressible> {
    if f.tp_src.is_none() && f.tp_dst.is_none() {
        return Ok(());
    }
    let (src, dst) = match f.ip_proto {
        Some(6) => (oxm::TCP_SRC, oxm::TCP_DST),
        Some(17) => (oxm::UDP_SRC, oxm::UDP_DST),
        Some(132) => (oxm::SCTP_SRC, oxm::SCTP_DST),
        _ => {
            return Err(Inexpressible(
                "transport ports without ip_proto 6, 17 or 132",
            ));
        }
    };
    if let Some(v) = f.tp_src {
        out.push(basic(src, v.to_be_bytes().to_vec(), None));
    }
    if let Some(v) = f.tp_dst {
        out.push(basic(dst, v.to_be_bytes().to_vec(), None));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of10_round_trip_with_prefixes() {
        let mut m = of10::Match::all();
        let f = Fields {
            in_port: Some(2),
            vlan: Some(10),
            eth_type: Some(0x0800),
            ipv4_dst: Some(Prefix4::new(0x0a00_0000, 8)),
            ..Fields::default()
        };
        apply_of10(&mut m, &f).unwrap();
        assert_eq!(m.wildcards & (fw::IN_PORT | fw::DL_VLAN | fw::DL_TYPE), 0);
        assert_eq!((m.wildcards >> fw::NW_DST_SHIFT) & fw::NW_ADDR_MASK, 24);
        assert_eq!(from_of10(&m), f);
        assert_eq!(from_of10(&of10::Match::all()), Fields::default());
        let v6 = Fields {
            ipv6_src: Some(Prefix6::new(1, 128)),
            ..Fields::default()
        };
        assert!(apply_of10(&mut m, &v6).is_err());
    }

    #[test]
    fn oxm_round_trip_keeps_unmodeled_fields() {
        let metadata = of13::Oxm {
            class: of13::OFPXMC_OPENFLOW_BASIC,
            field: 2,
            hasmask: false,
            value: vec![0; 8],
        };
        let f = Fields {
            in_port: Some(7),
            vlan: Some(20),
            eth_type: Some(0x86dd),
            ip_proto: Some(6),
            ipv6_dst: Some(Prefix6::new(0x2001_0db8 << 96, 32)),
            tp_dst: Some(443),
            vni: Some(5000),
            ..Fields::default()
        };
        let oxms = to_oxms(&f, std::slice::from_ref(&metadata)).unwrap();
        let (back, rest) = from_oxms(&oxms);
        assert_eq!(back, f);
        assert_eq!(rest, vec![metadata]);
        let ipv6 = oxms.iter().find(|o| o.field == oxm::IPV6_DST).unwrap();
        assert!(ipv6.hasmask);
        assert_eq!(&ipv6.value[16..20], &[0xff; 4]);
        assert_eq!(&ipv6.value[20..], &[0; 12]);
    }

    #[test]
    fn non_prefix_masks_stay_in_rest() {
        let odd = of13::Oxm {
            class: of13::OFPXMC_OPENFLOW_BASIC,
            field: oxm::IPV4_SRC,
            hasmask: true,
            value: vec![10, 0, 0, 1, 0xff, 0, 0xff, 0],
        };
        let (f, rest) = from_oxms(std::slice::from_ref(&odd));
        assert_eq!(f, Fields::default());
        assert_eq!(rest.len(), 1);
        assert_eq!(prefix_len(&[0xff, 0xf0, 0, 0]), Some(12));
        assert_eq!(prefix_len(&[0xff, 0x0f, 0, 0]), None);
    }
}
