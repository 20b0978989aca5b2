//! OpenFlow 1.3 matches: OXM TLVs in an ofp_match of type OFPMT_OXM.

use super::super::CodecError;
use super::super::wire::{Put, Reader, pad8, patch_len};
use super::{OFPMT_OXM, OFPXMC_OPENFLOW_BASIC, OXM_OF_IN_PORT};

/// One OXM TLV of a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oxm {
    pub class: u16,
    pub field: u8,
    pub hasmask: bool,
    pub value: Vec<u8>,
}

impl Oxm {
    pub fn in_port(port: u32) -> Oxm {
        Oxm {
            class: OFPXMC_OPENFLOW_BASIC,
            field: OXM_OF_IN_PORT,
            hasmask: false,
            value: port.to_be_bytes().to_vec(),
        }
    }
}

/// An OXM match (ofp_match with type OFPMT_OXM).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Match {
    pub fields: Vec<Oxm>,
}

impl Match {
    /// Reads a match from `r` (also used by messages the codec keeps as bytes).
    pub fn decode(r: &mut Reader<'_>) -> Result<Match, CodecError> {
        let mtype = r.u16("match type")?;
        let len = r.u16("match length")? as usize;
        if mtype != OFPMT_OXM || len < 4 {
            return Err(CodecError::Malformed {
                what: "match",
                detail: format!(
                    "type {mtype} length {len}: only OXM matches (type 1, length >= 4) are supported"
                ),
            });
        }
        let body = r.bytes(len - 4, "match fields")?;
        r.skip(pad8(len), "match padding")?;
        let mut fr = Reader::new(body);
        let mut fields = Vec::new();
        while fr.remaining() > 0 {
            let class = fr.u16("oxm class")?;
            let fh = fr.u8("oxm field")?;
            let vlen = fr.u8("oxm length")? as usize;
            fields.push(Oxm {
                class,
                field: fh >> 1,
                hasmask: fh & 1 == 1,
                value: fr.bytes(vlen, "oxm value")?.to_vec(),
            });
        }
        Ok(Match { fields })
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = out.len();
        out.put_u16(OFPMT_OXM);
        out.put_u16(0);
        for f in &self.fields {
            if f.field > 0x7f {
                return Err(CodecError::Malformed {
                    what: "oxm",
                    detail: format!("field {} does not fit 7 bits", f.field),
                });
            }
            let vlen = u8::try_from(f.value.len()).map_err(|_| CodecError::TooLong {
                what: "oxm value",
                len: f.value.len(),
            })?;
            out.put_u16(f.class);
            out.put_u8((f.field << 1) | f.hasmask as u8);
            out.put_u8(vlen);
            out.extend_from_slice(&f.value);
        }
        patch_len(out, start, start + 2, "match")?;
        let len = out.len() - start;
        out.put_zeros(pad8(len));
        Ok(())
    }
}
