//! FlowVisor's slicing rules for what a tenant sends: a FLOW_MOD is
//! intersected with the slice's flowspace (one rule per slice port when the
//! tenant wildcards in_port), its actions may output only to the slice's
//! ports and may not rewrite a field the flowspace fixes, and its cookie
//! carries the slice's tag. PACKET_OUT follows the same action rules.

use crate::config::Slice;
use crate::fields::{Field, Fields};
use crate::ofmatch::{self, Inexpressible};
use perfbench::codec::{of10, of13};

/// Why a tenant's message is refused (answered with an OpenFlow EPERM error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    OutsideFlowspace,
    Port(u32),
    Action(&'static str),
    Inexpressible(&'static str),
}

impl From<Inexpressible> for Denied {
    fn from(e: Inexpressible) -> Self {
        Denied::Inexpressible(e.0)
    }
}

const TAG_SHIFT: u32 = 56;
pub const TAG_MASK: u64 = 0xff << TAG_SHIFT;
pub const OFPFF_SEND_FLOW_REM: u16 = 1;

pub fn tag_cookie(tag: u8, cookie: u64) -> u64 {
    ((tag as u64) << TAG_SHIFT) | (cookie & !TAG_MASK)
}

pub fn cookie_tag(cookie: u64) -> u8 {
    (cookie >> TAG_SHIFT) as u8
}

/// A reserved or physical output port, version-independent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Phys(u32),
    InPort,
    Table,
    Normal,
    Flood,
    All,
    Controller,
    Local,
    Invalid,
}

fn out10(p: u16) -> Out {
    match p {
        0xfff8 => Out::InPort,
        0xfff9 => Out::Table,
        0xfffa => Out::Normal,
        0xfffb => Out::Flood,
        0xfffc => Out::All,
        0xfffd => Out::Controller,
        0xfffe => Out::Local,
        p if p < 0xff00 => Out::Phys(p as u32),
        _ => Out::Invalid,
    }
}

fn out13(p: u32) -> Out {
    match p {
        0xffff_fff8 => Out::InPort,
        0xffff_fff9 => Out::Table,
        0xffff_fffa => Out::Normal,
        0xffff_fffb => Out::Flood,
        0xffff_fffc => Out::All,
        0xffff_fffd => Out::Controller,
        0xffff_fffe => Out::Local,
        p if p < 0xffff_ff00 => Out::Phys(p),
        _ => Out::Invalid,
    }
}

/// The physical ports an output resolves to in the slice: `None` to keep the
/// action as it is, `Some(list)` to replace it by outputs to `list`.
fn check_output(s: &Slice, out: Out, in_port: Option<u32>) -> Result<Option<Vec<u32>>, Denied> {
    match out {
        Out::Phys(p) if s.has_port(p) => Ok(None),
        Out::Phys(p) => Err(Denied::Port(p)),
        Out::InPort | Out::Table | Out::Controller => Ok(None),
        Out::Flood | Out::All => match &s.ports {
            None => Ok(None),
            Some(ports) => Ok(Some(
                ports
                    .iter()
                    .copied()
                    .filter(|p| Some(*p) != in_port)
                    .collect(),
            )),
        },
        Out::Local if s.ports.is_none() => Ok(None),
        Out::Normal => Err(Denied::Action("output to NORMAL bypasses the slice")),
        Out::Local | Out::Invalid => Err(Denied::Action("output to a port outside the slice")),
    }
}

fn refuse_rewrite(fs: &Fields, field: Field) -> Result<(), Denied> {
    if fs.constrains(field) {
        Err(Denied::Action(
            "rewrites a field the slice's flowspace fixes",
        ))
    } else {
        Ok(())
    }
}

fn actions10(
    s: &Slice,
    actions: &[of10::Action],
    in_port: Option<u32>,
) -> Result<Vec<of10::Action>, Denied> {
    let mut out = Vec::with_capacity(actions.len());
    for a in actions {
        match a {
            of10::Action::Output { port, max_len } => match check_output(s, out10(*port), in_port)?
            {
                None => out.push(a.clone()),
                Some(ports) => out.extend(ports.into_iter().map(|p| of10::Action::Output {
                    port: p as u16,
                    max_len: *max_len,
                })),
            },
            of10::Action::Other { action_type, body } => {
                let fs = &s.flowspace;
                match action_type {
                    1 | 3 => refuse_rewrite(fs, Field::Vlan)?,
                    4 => refuse_rewrite(fs, Field::EthSrc)?,
                    5 => refuse_rewrite(fs, Field::EthDst)?,
                    6 => refuse_rewrite(fs, Field::Ipv4Src)?,
                    7 => refuse_rewrite(fs, Field::Ipv4Dst)?,
                    9 => refuse_rewrite(fs, Field::TpSrc)?,
                    10 => refuse_rewrite(fs, Field::TpDst)?,
                    11 => {
                        let p = u16::from_be_bytes([body[0], body[1]]);
                        if check_output(s, out10(p), in_port)?.is_some() {
                            return Err(Denied::Action("enqueue to FLOOD/ALL"));
                        }
                    }
                    0xffff => return Err(Denied::Action("vendor actions")),
                    _ => {}
                }
                out.push(a.clone());
            }
        }
    }
    Ok(out)
}

fn actions13(
    s: &Slice,
    actions: &[of13::Action],
    in_port: Option<u32>,
) -> Result<Vec<of13::Action>, Denied> {
    let mut out = Vec::with_capacity(actions.len());
    let fs = &s.flowspace;
    for a in actions {
        match a {
            of13::Action::Output { port, max_len } => match check_output(s, out13(*port), in_port)?
            {
                None => out.push(a.clone()),
                Some(ports) => out.extend(ports.into_iter().map(|port| of13::Action::Output {
                    port,
                    max_len: *max_len,
                })),
            },
            of13::Action::Other { action_type, body } => {
                match action_type {
                    17 | 18 => refuse_rewrite(fs, Field::Vlan)?,
                    19 | 20 => refuse_rewrite(fs, Field::EthType)?,
                    22 => return Err(Denied::Action("group actions (groups are not sliced)")),
                    25 => {
                        let basic = body.len() >= 4 && body[0..2] == [0x80, 0x00];
                        match ofmatch::oxm_field(body.get(2).map_or(0xff, |b| b >> 1)) {
                            Some(f) if basic => refuse_rewrite(fs, f)?,
                            _ => {}
                        }
                    }
                    26 | 27 => {
                        for f in [Field::EthSrc, Field::EthDst, Field::Vlan] {
                            refuse_rewrite(fs, f)?;
                        }
                    }
                    0xffff => return Err(Denied::Action("experimenter actions")),
                    _ => {}
                }
                out.push(a.clone());
            }
        }
    }
    Ok(out)
}

/// The match a tenant's match becomes in the slice (in_port still open).
fn intersect(s: &Slice, tenant: &Fields) -> Result<Fields, Denied> {
    if let Some(p) = tenant.in_port
        && !s.has_port(p)
    {
        return Err(Denied::Port(p));
    }
    tenant
        .intersect(&s.flowspace)
        .ok_or(Denied::OutsideFlowspace)
}

/// The in_ports a rule is installed for: the tenant's, each slice port, or any.
fn expand_ports(s: &Slice, f: &Fields) -> Vec<Option<u32>> {
    match (f.in_port, &s.ports) {
        (Some(p), _) => vec![Some(p)],
        (None, Some(ports)) => ports.iter().map(|p| Some(*p)).collect(),
        (None, None) => vec![None],
    }
}

fn out_port_ok(s: &Slice, out: Out) -> Result<(), Denied> {
    match out {
        Out::Phys(p) if !s.has_port(p) => Err(Denied::Port(p)),
        _ => Ok(()),
    }
}

/// The FLOW_MODs that install `fm` in the slice, or why it is refused.
pub fn flow_mod10(s: &Slice, fm: &of10::FlowMod) -> Result<Vec<of10::FlowMod>, Denied> {
    let both = intersect(s, &ofmatch::from_of10(&fm.match_))?;
    if fm.out_port != of10::OFPP_NONE {
        out_port_ok(s, out10(fm.out_port))?;
    }
    let mut mods = Vec::new();
    for port in expand_ports(s, &both) {
        let mut m = fm.clone();
        let f = Fields {
            in_port: port,
            ..both.clone()
        };
        ofmatch::apply_of10(&mut m.match_, &f)?;
        m.actions = actions10(s, &fm.actions, port)?;
        m.cookie = tag_cookie(s.cookie_tag, fm.cookie);
        m.flags |= OFPFF_SEND_FLOW_REM;
        mods.push(m);
    }
    Ok(mods)
}

fn instructions13(
    s: &Slice,
    instrs: &[of13::Instruction],
    in_port: Option<u32>,
) -> Result<Vec<of13::Instruction>, Denied> {
    instrs
        .iter()
        .map(|i| {
            Ok(match i {
                of13::Instruction::ApplyActions(a) => {
                    of13::Instruction::ApplyActions(actions13(s, a, in_port)?)
                }
                of13::Instruction::WriteActions(a) => {
                    of13::Instruction::WriteActions(actions13(s, a, in_port)?)
                }
                other => other.clone(),
            })
        })
        .collect()
}

/// The 1.3 counterpart of [`flow_mod10`]; modifications and deletions are
/// also confined to the slice's own flows by the cookie mask.
pub fn flow_mod13(s: &Slice, fm: &of13::FlowMod) -> Result<Vec<of13::FlowMod>, Denied> {
    let (tenant, rest) = ofmatch::from_oxms(&fm.match_.fields);
    for o in &rest {
        let constrained = ofmatch::oxm_field(o.field).is_some_and(|f| {
            s.flowspace.constrains(f) || (f == Field::InPort && s.ports.is_some())
        });
        if o.class == of13::OFPXMC_OPENFLOW_BASIC && constrained {
            return Err(Denied::OutsideFlowspace);
        }
    }
    let both = intersect(s, &tenant)?;
    if fm.out_port != of13::OFPP_ANY {
        out_port_ok(s, out13(fm.out_port))?;
    }
    let mut mods = Vec::new();
    for port in expand_ports(s, &both) {
        let mut m = fm.clone();
        let f = Fields {
            in_port: port,
            ..both.clone()
        };
        m.match_.fields = ofmatch::to_oxms(&f, &rest)?;
        m.instructions = instructions13(s, &fm.instructions, port)?;
        m.cookie = tag_cookie(s.cookie_tag, fm.cookie);
        if fm.command != 0 {
            m.cookie_mask = fm.cookie_mask | TAG_MASK;
        }
        m.flags |= OFPFF_SEND_FLOW_REM;
        mods.push(m);
    }
    Ok(mods)
}

/// The slice's version of a PACKET_OUT's actions (in_port is the packet's).
pub fn packet_out10(s: &Slice, po: &of10::PacketOut) -> Result<Vec<of10::Action>, Denied> {
    actions10(s, &po.actions, packet_in_port(s, out10(po.in_port))?)
}

pub fn packet_out13(s: &Slice, po: &of13::PacketOut) -> Result<Vec<of13::Action>, Denied> {
    actions13(s, &po.actions, packet_in_port(s, out13(po.in_port))?)
}

/// A PACKET_OUT's physical in_port, which must be one of the slice's (None: a reserved port).
fn packet_in_port(s: &Slice, in_port: Out) -> Result<Option<u32>, Denied> {
    match in_port {
        Out::Phys(p) if !s.has_port(p) => Err(Denied::Port(p)),
        Out::Phys(p) => Ok(Some(p)),
        _ => Ok(None),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
