//! OpenFlow 1.0 actions (OUTPUT decoded, the others kept as bytes).

use super::super::CodecError;
use super::super::wire::{Put, Reader};
use super::OFPAT_OUTPUT;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Output {
        port: u16,
        max_len: u16,
    },
    /// Any other action, kept as its type and the bytes after the 4-byte action header.
    Other {
        action_type: u16,
        body: Vec<u8>,
    },
}

impl Action {
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        match self {
            Action::Output { port, max_len } => {
                out.put_u16(OFPAT_OUTPUT);
                out.put_u16(8);
                out.put_u16(*port);
                out.put_u16(*max_len);
            }
            Action::Other { action_type, body } => {
                let len = 4 + body.len();
                if !len.is_multiple_of(8) {
                    return Err(CodecError::Malformed {
                        what: "action",
                        detail: format!("length {len} is not a multiple of 8"),
                    });
                }
                out.put_u16(*action_type);
                out.put_u16(len as u16);
                out.extend_from_slice(body);
            }
        }
        Ok(())
    }
}

pub(super) fn decode_actions(buf: &[u8]) -> Result<Vec<Action>, CodecError> {
    let mut r = Reader::new(buf);
    let mut actions = Vec::new();
    while r.remaining() > 0 {
        let action_type = r.u16("action type")?;
        let len = r.u16("action length")? as usize;
        if len < 8 || !len.is_multiple_of(8) {
            return Err(CodecError::Malformed {
                what: "action",
                detail: format!("length {len} must be a multiple of 8 and at least 8"),
            });
        }
        let body = r.bytes(len - 4, "action body")?;
        actions.push(match action_type {
            OFPAT_OUTPUT if len == 8 => Action::Output {
                port: u16::from_be_bytes([body[0], body[1]]),
                max_len: u16::from_be_bytes([body[2], body[3]]),
            },
            _ => Action::Other {
                action_type,
                body: body.to_vec(),
            },
        });
    }
    Ok(actions)
}

pub(super) fn encode_actions(actions: &[Action], out: &mut Vec<u8>) -> Result<usize, CodecError> {
    let start = out.len();
    for a in actions {
        a.encode(out)?;
    }
    Ok(out.len() - start)
}
