//! OpenFlow connections: TCP setup, a framing receive buffer, a pending-write
//! buffer, and the controller-side and switch-side handshakes.

use crate::clock::now_ns;
use crate::codec::{self, CodecError, Header, Message, Version, of13};
use crate::messages::{self, CONTROL_XID_BASE};
use anyhow::{Context, anyhow, bail};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Receive buffer with in-place framing: read as much as the socket has,
/// then hand out complete messages.
pub struct RecvBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl RecvBuf {
    pub fn new(cap: usize) -> RecvBuf {
        RecvBuf {
            buf: vec![0; cap.max(131_072)],
            start: 0,
            end: 0,
        }
    }

    /// One read from `r`. Ok(0) means the peer closed; WouldBlock is passed up.
    pub fn fill(&mut self, r: &mut impl Read) -> std::io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.buf.len() - self.end < 65_536 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let n = r.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// The next complete message, if any (header included).
    #[inline]
    pub fn next_msg(&mut self) -> Result<Option<&[u8]>, CodecError> {
        match codec::frame_len(&self.buf[self.start..self.end])? {
            Some(len) => {
                let s = self.start;
                self.start += len;
                Ok(Some(&self.buf[s..s + len]))
            }
            None => Ok(None),
        }
    }
}

/// Bytes queued for a non-blocking socket.
pub struct SendBuf {
    pub buf: Vec<u8>,
    sent: usize,
}

impl SendBuf {
    pub fn new(cap: usize) -> SendBuf {
        SendBuf {
            buf: Vec::with_capacity(cap),
            sent: 0,
        }
    }

    pub fn pending(&self) -> usize {
        self.buf.len() - self.sent
    }

    /// Writes as much as the socket takes. Err only on real errors.
    pub fn flush(&mut self, w: &mut impl Write) -> std::io::Result<()> {
        while self.sent < self.buf.len() {
            match w.write(&self.buf[self.sent..]) {
                Ok(0) => return Err(std::io::Error::new(ErrorKind::WriteZero, "peer closed")),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.sent == self.buf.len() {
            self.buf.clear();
            self.sent = 0;
        } else if self.sent > (1 << 20) {
            self.buf.drain(..self.sent);
            self.sent = 0;
        }
        Ok(())
    }
}

pub fn parse_addr(s: &str) -> anyhow::Result<SocketAddr> {
    s.parse::<SocketAddr>()
        .map_err(|_| anyhow!("'{s}' is not an address of the form IP:PORT (e.g. 127.0.0.1:6653)"))
}

pub fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))
}

/// Accepts one connection before `deadline_ns`.
pub fn accept_until(l: &TcpListener, deadline_ns: u64, who: &str) -> anyhow::Result<TcpStream> {
    l.set_nonblocking(true)?;
    let local = l.local_addr()?;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                return Ok(s);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if now_ns() >= deadline_ns {
                    bail!("no {who} connected to {local} in time");
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e).with_context(|| format!("accept on {local}")),
        }
    }
}

/// Connects, retrying until `deadline_ns` (the peer may still be starting).
pub fn connect_until(addr: SocketAddr, deadline_ns: u64) -> anyhow::Result<TcpStream> {
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            Ok(s) => return Ok(s),
            Err(e) => {
                if now_ns() >= deadline_ns {
                    return Err(e).with_context(|| format!("cannot connect to {addr}"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Reads one whole message with a blocking socket, before `deadline_ns`.
fn recv_blocking(
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    deadline_ns: u64,
    waiting_for: &str,
) -> anyhow::Result<Vec<u8>> {
    loop {
        if let Some(m) = rb.next_msg()? {
            return Ok(m.to_vec());
        }
        let now = now_ns();
        if now >= deadline_ns {
            bail!("timed out waiting for {waiting_for}");
        }
        s.set_read_timeout(Some(Duration::from_nanos(
            (deadline_ns - now).max(1_000_000),
        )))?;
        match rb.fill(s) {
            Ok(0) => bail!("peer closed the connection while we waited for {waiting_for}"),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => {
                return Err(e).with_context(|| format!("reading while waiting for {waiting_for}"));
            }
        }
    }
}

fn send_msg(s: &mut TcpStream, m: &Message, xid: u32) -> anyhow::Result<()> {
    s.write_all(&m.to_bytes(xid)?)
        .context("sending during handshake")
}

/// HELLO exchange offering `allowed`; returns the negotiated version.
fn exchange_hello(
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    allowed: &[Version],
    deadline_ns: u64,
) -> anyhow::Result<Version> {
    let want = allowed
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(" or ");
    send_msg(s, &messages::hello(allowed), CONTROL_XID_BASE)?;
    let m = recv_blocking(s, rb, deadline_ns, "the peer's HELLO")?;
    let h = Header::parse(&m)?;
    if h.msg_type == codec::types::ERROR {
        let e = codec::ErrorMsg::decode(&m[8..])?;
        bail!(
            "peer refused the connection with OFPT_ERROR type {} code {} (OpenFlow {want} requested; is the peer configured for it?)",
            e.err_type,
            e.code
        );
    }
    if h.msg_type != codec::types::HELLO {
        bail!(
            "expected HELLO first, got message type {} (version 0x{:02x})",
            h.msg_type,
            h.version
        );
    }
    let bitmap = if h.version == codec::OFP13 {
        of13::Message::decode(&m)
            .ok()
            .and_then(|(_, m)| m.hello_bitmap())
    } else {
        None
    };
    codec::negotiate(allowed, h.version, bitmap).ok_or_else(|| {
        anyhow!(
            "version mismatch: we speak OpenFlow {want}, the peer's HELLO says version 0x{:02x}{}",
            h.version,
            bitmap
                .map(|b| format!(" (bitmap 0x{b:x})"))
                .unwrap_or_default()
        )
    })
}

/// Controller side: HELLO, FEATURES_REQUEST, wait for FEATURES_REPLY
/// (answering ECHO_REQUESTs meanwhile). Returns the datapath id and the
/// buffer (which may already hold later messages).
pub fn controller_handshake(
    s: &mut TcpStream,
    v: Version,
    deadline_ns: u64,
) -> anyhow::Result<(u64, RecvBuf)> {
    let mut rb = RecvBuf::new(1 << 20);
    exchange_hello(s, &mut rb, &[v], deadline_ns)?;
    send_msg(s, &messages::features_request(v), CONTROL_XID_BASE + 1)?;
    loop {
        let m = recv_blocking(s, &mut rb, deadline_ns, "FEATURES_REPLY")?;
        let (h, msg) = codec::decode(&m)
            .with_context(|| format!("decoding {} bytes from the switch", m.len()))?;
        match (h.msg_type, msg) {
            (
                codec::types::FEATURES_REPLY,
                Message::V10(codec::of10::Message::FeaturesReply(f)),
            ) => {
                return Ok((f.datapath_id, rb));
            }
            (codec::types::FEATURES_REPLY, Message::V13(of13::Message::FeaturesReply(f))) => {
                return Ok((f.datapath_id, rb));
            }
            (codec::types::ECHO_REQUEST, _) => {
                let mut r = m.clone();
                r[1] = codec::types::ECHO_REPLY;
                s.write_all(&r)?;
            }
            (codec::types::ERROR, _) => {
                let e = codec::ErrorMsg::decode(&m[8..])?;
                bail!(
                    "switch sent OFPT_ERROR type {} code {} during the handshake",
                    e.err_type,
                    e.code
                );
            }
            _ => {}
        }
    }
}

/// Sends `m` followed by a BARRIER_REQUEST and waits for the BARRIER_REPLY,
/// failing on any OFPT_ERROR the switch sends in between.
pub fn send_and_barrier(
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    v: Version,
    m: &Message,
    deadline_ns: u64,
) -> anyhow::Result<()> {
    send_msg(s, m, CONTROL_XID_BASE + 2)?;
    send_msg(s, &messages::barrier_request(v), CONTROL_XID_BASE + 3)?;
    loop {
        let r = recv_blocking(s, rb, deadline_ns, "BARRIER_REPLY")?;
        let h = Header::parse(&r)?;
        if h.msg_type == messages::barrier_reply_type(v) && h.xid == CONTROL_XID_BASE + 3 {
            return Ok(());
        }
        if h.msg_type == codec::types::ERROR {
            let e = codec::ErrorMsg::decode(&r[8..])?;
            bail!(
                "switch rejected the message with OFPT_ERROR type {} code {}",
                e.err_type,
                e.code
            );
        }
        if h.msg_type == codec::types::ECHO_REQUEST {
            let mut e = r.clone();
            e[1] = codec::types::ECHO_REPLY;
            s.write_all(&e)?;
        }
    }
}

/// Switch side: HELLO exchange only; the FEATURES_REQUEST is answered by the
/// switch's message loop like any other request. Returns the negotiated version.
pub fn switch_hello(
    s: &mut TcpStream,
    allowed: &[Version],
    deadline_ns: u64,
) -> anyhow::Result<(Version, RecvBuf)> {
    let mut rb = RecvBuf::new(1 << 20);
    let v = exchange_hello(s, &mut rb, allowed, deadline_ns)?;
    Ok((v, rb))
}

pub fn set_nodelay(s: &TcpStream, on: bool) -> anyhow::Result<()> {
    s.set_nodelay(on).context("setting TCP_NODELAY")
}
