//! One non-blocking OpenFlow TCP channel: a framing inbox that lets the
//! caller look at the next message before taking it (so a rate-limited
//! tenant's messages wait in the buffer, and TCP pushes back), and an outbox.

use perfbench::codec::{self, CodecError};
use perfbench::conn::SendBuf;
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

/// Stop reading a peer whose unprocessed input exceeds this.
pub const INBOX_HIGH: usize = 256 * 1024;
/// Stop queueing optional traffic (PACKET_INs) to a peer whose output exceeds this.
pub const OUTBOX_HIGH: usize = 4 << 20;

pub struct Chan {
    pub stream: TcpStream,
    inbox: Vec<u8>,
    start: usize,
    pub out: SendBuf,
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
            inbox: Vec::with_capacity(64 * 1024),
            start: 0,
            out: SendBuf::new(64 * 1024),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    pub fn buffered(&self) -> usize {
        self.inbox.len() - self.start
    }

    /// Reads what the socket has (up to the high-water mark).
    pub fn read(&mut self) -> ReadOutcome {
        if self.start > 0 && self.start == self.inbox.len() {
            self.inbox.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 {
            self.inbox.drain(..self.start);
            self.start = 0;
        }
        let mut got = false;
        let mut chunk = [0u8; 65536];
        while self.buffered() < INBOX_HIGH {
            match self.stream.read(&mut chunk) {
                Ok(0) => return ReadOutcome::Closed("peer closed the connection".into()),
                Ok(n) => {
                    self.inbox.extend_from_slice(&chunk[..n]);
                    got = true;
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
        Ok(codec::frame_len(&self.inbox[self.start..])?.is_some())
    }

    /// Takes the next complete message, if any.
    pub fn next_msg(&mut self) -> Result<Option<Vec<u8>>, CodecError> {
        match codec::frame_len(&self.inbox[self.start..])? {
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
        self.inbox.extend_from_slice(bytes);
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

/// poll(2) over a set of descriptors; returns the revents in the same order.
pub fn poll(fds: &[(RawFd, i16)], timeout_ms: i32) -> Vec<i16> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, events)| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of pollfd of the given length.
    let r = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if r <= 0 {
        return vec![0; fds.len()];
    }
    p.iter().map(|x| x.revents).collect()
}
