//! OpenFlow 1.3 actions and the instructions that carry them.

use super::super::CodecError;
use super::super::wire::{Put, Reader, patch_len};
use super::{
    OFPAT_OUTPUT, OFPIT_APPLY_ACTIONS, OFPIT_CLEAR_ACTIONS, OFPIT_GOTO_TABLE, OFPIT_WRITE_ACTIONS,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Output { port: u32, max_len: u16 },
    Other { action_type: u16, body: Vec<u8> },
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
            OFPAT_OUTPUT if len == 16 => Action::Output {
                port: u32::from_be_bytes([body[0], body[1], body[2], body[3]]),
                max_len: u16::from_be_bytes([body[4], body[5]]),
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
        match a {
            Action::Output { port, max_len } => {
                out.put_u16(OFPAT_OUTPUT);
                out.put_u16(16);
                out.put_u32(*port);
                out.put_u16(*max_len);
                out.put_zeros(6);
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
    }
    Ok(out.len() - start)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instruction {
    GotoTable(u8),
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Other { instr_type: u16, body: Vec<u8> },
}

pub(super) fn decode_instructions(buf: &[u8]) -> Result<Vec<Instruction>, CodecError> {
    let mut r = Reader::new(buf);
    let mut out = Vec::new();
    while r.remaining() > 0 {
        let itype = r.u16("instruction type")?;
        let len = r.u16("instruction length")? as usize;
        if len < 8 || !len.is_multiple_of(8) {
            return Err(CodecError::Malformed {
                what: "instruction",
                detail: format!("length {len} must be a multiple of 8 and at least 8"),
            });
        }
        let body = r.bytes(len - 4, "instruction body")?;
        out.push(match itype {
            OFPIT_GOTO_TABLE => Instruction::GotoTable(body[0]),
            OFPIT_WRITE_ACTIONS => Instruction::WriteActions(decode_actions(&body[4..])?),
            OFPIT_APPLY_ACTIONS => Instruction::ApplyActions(decode_actions(&body[4..])?),
            OFPIT_CLEAR_ACTIONS => Instruction::ClearActions,
            _ => Instruction::Other {
                instr_type: itype,
                body: body.to_vec(),
            },
        });
    }
    Ok(out)
}

pub(super) fn encode_instructions(
    instrs: &[Instruction],
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    for i in instrs {
        let start = out.len();
        match i {
            Instruction::GotoTable(tid) => {
                out.put_u16(OFPIT_GOTO_TABLE);
                out.put_u16(8);
                out.put_u8(*tid);
                out.put_zeros(3);
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
                let it = if matches!(i, Instruction::WriteActions(_)) {
                    OFPIT_WRITE_ACTIONS
                } else {
                    OFPIT_APPLY_ACTIONS
                };
                out.put_u16(it);
                out.put_u16(0);
                out.put_zeros(4);
                encode_actions(a, out)?;
                patch_len(out, start, start + 2, "instruction")?;
            }
            Instruction::ClearActions => {
                out.put_u16(OFPIT_CLEAR_ACTIONS);
                out.put_u16(8);
                out.put_zeros(4);
            }
            Instruction::Other { instr_type, body } => {
                let len = 4 + body.len();
                if !len.is_multiple_of(8) {
                    return Err(CodecError::Malformed {
                        what: "instruction",
                        detail: format!("length {len} is not a multiple of 8"),
                    });
                }
                out.put_u16(*instr_type);
                out.put_u16(len as u16);
                out.extend_from_slice(body);
            }
        }
    }
    Ok(())
}
