//! The emulated switch's data plane, just enough to confirm flow setup on
//! loopback: the switch's control loop records the UDP source ports that
//! FLOW_MODs match on, and a forwarder sends a frame back out of the port it
//! came in on when an installed rule matches it (flow-setup rules output to
//! IN_PORT). The port is a datagram socket pair instead of a real interface,
//! so no root is needed. Hard timeouts are not emulated.

use crate::codec::{self, Message, of10, of13};
use crate::flow_confirm::FramePort;
use crate::pacer;
use crate::probe;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Installed rules, by the UDP source port they match (one bit per port).
pub struct RuleTable {
    bits: Vec<AtomicU64>,
}

impl Default for RuleTable {
    fn default() -> Self {
        RuleTable {
            bits: (0..1024).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl RuleTable {
    pub fn insert(&self, port: u16) {
        self.bits[port as usize / 64].fetch_or(1 << (port % 64), Ordering::Release);
    }

    pub fn contains(&self, port: u16) -> bool {
        self.bits[port as usize / 64].load(Ordering::Acquire) & (1 << (port % 64)) != 0
    }

    /// Records the rule of a FLOW_MOD (add or modify) that matches an exact UDP source port.
    pub fn install(&self, flow_mod: &[u8]) {
        if let Some(p) = flow_mod_udp_src(flow_mod) {
            self.insert(p);
        }
    }
}

/// The exact transport source port a FLOW_MOD add/modify matches on, if any.
pub fn flow_mod_udp_src(msg: &[u8]) -> Option<u16> {
    const OFPFW_TP_SRC: u32 = 1 << 6;
    const OXM_UDP_SRC: u8 = 15;
    match codec::decode(msg).ok()?.1 {
        Message::V10(of10::Message::FlowMod(f)) if f.command <= 2 => {
            (f.match_.wildcards & OFPFW_TP_SRC == 0).then_some(f.match_.tp_src)
        }
        Message::V13(of13::Message::FlowMod(f)) if f.command <= 2 => f
            .match_
            .fields
            .iter()
            .find(|o| o.class == of13::OFPXMC_OPENFLOW_BASIC && o.field == OXM_UDP_SRC)
            .filter(|o| !o.hasmask && o.value.len() == 2)
            .map(|o| u16::from_be_bytes([o.value[0], o.value[1]])),
        _ => None,
    }
}

/// Sends every frame arriving on `port` whose UDP source port has a rule back
/// out of it, until `stop` is set.
pub fn forward(port: &UnixDatagram, rules: &RuleTable, stop: &AtomicBool) {
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Acquire) {
        if let Ok(Some(n)) = port.recv_frame(&mut buf, 20_000_000)
            && probe::udp_src_port(&buf[..n]).is_some_and(|p| rules.contains(p))
        {
            let _ = port.send_frame(&buf[..n]);
        }
    }
}

impl FramePort for UnixDatagram {
    fn send_frame(&self, frame: &[u8]) -> std::io::Result<()> {
        self.send(frame).map(|_| ())
    }

    fn recv_frame(&self, buf: &mut [u8], timeout_ns: u64) -> std::io::Result<Option<usize>> {
        loop {
            match self.recv(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if !pacer::poll_readable(self.as_raw_fd(), timeout_ns) {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A connected pair of non-blocking datagram sockets: perfbench's end and the switch's port.
pub fn port_pair() -> std::io::Result<(UnixDatagram, UnixDatagram)> {
    let (a, b) = UnixDatagram::pair()?;
    a.set_nonblocking(true)?;
    b.set_nonblocking(true)?;
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Version;
    use crate::messages;

    #[test]
    fn flow_setup_rules_are_recognised_and_forward() {
        for v in [Version::V10, Version::V13] {
            let fm = messages::flow_setup(v, 70_000, 1).to_bytes(3).unwrap();
            assert_eq!(flow_mod_udp_src(&fm), Some(70_000u32 as u16), "{v}");
            let miss = messages::table_miss_to_controller(v).to_bytes(4).unwrap();
            assert_eq!(flow_mod_udp_src(&miss), None, "{v}");
        }
        let t = RuleTable::default();
        t.install(
            &messages::flow_setup(Version::V13, 9, 1)
                .to_bytes(1)
                .unwrap(),
        );
        assert!(t.contains(9) && !t.contains(10) && !t.contains(9 + 64));

        let (mine, switch_port) = port_pair().unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|sc| {
            sc.spawn(|| forward(&switch_port, &t, &stop));
            let mut f = probe::template(0, 64);
            probe::set_udp_src_port(&mut f, 10);
            mine.send_frame(&f).unwrap(); // no rule: dropped
            probe::set_udp_src_port(&mut f, 9);
            mine.send_frame(&f).unwrap();
            let mut buf = [0u8; 256];
            // Wait as long as needed: only what comes back is asserted, not when.
            let n = loop {
                if let Some(n) = mine.recv_frame(&mut buf, 1_000_000_000).unwrap() {
                    break n;
                }
            };
            assert_eq!(probe::udp_src_port(&buf[..n]), Some(9));
            stop.store(true, Ordering::Release);
        });
    }
}
