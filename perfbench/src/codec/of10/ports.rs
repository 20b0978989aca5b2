//! OpenFlow 1.0 ports: ofp_phy_port and the FEATURES_REPLY that lists them.

use super::super::CodecError;
use super::super::wire::{Put, Reader};

const PHY_PORT_LEN: usize = 48;

/// ofp_phy_port: a port as listed in FEATURES_REPLY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhyPort {
    pub port_no: u16,
    pub hw_addr: [u8; 6],
    pub name: [u8; 16],
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
}

impl PhyPort {
    /// A port with a NUL-padded name (truncated to 15 bytes).
    pub fn named(port_no: u16, hw_addr: [u8; 6], name: &str) -> PhyPort {
        let mut n = [0u8; 16];
        let b = name.as_bytes();
        let k = b.len().min(15);
        n[..k].copy_from_slice(&b[..k]);
        PhyPort {
            port_no,
            hw_addr,
            name: n,
            config: 0,
            state: 0,
            curr: 0,
            advertised: 0,
            supported: 0,
            peer: 0,
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<PhyPort, CodecError> {
        Ok(PhyPort {
            port_no: r.u16("phy_port port_no")?,
            hw_addr: r.array("phy_port hw_addr")?,
            name: r.array("phy_port name")?,
            config: r.u32("phy_port config")?,
            state: r.u32("phy_port state")?,
            curr: r.u32("phy_port curr")?,
            advertised: r.u32("phy_port advertised")?,
            supported: r.u32("phy_port supported")?,
            peer: r.u32("phy_port peer")?,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.port_no);
        out.extend_from_slice(&self.hw_addr);
        out.extend_from_slice(&self.name);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
        ] {
            out.put_u32(v);
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub capabilities: u32,
    pub actions: u32,
    pub ports: Vec<PhyPort>,
}

impl FeaturesReply {
    pub(super) fn decode(r: &mut Reader<'_>) -> Result<FeaturesReply, CodecError> {
        let datapath_id = r.u64("features datapath_id")?;
        let n_buffers = r.u32("features n_buffers")?;
        let n_tables = r.u8("features n_tables")?;
        r.skip(3, "features pad")?;
        let capabilities = r.u32("features capabilities")?;
        let actions = r.u32("features actions")?;
        if !r.remaining().is_multiple_of(PHY_PORT_LEN) {
            return Err(CodecError::Malformed {
                what: "FEATURES_REPLY",
                detail: format!(
                    "{} port bytes is not a multiple of {PHY_PORT_LEN}",
                    r.remaining()
                ),
            });
        }
        let mut ports = Vec::new();
        while r.remaining() > 0 {
            ports.push(PhyPort::decode(r)?);
        }
        Ok(FeaturesReply {
            datapath_id,
            n_buffers,
            n_tables,
            capabilities,
            actions,
            ports,
        })
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.datapath_id);
        out.put_u32(self.n_buffers);
        out.put_u8(self.n_tables);
        out.put_zeros(3);
        out.put_u32(self.capabilities);
        out.put_u32(self.actions);
        for p in &self.ports {
            p.encode(out);
        }
    }
}
