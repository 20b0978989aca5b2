//! The probe frame: an Ethernet/IPv4/UDP packet whose payload carries the
//! tenant id, a sequence number and the send timestamp. It rides inside
//! PACKET_IN and PACKET_OUT data and on the wire of a real switch, so the
//! receiver can compute latency and match it to the sender's record.

pub const MAGIC: [u8; 4] = *b"PFB1";
pub const UDP_PORT: u16 = 47_000;
const ETH_LEN: usize = 14;
const IP_LEN: usize = 20;
const UDP_LEN: usize = 8;
const PAYLOAD_OFF: usize = ETH_LEN + IP_LEN + UDP_LEN;
const PAYLOAD_LEN: usize = 4 + 4 + 8 + 8;
/// The smallest frame that carries a probe.
pub const MIN_FRAME: usize = PAYLOAD_OFF + PAYLOAD_LEN;
/// Offsets of the fields a sender rewrites per packet.
const SEQ_OFF: usize = PAYLOAD_OFF + 8;
const TS_OFF: usize = PAYLOAD_OFF + 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub tenant: u32,
    pub seq: u64,
    pub tx_ns: u64,
}

/// Source MAC of a tenant's probes: locally administered, unique per tenant
/// (a hypervisor like OpenVirteX needs distinct MACs per tenant).
pub fn tenant_mac(tenant: u32) -> [u8; 6] {
    let t = tenant.to_be_bytes();
    [0x02, 0x50, t[0], t[1], t[2], t[3]]
}

/// A frame template for one tenant; [`stamp`] fills in sequence and time.
pub fn template(tenant: u32, frame_len: usize) -> Vec<u8> {
    let len = frame_len.max(MIN_FRAME);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0x02, 0x50, 0xff, 0xff, 0xff, 0xfe]);
    f[6..12].copy_from_slice(&tenant_mac(tenant));
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[ETH_LEN..ETH_LEN + IP_LEN];
    ip[0] = 0x45;
    let ip_total = (len - ETH_LEN) as u16;
    ip[2..4].copy_from_slice(&ip_total.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    let t = tenant.to_be_bytes();
    ip[12..16].copy_from_slice(&[10, 250, t[2], t[3].max(1)]);
    ip[16..20].copy_from_slice(&[10, 251, 0, 1]);
    let csum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    let udp = &mut f[ETH_LEN + IP_LEN..PAYLOAD_OFF];
    udp[0..2].copy_from_slice(&UDP_PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&UDP_PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&((len - ETH_LEN - IP_LEN) as u16).to_be_bytes());
    f[PAYLOAD_OFF..PAYLOAD_OFF + 4].copy_from_slice(&MAGIC);
    f[PAYLOAD_OFF + 4..PAYLOAD_OFF + 8].copy_from_slice(&tenant.to_be_bytes());
    f
}

/// Writes sequence number and send time into a frame made by [`template`].
#[inline]
pub fn stamp(frame: &mut [u8], seq: u64, tx_ns: u64) {
    frame[SEQ_OFF..SEQ_OFF + 8].copy_from_slice(&seq.to_be_bytes());
    frame[TS_OFF..TS_OFF + 8].copy_from_slice(&tx_ns.to_be_bytes());
}

/// Sets the UDP source port of a frame made by [`template`] (flow-setup rule
/// *n* matches source port *n*; the UDP checksum is 0, so nothing else changes).
#[inline]
pub fn set_udp_src_port(frame: &mut [u8], port: u16) {
    frame[ETH_LEN + IP_LEN..ETH_LEN + IP_LEN + 2].copy_from_slice(&port.to_be_bytes());
}

/// The UDP source port of an IPv4/UDP frame (no options), `None` for anything else.
#[inline]
pub fn udp_src_port(frame: &[u8]) -> Option<u16> {
    let udp = ETH_LEN + IP_LEN;
    (frame.len() >= udp + UDP_LEN
        && frame[12..14] == [0x08, 0x00]
        && frame[ETH_LEN] == 0x45
        && frame[ETH_LEN + 9] == 17)
        .then(|| u16::from_be_bytes([frame[udp], frame[udp + 1]]))
}

/// Reads the probe from a frame, `None` if the frame is not one of ours.
#[inline]
pub fn parse(frame: &[u8]) -> Option<Probe> {
    if frame.len() < MIN_FRAME
        || frame[12..14] != [0x08, 0x00]
        || frame[ETH_LEN + 9] != 17
        || frame[ETH_LEN] != 0x45
        || frame[PAYLOAD_OFF..PAYLOAD_OFF + 4] != MAGIC
    {
        return None;
    }
    let u32_at = |o: usize| u32::from_be_bytes(frame[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_be_bytes(frame[o..o + 8].try_into().unwrap());
    Some(Probe {
        tenant: u32_at(PAYLOAD_OFF + 4),
        seq: u64_at(SEQ_OFF),
        tx_ns: u64_at(TS_OFF),
    })
}

fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in hdr.chunks(2) {
        sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_then_parse() {
        let mut f = template(7, 60);
        assert_eq!(f.len(), MIN_FRAME.max(60));
        stamp(&mut f, 123_456_789_012, 987_654_321);
        assert_eq!(
            parse(&f),
            Some(Probe {
                tenant: 7,
                seq: 123_456_789_012,
                tx_ns: 987_654_321
            })
        );
        // The IPv4 header checksum verifies (sums to 0xffff with the checksum included).
        assert_eq!(ipv4_checksum(&f[14..34]), 0);
    }

    #[test]
    fn rejects_foreign_frames() {
        let mut f = template(1, 128);
        assert!(parse(&f[..MIN_FRAME - 1]).is_none());
        f[PAYLOAD_OFF] = b'X';
        assert!(parse(&f).is_none());
        let mut g = template(1, 64);
        g[12] = 0x86;
        assert!(parse(&g).is_none());
        assert_eq!(udp_src_port(&g), None);
    }

    #[test]
    fn udp_source_port_round_trip() {
        let mut f = template(2, 64);
        assert_eq!(udp_src_port(&f), Some(UDP_PORT));
        set_udp_src_port(&mut f, 4242);
        assert_eq!(udp_src_port(&f), Some(4242));
        assert_eq!(parse(&f).map(|p| p.tenant), Some(2));
    }
}
