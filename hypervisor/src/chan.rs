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
    /// Allocated (and zeroed) once; input lives in `inbox[start..end]`.
    inbox: Vec<u8>,
    start: usize,
    end: usize,
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
            inbox: vec![0; INBOX_HIGH + 65_536],
            start: 0,
            end: 0,
            out: SendBuf::new(64 * 1024),
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

    /// Reads what the socket has (up to the high-water mark).
    pub fn read(&mut self) -> ReadOutcome {
        let mut got = false;
        while self.buffered() < INBOX_HIGH {
            self.make_room();
            match self.stream.read(&mut self.inbox[self.end..]) {
                Ok(0) => return ReadOutcome::Closed("peer closed the connection".into()),
                Ok(n) => {
                    self.end += n;
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

/// ppoll(2) over a set of descriptors; returns the revents in the same order.
pub fn poll(fds: &[(RawFd, i16)], timeout_ns: u64) -> Vec<i16> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, events)| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `p` is a valid array of pollfd of the given length, `ts` a valid timespec.
    let r = unsafe {
        libc::ppoll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r <= 0 {
        return vec![0; fds.len()];
    }
    p.iter().map(|x| x.revents).collect()
}

/// Whether poll reported input (or a hang-up or error, which a read will reveal).
pub fn readable(revents: i16) -> bool {
    revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
}
