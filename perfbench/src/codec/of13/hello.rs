//! OpenFlow 1.3 HELLO elements (version bitmaps decoded, the others kept as bytes).

use super::super::CodecError;
use super::super::wire::{Put, Reader, pad8, patch_len};
use super::OFPHET_VERSIONBITMAP;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloElement {
    /// Bit n set = wire version n supported.
    VersionBitmap(Vec<u32>),
    Other {
        elem_type: u16,
        body: Vec<u8>,
    },
}

pub(super) fn decode_hello_elements(body: &[u8]) -> Result<Vec<HelloElement>, CodecError> {
    let mut r = Reader::new(body);
    let mut out = Vec::new();
    while r.remaining() >= 4 {
        let etype = r.u16("hello element type")?;
        let len = r.u16("hello element length")? as usize;
        if len < 4 {
            return Err(CodecError::Malformed {
                what: "hello element",
                detail: format!("length {len} < 4"),
            });
        }
        let eb = r.bytes(len - 4, "hello element body")?;
        // The last element's padding may be missing; tolerate that.
        let pad = pad8(len).min(r.remaining());
        r.skip(pad, "hello element padding")?;
        out.push(match etype {
            OFPHET_VERSIONBITMAP => {
                if eb.len() % 4 != 0 {
                    return Err(CodecError::Malformed {
                        what: "hello version bitmap",
                        detail: format!("{} bytes is not a multiple of 4", eb.len()),
                    });
                }
                HelloElement::VersionBitmap(
                    eb.chunks_exact(4)
                        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                        .collect(),
                )
            }
            _ => HelloElement::Other {
                elem_type: etype,
                body: eb.to_vec(),
            },
        });
    }
    Ok(out)
}

pub(super) fn encode_hello_elements(
    elements: &[HelloElement],
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    for e in elements {
        let start = out.len();
        match e {
            HelloElement::VersionBitmap(bits) => {
                out.put_u16(OFPHET_VERSIONBITMAP);
                out.put_u16(0);
                for b in bits {
                    out.put_u32(*b);
                }
            }
            HelloElement::Other { elem_type, body } => {
                out.put_u16(*elem_type);
                out.put_u16(0);
                out.extend_from_slice(body);
            }
        }
        patch_len(out, start, start + 2, "hello element")?;
        let len = out.len() - start;
        out.put_zeros(pad8(len));
    }
    Ok(())
}
