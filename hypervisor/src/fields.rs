//! The header fields a flowspace constrains, one representation for both
//! OpenFlow versions: a slice's flowspace, a FLOW_MOD's match and a
//! PACKET_IN's packet all become [`Fields`], so slicing is one set of rules.

/// An address prefix: `bits` leading bits of `addr` (u32 for IPv4, u128 for IPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix<T> {
    pub addr: T,
    pub bits: u8,
}

pub type Prefix4 = Prefix<u32>;
pub type Prefix6 = Prefix<u128>;

macro_rules! prefix_ops {
    ($t:ty, $width:expr) => {
        impl Prefix<$t> {
            pub fn mask(bits: u8) -> $t {
                if bits == 0 {
                    0
                } else {
                    <$t>::MAX << ($width - bits as u32)
                }
            }

            /// The prefix with the host bits cleared.
            pub fn new(addr: $t, bits: u8) -> Self {
                let bits = bits.min($width as u8);
                Prefix {
                    addr: addr & Self::mask(bits),
                    bits,
                }
            }

            pub fn contains(&self, addr: $t) -> bool {
                addr & Self::mask(self.bits) == self.addr
            }

            /// The narrower of two nested prefixes, `None` if they are disjoint.
            pub fn intersect(&self, other: &Self) -> Option<Self> {
                let (wide, narrow) = if self.bits <= other.bits {
                    (self, other)
                } else {
                    (other, self)
                };
                wide.contains(narrow.addr).then_some(*narrow)
            }
        }
    };
}

prefix_ops!(u32, 32u32);
prefix_ops!(u128, 128u32);

/// VLAN "no tag" (OpenFlow 1.0's OFP_VLAN_NONE); any other value is a VLAN id.
pub const VLAN_NONE: u16 = 0xffff;

/// Header fields; `None` is a wildcard.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Fields {
    pub in_port: Option<u32>,
    pub eth_src: Option<[u8; 6]>,
    pub eth_dst: Option<[u8; 6]>,
    pub vlan: Option<u16>,
    pub eth_type: Option<u16>,
    pub ip_proto: Option<u8>,
    pub ipv4_src: Option<Prefix4>,
    pub ipv4_dst: Option<Prefix4>,
    pub ipv6_src: Option<Prefix6>,
    pub ipv6_dst: Option<Prefix6>,
    pub tp_src: Option<u16>,
    pub tp_dst: Option<u16>,
    /// VXLAN VNI / tunnel id (OpenFlow 1.3 tunnel_id).
    pub vni: Option<u64>,
}

fn exact<T: PartialEq + Copy>(a: Option<T>, b: Option<T>) -> Result<Option<T>, ()> {
    match (a, b) {
        (Some(x), Some(y)) if x != y => Err(()),
        (Some(x), _) | (_, Some(x)) => Ok(Some(x)),
        (None, None) => Ok(None),
    }
}

fn prefix<T: Copy>(
    a: Option<Prefix<T>>,
    b: Option<Prefix<T>>,
    meet: impl Fn(&Prefix<T>, &Prefix<T>) -> Option<Prefix<T>>,
) -> Result<Option<Prefix<T>>, ()> {
    match (a, b) {
        (Some(x), Some(y)) => meet(&x, &y).map(Some).ok_or(()),
        (x, None) => Ok(x),
        (None, y) => Ok(y),
    }
}

fn within<T: PartialEq>(inner: &Option<T>, outer: &Option<T>) -> bool {
    outer.is_none() || inner == outer
}

impl Fields {
    /// The packets matched by both, `None` if no packet is (disjoint).
    pub fn intersect(&self, o: &Fields) -> Option<Fields> {
        let f = || -> Result<Fields, ()> {
            Ok(Fields {
                in_port: exact(self.in_port, o.in_port)?,
                eth_src: exact(self.eth_src, o.eth_src)?,
                eth_dst: exact(self.eth_dst, o.eth_dst)?,
                vlan: exact(self.vlan, o.vlan)?,
                eth_type: exact(self.eth_type, o.eth_type)?,
                ip_proto: exact(self.ip_proto, o.ip_proto)?,
                ipv4_src: prefix(self.ipv4_src, o.ipv4_src, Prefix4::intersect)?,
                ipv4_dst: prefix(self.ipv4_dst, o.ipv4_dst, Prefix4::intersect)?,
                ipv6_src: prefix(self.ipv6_src, o.ipv6_src, Prefix6::intersect)?,
                ipv6_dst: prefix(self.ipv6_dst, o.ipv6_dst, Prefix6::intersect)?,
                tp_src: exact(self.tp_src, o.tp_src)?,
                tp_dst: exact(self.tp_dst, o.tp_dst)?,
                vni: exact(self.vni, o.vni)?,
            })
        };
        f().ok()
    }

    /// Whether every packet `self` matches is also matched by `outer`.
    pub fn is_within(&self, outer: &Fields) -> bool {
        self.intersect(outer).as_ref() == Some(self)
    }

    /// Whether a packet (all of whose present fields are set) matches `self`.
    pub fn matches_packet(&self, p: &Fields) -> bool {
        let pfx4 = |c: &Option<Prefix4>, v: &Option<Prefix4>| match (c, v) {
            (None, _) => true,
            (Some(c), Some(v)) => c.contains(v.addr),
            (Some(_), None) => false,
        };
        let pfx6 = |c: &Option<Prefix6>, v: &Option<Prefix6>| match (c, v) {
            (None, _) => true,
            (Some(c), Some(v)) => c.contains(v.addr),
            (Some(_), None) => false,
        };
        within(&p.in_port, &self.in_port)
            && within(&p.eth_src, &self.eth_src)
            && within(&p.eth_dst, &self.eth_dst)
            && within(&p.vlan, &self.vlan)
            && within(&p.eth_type, &self.eth_type)
            && within(&p.ip_proto, &self.ip_proto)
            && pfx4(&self.ipv4_src, &p.ipv4_src)
            && pfx4(&self.ipv4_dst, &p.ipv4_dst)
            && pfx6(&self.ipv6_src, &p.ipv6_src)
            && pfx6(&self.ipv6_dst, &p.ipv6_dst)
            && within(&p.tp_src, &self.tp_src)
            && within(&p.tp_dst, &self.tp_dst)
            && within(&p.vni, &self.vni)
    }

    /// The field names set in `self` (for messages and the fields a set-field may not touch).
    pub fn constrains(&self, field: Field) -> bool {
        match field {
            Field::InPort => self.in_port.is_some(),
            Field::EthSrc => self.eth_src.is_some(),
            Field::EthDst => self.eth_dst.is_some(),
            Field::Vlan => self.vlan.is_some(),
            Field::EthType => self.eth_type.is_some(),
            Field::IpProto => self.ip_proto.is_some(),
            Field::Ipv4Src => self.ipv4_src.is_some(),
            Field::Ipv4Dst => self.ipv4_dst.is_some(),
            Field::Ipv6Src => self.ipv6_src.is_some(),
            Field::Ipv6Dst => self.ipv6_dst.is_some(),
            Field::TpSrc => self.tp_src.is_some(),
            Field::TpDst => self.tp_dst.is_some(),
            Field::Vni => self.vni.is_some(),
        }
    }
}

/// A field a flowspace can constrain (and an action can rewrite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    InPort,
    EthSrc,
    EthDst,
    Vlan,
    EthType,
    IpProto,
    Ipv4Src,
    Ipv4Dst,
    Ipv6Src,
    Ipv6Dst,
    TpSrc,
    TpDst,
    Vni,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The fields of an Ethernet frame (as carried by a PACKET_IN) that arrived on `in_port`.
pub fn parse_frame(in_port: u32, frame: &[u8]) -> Fields {
    let mut f = Fields {
        in_port: Some(in_port),
        vlan: Some(VLAN_NONE),
        ..Fields::default()
    };
    if frame.len() < 14 {
        return f;
    }
    f.eth_dst = frame[0..6].try_into().ok();
    f.eth_src = frame[6..12].try_into().ok();
    let mut off = 12;
    let mut eth_type = be16(frame, off);
    if matches!(eth_type, Some(0x8100 | 0x88a8)) {
        f.vlan = be16(frame, off + 2).map(|tci| tci & 0x0fff);
        off += 4;
        eth_type = be16(frame, off);
    }
    f.eth_type = eth_type;
    let l3 = off + 2;
    let l4 = match eth_type {
        Some(0x0800) if frame.len() >= l3 + 20 => {
            let ihl = (frame[l3] & 0x0f) as usize * 4;
            f.ip_proto = Some(frame[l3 + 9]);
            let word = |at: usize| u32::from_be_bytes(frame[at..at + 4].try_into().unwrap());
            f.ipv4_src = Some(Prefix4::new(word(l3 + 12), 32));
            f.ipv4_dst = Some(Prefix4::new(word(l3 + 16), 32));
            l3 + ihl.max(20)
        }
        Some(0x86dd) if frame.len() >= l3 + 40 => {
            f.ip_proto = Some(frame[l3 + 6]);
            let addr = |at: usize| u128::from_be_bytes(frame[at..at + 16].try_into().unwrap());
            f.ipv6_src = Some(Prefix6::new(addr(l3 + 8), 128));
            f.ipv6_dst = Some(Prefix6::new(addr(l3 + 24), 128));
            l3 + 40
        }
        _ => return f,
    };
    if matches!(f.ip_proto, Some(6 | 17 | 132)) {
        f.tp_src = be16(frame, l4);
        f.tp_dst = be16(frame, l4 + 2);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_nest_or_are_disjoint() {
        let p16 = Prefix4::new(0x0a00_0000, 16);
        let p24 = Prefix4::new(0x0a00_0105, 24);
        assert_eq!(p24.addr, 0x0a00_0100, "host bits cleared");
        assert_eq!(p16.intersect(&p24), Some(p24));
        assert_eq!(p24.intersect(&p16), Some(p24));
        assert_eq!(p24.intersect(&Prefix4::new(0x0a00_0200, 24)), None);
        assert_eq!(Prefix4::new(1, 0).intersect(&p24), Some(p24));
        let v6 = Prefix6::new(0x2001_0db8 << 96, 32);
        assert!(v6.contains((0x2001_0db8 << 96) | 7));
        assert!(!v6.contains(0x2001_0db9 << 96));
    }

    #[test]
    fn intersection_narrows_or_fails() {
        let slice = Fields {
            vlan: Some(10),
            eth_type: Some(0x0800),
            ipv4_dst: Some(Prefix4::new(0x0a00_0000, 8)),
            ..Fields::default()
        };
        let flow = Fields {
            ipv4_dst: Some(Prefix4::new(0x0a01_0000, 16)),
            tp_dst: Some(80),
            ..Fields::default()
        };
        let both = flow.intersect(&slice).unwrap();
        assert_eq!(both.vlan, Some(10));
        assert_eq!(both.ipv4_dst, flow.ipv4_dst);
        assert_eq!(both.tp_dst, Some(80));
        assert!(both.is_within(&slice));
        assert!(!flow.is_within(&slice));
        let other_vlan = Fields {
            vlan: Some(20),
            ..Fields::default()
        };
        assert_eq!(other_vlan.intersect(&slice), None);
    }

    fn udp_frame(vlan: Option<u16>) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0x50, 0, 0, 0, 1];
        if let Some(v) = vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&v.to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0];
        ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[0xb7, 0x98, 0x00, 0x35, 0, 8, 0, 0]);
        f
    }

    #[test]
    fn frames_parse_and_match() {
        let p = parse_frame(3, &udp_frame(Some(10)));
        assert_eq!(p.in_port, Some(3));
        assert_eq!(p.vlan, Some(10));
        assert_eq!(p.eth_type, Some(0x0800));
        assert_eq!(p.ip_proto, Some(17));
        assert_eq!(p.tp_src, Some(47_000));
        assert_eq!(p.tp_dst, Some(53));
        assert_eq!(p.eth_src, Some([0x02, 0x50, 0, 0, 0, 1]));
        let slice = Fields {
            vlan: Some(10),
            ipv4_src: Some(Prefix4::new(0x0a00_0000, 24)),
            ..Fields::default()
        };
        assert!(slice.matches_packet(&p));
        let untagged = parse_frame(3, &udp_frame(None));
        assert_eq!(untagged.vlan, Some(VLAN_NONE));
        assert!(!slice.matches_packet(&untagged));
        let v6_slice = Fields {
            ipv6_src: Some(Prefix6::new(0, 0)),
            ..Fields::default()
        };
        assert!(
            !v6_slice.matches_packet(&p),
            "an IPv4 packet has no IPv6 source"
        );
        assert_eq!(parse_frame(1, &[1, 2, 3]).eth_type, None, "runt frame");
    }
}
