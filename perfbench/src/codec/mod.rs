//! OpenFlow wire codec: the common header, stream framing, version dispatch,
//! and the message bodies that OpenFlow 1.0 and 1.3 share.
//!
//! `of10` and `of13` hold each version's message enum with `encode`/`decode`.
//! [`Message`] wraps either, so connection code can stay version-agnostic.

pub mod of10;
pub mod of13;
pub mod wire;

use wire::{Put, Reader};

pub const OFP10: u8 = 0x01;
pub const OFP13: u8 = 0x04;
pub const HEADER_LEN: usize = 8;

/// Message type numbers that are equal in 1.0 and 1.3.
pub mod types {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const PACKET_IN: u8 = 10;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("truncated {what}: need {need} bytes, {have} left")]
    Truncated {
        what: &'static str,
        need: usize,
        have: usize,
    },
    #[error(
        "bad OpenFlow header length {length}: must be at least 8 and equal the {available} bytes given"
    )]
    BadLength { length: usize, available: usize },
    #[error("unsupported OpenFlow version 0x{0:02x} (supported: 0x01 = 1.0, 0x04 = 1.3)")]
    UnsupportedVersion(u8),
    #[error("{what} too long to encode: {len} bytes does not fit a 16-bit length")]
    TooLong { what: &'static str, len: usize },
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("message version 0x{msg:02x} does not match the connection's version 0x{conn:02x}")]
    VersionMismatch { msg: u8, conn: u8 },
}

/// The OpenFlow versions perfbench speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Version {
    #[serde(rename = "1.0")]
    V10,
    #[serde(rename = "1.3")]
    V13,
}

impl Version {
    pub fn wire(self) -> u8 {
        match self {
            Version::V10 => OFP10,
            Version::V13 => OFP13,
        }
    }

    pub fn from_wire(v: u8) -> Result<Version, CodecError> {
        match v {
            OFP10 => Ok(Version::V10),
            OFP13 => Ok(Version::V13),
            other => Err(CodecError::UnsupportedVersion(other)),
        }
    }
}

impl std::str::FromStr for Version {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "1.0" | "10" | "of10" | "OpenFlow10" => Ok(Version::V10),
            "1.3" | "13" | "of13" | "OpenFlow13" => Ok(Version::V13),
            _ => Err(format!("unknown OpenFlow version '{s}' (use 1.0 or 1.3)")),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Version::V10 => "1.0",
            Version::V13 => "1.3",
        })
    }
}

/// The 8-byte header every OpenFlow message starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub msg_type: u8,
    pub length: u16,
    pub xid: u32,
}

impl Header {
    /// Reads a header from the first 8 bytes of `buf` (no length check against `buf`).
    #[inline]
    pub fn parse(buf: &[u8]) -> Result<Header, CodecError> {
        if buf.len() < HEADER_LEN {
            return Err(CodecError::Truncated {
                what: "OpenFlow header",
                need: HEADER_LEN,
                have: buf.len(),
            });
        }
        Ok(Header {
            version: buf[0],
            msg_type: buf[1],
            length: u16::from_be_bytes([buf[2], buf[3]]),
            xid: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
        })
    }

    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        out.put_u8(self.version);
        out.put_u8(self.msg_type);
        out.put_u16(self.length);
        out.put_u32(self.xid);
    }
}

/// Length of the first complete message in `buf`, `None` if more bytes are
/// needed, or an error if the header's length field is impossible (< 8).
#[inline]
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, CodecError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let len = u16::from_be_bytes([buf[2], buf[3]]) as usize;
    if len < HEADER_LEN {
        return Err(CodecError::BadLength {
            length: len,
            available: buf.len(),
        });
    }
    Ok(if buf.len() >= len { Some(len) } else { None })
}

/// Starts a message: writes a header with a zero length, returns where it starts.
#[inline]
pub fn begin(out: &mut Vec<u8>, version: u8, msg_type: u8, xid: u32) -> usize {
    let start = out.len();
    Header {
        version,
        msg_type,
        length: 0,
        xid,
    }
    .write(out);
    start
}

/// Finishes a message begun with [`begin`] by patching its length.
#[inline]
pub fn finish(out: &mut [u8], start: usize) -> Result<(), CodecError> {
    wire::patch_len(out, start, start + 2, "OpenFlow message")
}

/// Checks that `buf` is exactly one message and returns its header and body.
pub fn split(buf: &[u8]) -> Result<(Header, &[u8]), CodecError> {
    let h = Header::parse(buf)?;
    if (h.length as usize) < HEADER_LEN || h.length as usize != buf.len() {
        return Err(CodecError::BadLength {
            length: h.length as usize,
            available: buf.len(),
        });
    }
    Ok((h, &buf[HEADER_LEN..]))
}

/// OFPT_ERROR body (same layout in 1.0 and 1.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMsg {
    pub err_type: u16,
    pub code: u16,
    pub data: Vec<u8>,
}

impl ErrorMsg {
    pub fn decode(body: &[u8]) -> Result<ErrorMsg, CodecError> {
        let mut r = Reader::new(body);
        Ok(ErrorMsg {
            err_type: r.u16("error type")?,
            code: r.u16("error code")?,
            data: r.rest().to_vec(),
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.err_type);
        out.put_u16(self.code);
        out.extend_from_slice(&self.data);
    }
}

/// The twelve counters of a port statistics entry (same order in 1.0 and 1.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_frame_err: u64,
    pub rx_over_err: u64,
    pub rx_crc_err: u64,
    pub collisions: u64,
}

impl PortCounters {
    pub fn decode(r: &mut Reader<'_>) -> Result<PortCounters, CodecError> {
        Ok(PortCounters {
            rx_packets: r.u64("port rx_packets")?,
            tx_packets: r.u64("port tx_packets")?,
            rx_bytes: r.u64("port rx_bytes")?,
            tx_bytes: r.u64("port tx_bytes")?,
            rx_dropped: r.u64("port rx_dropped")?,
            tx_dropped: r.u64("port tx_dropped")?,
            rx_errors: r.u64("port rx_errors")?,
            tx_errors: r.u64("port tx_errors")?,
            rx_frame_err: r.u64("port rx_frame_err")?,
            rx_over_err: r.u64("port rx_over_err")?,
            rx_crc_err: r.u64("port rx_crc_err")?,
            collisions: r.u64("port collisions")?,
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        for v in [
            self.rx_packets,
            self.tx_packets,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.rx_errors,
            self.tx_errors,
            self.rx_frame_err,
            self.rx_over_err,
            self.rx_crc_err,
            self.collisions,
        ] {
            out.put_u64(v);
        }
    }
}

/// A decoded message of either version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    V10(of10::Message),
    V13(of13::Message),
}

impl Message {
    pub fn version(&self) -> Version {
        match self {
            Message::V10(_) => Version::V10,
            Message::V13(_) => Version::V13,
        }
    }

    /// Appends the encoded message with transaction id `xid` to `out`.
    pub fn encode(&self, xid: u32, out: &mut Vec<u8>) -> Result<(), CodecError> {
        match self {
            Message::V10(m) => m.encode(xid, out),
            Message::V13(m) => m.encode(xid, out),
        }
    }

    pub fn to_bytes(&self, xid: u32) -> Result<Vec<u8>, CodecError> {
        let mut v = Vec::new();
        self.encode(xid, &mut v)?;
        Ok(v)
    }
}

/// Decodes exactly one message (header included) of either version.
pub fn decode(buf: &[u8]) -> Result<(Header, Message), CodecError> {
    let (h, _) = split(buf)?;
    let m = match Version::from_wire(h.version)? {
        Version::V10 => Message::V10(of10::Message::decode(buf)?.1),
        Version::V13 => Message::V13(of13::Message::decode(buf)?.1),
    };
    Ok((h, m))
}

/// The OFPT_* name of a message type, for records and logs.
pub fn type_name(version: u8, msg_type: u8) -> &'static str {
    match version {
        OFP10 => of10::type_name(msg_type),
        _ => of13::type_name(msg_type),
    }
}

/// Version both sides speak after exchanging HELLOs (OpenFlow 1.3.5 §6.3.1):
/// with version bitmaps on both sides, the highest common bit; otherwise the
/// smaller of the two header versions. `None` if that is not a version we
/// support or allow.
pub fn negotiate(ours: &[Version], their_header: u8, their_bitmap: Option<u32>) -> Option<Version> {
    let our_bits: u32 = ours.iter().fold(0, |b, v| b | (1 << v.wire()));
    let our_max = ours.iter().map(|v| v.wire()).max()?;
    let chosen = match their_bitmap {
        Some(bits) => {
            let common = bits & our_bits;
            if common == 0 {
                return None;
            }
            31 - common.leading_zeros() as u8
        }
        None => our_max.min(their_header),
    };
    let v = Version::from_wire(chosen).ok()?;
    ours.contains(&v).then_some(v)
}
