//! Real-switch data plane over AF_PACKET: inject probe frames on a Linux
//! interface (a switch port's peer) so the switch raises PACKET_IN, and
//! capture the probe frames that PACKET_OUTs make the switch send.

use crate::clock::now_ns;
use crate::pacer::{self, Pacer};
use crate::probe;
use crate::record::{Arrival, DATA_PACKET, Record};
use crate::schedule::Schedule;
use crate::start_sync::StartSync;
use anyhow::{Context, bail};
use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An AF_PACKET raw socket bound to one interface.
pub struct RawSocket {
    fd: OwnedFd,
    pub iface: String,
}

impl RawSocket {
    pub fn open(iface: &str) -> anyhow::Result<RawSocket> {
        let cname = CString::new(iface)
            .with_context(|| format!("interface name '{iface}' contains a NUL byte"))?;
        // SAFETY: if_nametoindex reads a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            bail!("no interface named '{iface}' in this network namespace");
        }
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                proto as i32,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EPERM) {
                bail!(
                    "cannot open an AF_PACKET socket: permission denied (needs root or CAP_NET_RAW)"
                );
            }
            return Err(e).context("cannot open an AF_PACKET socket");
        }
        // SAFETY: fd is a fresh, valid descriptor we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid start.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: binding a valid sockaddr_ll of the right size.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("cannot bind AF_PACKET socket to {iface}"));
        }
        let s = RawSocket {
            fd,
            iface: iface.to_string(),
        };
        s.set_int(libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20);
        s.set_int(libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20);
        Ok(s)
    }

    fn set_int(&self, level: i32, opt: i32, v: i32) {
        // SAFETY: setsockopt with a pointer to a live i32 of the right size; failure is harmless here.
        unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                opt,
                &v as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as u32,
            )
        };
    }

    #[inline]
    pub fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        // SAFETY: sending from a valid buffer on a bound socket.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            )
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Receives one frame that came in on the interface (our own outgoing
    /// frames are skipped). `Ok(None)` when nothing arrived within `timeout_ns`.
    pub fn recv_incoming(&self, buf: &mut [u8], timeout_ns: u64) -> std::io::Result<Option<usize>> {
        loop {
            // SAFETY: zeroed sockaddr_ll is valid; recvfrom writes at most its size.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut alen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: valid buffer and address pointers.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    &mut sll as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                    &mut alen,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::WouldBlock {
                    if !pacer::poll_readable(self.fd.as_raw_fd(), timeout_ns) {
                        return Ok(None);
                    }
                    continue;
                }
                return Err(e);
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(n as usize));
        }
    }
}

#[derive(Debug, Default)]
pub struct InjectResult {
    pub tenant: u32,
    /// Frames sent, indexed by sequence number (the tenant's PACKET_INs fill in the answers).
    pub records: Vec<Record>,
    pub send_errors: u64,
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
}

/// Injects probe frames of `tenant` on `iface` at `schedule`, from the common start for `duration_ns`.
pub fn inject(
    iface: &str,
    tenant: u32,
    schedule: Schedule,
    frame_len: usize,
    duration_ns: u64,
    sync: &StartSync,
) -> anyhow::Result<InjectResult> {
    crate::clock::tighten_timer_slack();
    let sock = RawSocket::open(iface);
    let Some(start) = sync.arrive(sock.is_ok()) else {
        sock?;
        bail!("injector on {iface}: another participant failed its setup");
    };
    let sock = sock?;
    let end = start + duration_ns;
    let expected = schedule.count_before(duration_ns as f64 / 1e9);
    let mut pacer = Pacer::new(schedule, start, end);
    let mut frame = probe::template(tenant, frame_len);
    let mut res = InjectResult {
        tenant,
        records: Vec::with_capacity(expected as usize + 16),
        ..InjectResult::default()
    };
    while let Some(due) = pacer.next_due() {
        pacer::wait_until(due, None);
        let now = now_ns();
        while let Some(seq) = pacer.take_due(now, now) {
            probe::stamp(&mut frame, seq, now);
            if sock.send(&frame).is_err() {
                res.send_errors += 1;
            }
            res.records.push(Record {
                req_ns: now,
                resp_ns: 0,
                xid: seq as u32,
                conn: tenant as u16,
                req_type: DATA_PACKET,
                resp_type: 0,
                req_size: frame.len() as u16,
                resp_size: 0,
            });
        }
    }
    res.lateness_p50_us = pacer.lateness_percentile_us(0.5);
    res.lateness_p99_us = pacer.lateness_percentile_us(0.99);
    res.lateness_max_us = pacer.lateness_max_ns as f64 / 1000.0;
    Ok(res)
}

#[derive(Debug, Default)]
pub struct CaptureResult {
    /// Probe arrivals per tenant id.
    pub arrivals: HashMap<u32, Vec<Arrival>>,
    pub foreign_frames: u64,
}

/// Captures probe frames on `iface` from the common start until `duration_ns + drain_ns` after it.
pub fn capture(
    iface: &str,
    duration_ns: u64,
    drain_ns: u64,
    sync: &StartSync,
) -> anyhow::Result<CaptureResult> {
    let sock = RawSocket::open(iface);
    let Some(start) = sync.arrive(sock.is_ok()) else {
        sock?;
        bail!("capture on {iface}: another participant failed its setup");
    };
    let sock = sock?;
    let stop = start + duration_ns + drain_ns;
    let mut buf = vec![0u8; 65_536];
    let mut res = CaptureResult::default();
    loop {
        let now = now_ns();
        if now >= stop {
            break;
        }
        match sock
            .recv_incoming(&mut buf, (stop - now).min(50_000_000))
            .with_context(|| format!("capturing on {iface}"))?
        {
            Some(n) => {
                let rx = now_ns();
                match probe::parse(&buf[..n]) {
                    Some(p) => res.arrivals.entry(p.tenant).or_default().push(Arrival {
                        seq: p.seq,
                        tx_ns: p.tx_ns,
                        rx_ns: rx,
                        size: n as u16,
                        msg_type: DATA_PACKET,
                    }),
                    None => res.foreign_frames += 1,
                }
            }
            None => continue,
        }
    }
    Ok(res)
}
