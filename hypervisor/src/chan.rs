//! One non-blocking OpenFlow TCP channel: a framing inbox that lets the
//! caller look at the next message before taking it (so a rate-limited
//! tenant's messages wait in the buffer, and TCP pushes back), and an outbox.

use crate::poller::Interest;
use perfbench::codec::{self, CodecError};
use perfbench::conn::SendBuf;
use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Stop reading a peer whose unprocessed input exceeds this.
pub const INBOX_HIGH: usize = 256 * 1024;
/// Stop queueing optional traffic (PACKET_INs) to a peer whose output exceeds this.
pub const OUTBOX_HIGH: usize = 4 << 20;

pub struct Chan {
    pub stream: TcpStream,
    /// Allocated (and zeroed) once; input lives in `inbox[start..end]`.
    inbox: Vec<u8>,
    start: usize,
    end: usize,
    pub out: SendBuf,
    /// What the session's poller watches this socket for.
    pub interest: Interest,
}

pub enum ReadOutcome {
    Data,
    Nothing,
    Closed(String),
}

impl Chan {
    pub fn new(stream: TcpStream, nodelay: bool) -> std::io::Result<Chan> {
        stream.set_nonblocking(true)?;
        stream.set_nodelay(nodelay)?;
        Ok(Chan {
            stream,
            inbox: vec![0; INBOX_HIGH + 65_536],
            start: 0,
            end: 0,
            out: SendBuf::new(64 * 1024),
            interest: Interest::default(),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Room at the tail: move the unread bytes to the front when they are few or the tail is short.
    fn make_room(&mut self) {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.inbox.len() - self.end < 65_536 {
            self.inbox.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// Reads what the socket has (up to the high-water mark). A read that
    /// does not fill the room offered has taken everything, so no second
    /// read is made just to see EAGAIN (the poller is level-triggered).
    pub fn read(&mut self) -> ReadOutcome {
        let mut got = false;
        while self.buffered() < INBOX_HIGH {
            self.make_room();
            let room = self.inbox.len() - self.end;
            match self.stream.read(&mut self.inbox[self.end..]) {
                Ok(0) => return ReadOutcome::Closed("peer closed the connection".into()),
                Ok(n) => {
                    self.end += n;
                    got = true;
                    if n < room {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return ReadOutcome::Closed(format!("read: {e}")),
            }
        }
        if got {
            ReadOutcome::Data
        } else {
            ReadOutcome::Nothing
        }
    }

    /// Whether a complete message is waiting (error: impossible length field).
    pub fn has_msg(&self) -> Result<bool, CodecError> {
        Ok(codec::frame_len(&self.inbox[self.start..self.end])?.is_some())
    }

    /// Takes the next complete message, if any.
    pub fn next_msg(&mut self) -> Result<Option<Vec<u8>>, CodecError> {
        match codec::frame_len(&self.inbox[self.start..self.end])? {
            Some(len) => {
                let m = self.inbox[self.start..self.start + len].to_vec();
                self.start += len;
                Ok(Some(m))
            }
            None => Ok(None),
        }
    }

    /// Puts bytes read elsewhere (during a blocking handshake) in front of the socket's.
    pub fn push_input(&mut self, bytes: &[u8]) {
        self.make_room();
        if self.inbox.len() - self.end < bytes.len() {
            self.inbox.resize(self.end + bytes.len(), 0);
        }
        self.inbox[self.end..self.end + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    pub fn send(&mut self, msg: &[u8]) {
        self.out.buf.extend_from_slice(msg);
    }

    pub fn flush(&mut self) -> Result<(), String> {
        if self.out.pending() == 0 {
            return Ok(());
        }
        self.out
            .flush(&mut self.stream)
            .map_err(|e| format!("write: {e}"))
    }
}

/// Starts a non-blocking connect (a tenant controller that is slow or gone
/// must not stall the session thread the other tenants share).
pub fn connect_start(addr: SocketAddr) -> std::io::Result<TcpStream> {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let (family, len) = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_in fits in sockaddr_storage and has a compatible alignment.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            (libc::AF_INET, std::mem::size_of::<libc::sockaddr_in>())
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_scope_id = a.scope_id();
            (libc::AF_INET6, std::mem::size_of::<libc::sockaddr_in6>())
        }
    };
    let flags = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: plain socket(2); the descriptor is owned by the TcpStream below.
    let fd = unsafe { libc::socket(family, flags, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket we own.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    // SAFETY: `ss` holds a valid address of length `len`.
    let r = unsafe {
        libc::connect(
            fd,
            &ss as *const _ as *const libc::sockaddr,
            len as libc::socklen_t,
        )
    };
    let err = std::io::Error::last_os_error();
    if r != 0 && err.raw_os_error() != Some(libc::EINPROGRESS) {
        return Err(err);
    }
    Ok(stream)
}

/// `None` while a connect started by [`connect_start`] is in progress.
pub fn connect_done(s: &TcpStream) -> Option<std::io::Result<()>> {
    match s.take_error() {
        Ok(Some(e)) | Err(e) => return Some(Err(e)),
        Ok(None) => {}
    }
    match s.peer_addr() {
        Ok(_) => Some(Ok(())),
        Err(e) if e.kind() == ErrorKind::NotConnected => None,
        Err(e) => Some(Err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_done(s: &TcpStream) -> std::io::Result<()> {
        for _ in 0..2000 {
            if let Some(r) = connect_done(s) {
                return r;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("connect neither succeeded nor failed in 2 s");
    }

    #[test]
    fn connects_without_blocking() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let s = connect_start(addr).unwrap();
        wait_done(&s).unwrap();
        assert_eq!(s.peer_addr().unwrap(), addr);
        drop(l);
        // Nobody listens there any more: refused, reported, not hung.
        let s = connect_start(addr).unwrap();
        assert!(wait_done(&s).is_err());
    }
}
