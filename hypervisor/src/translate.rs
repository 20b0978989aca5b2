//! Identifier translation: the hypervisor's xids towards the switch map back
//! to (tenant, tenant's xid), and buffer ids towards a tenant are virtual, so
//! tenants never see, or use, each other's identifiers.

use std::collections::{HashMap, VecDeque};

/// What to do with the reply to a forwarded request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// Pass it back unchanged (only the xid is restored).
    Plain,
    /// Keep the slice's flows (cookie tag), clear the tag.
    FlowStats,
    /// Keep the slice's ports (and only `port` when the tenant asked for one).
    PortStats { port: Option<u32> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub tenant: u64,
    pub tenant_xid: u32,
    pub kind: Pending,
}

/// Requests awaiting an answer. Messages without a reply (FLOW_MOD,
/// PACKET_OUT) stay only so that an error can find its tenant, and expire.
#[derive(Debug, Default)]
pub struct PendingMap {
    map: HashMap<u32, Entry>,
    order: VecDeque<(u32, u64)>,
    next: u32,
}

/// Entries older than this are forgotten (their answer, if any, is dropped).
const KEEP_NS: u64 = 30_000_000_000;
/// And never more than this many.
const MAX_ENTRIES: usize = 1 << 20;
/// The hypervisor's own requests use xids at and above this.
pub const OWN_XIDS: u32 = 0xFFF0_0000;

impl PendingMap {
    /// Registers a forwarded request; returns the xid to send it with.
    pub fn add(&mut self, tenant: u64, tenant_xid: u32, kind: Pending, now_ns: u64) -> u32 {
        self.next = if self.next == 0 || self.next >= OWN_XIDS - 1 {
            1
        } else {
            self.next + 1
        };
        let xid = self.next;
        self.map.insert(
            xid,
            Entry {
                tenant,
                tenant_xid,
                kind,
            },
        );
        self.order.push_back((xid, now_ns));
        xid
    }

    /// The entry for a reply; kept when more parts of a multipart reply follow.
    pub fn take(&mut self, xid: u32, more: bool) -> Option<Entry> {
        if more {
            self.map.get(&xid).copied()
        } else {
            self.map.remove(&xid)
        }
    }

    pub fn expire(&mut self, now_ns: u64) {
        while let Some(&(xid, t)) = self.order.front() {
            if now_ns.saturating_sub(t) < KEEP_NS && self.order.len() <= MAX_ENTRIES {
                break;
            }
            self.order.pop_front();
            self.map.remove(&xid);
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Virtual buffer ids: a tenant can only release buffers of its own PACKET_INs.
#[derive(Debug, Default)]
pub struct BufferMap {
    map: HashMap<u32, (u64, u32)>,
    order: VecDeque<u32>,
    next: u32,
}

const MAX_BUFFERS: usize = 65_536;
const NO_BUFFER: u32 = 0xffff_ffff;

impl BufferMap {
    pub fn insert(&mut self, tenant: u64, real: u32) -> u32 {
        self.next = if self.next >= NO_BUFFER - 1 {
            1
        } else {
            self.next + 1
        };
        let virt = self.next;
        self.map.insert(virt, (tenant, real));
        self.order.push_back(virt);
        if self.order.len() > MAX_BUFFERS
            && let Some(old) = self.order.pop_front()
        {
            self.map.remove(&old);
        }
        virt
    }

    /// The switch's buffer id for a tenant's virtual one (once: a buffer is used up).
    pub fn resolve(&mut self, tenant: u64, virt: u32) -> Option<u32> {
        match self.map.get(&virt) {
            Some(&(t, real)) if t == tenant => {
                self.map.remove(&virt);
                Some(real)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xids_map_back_and_expire() {
        let mut p = PendingMap::default();
        let a = p.add(1, 77, Pending::Plain, 0);
        let b = p.add(2, 77, Pending::FlowStats, 0);
        assert_ne!(a, b, "two tenants' equal xids get different switch xids");
        assert_eq!(p.take(b, true).unwrap().tenant, 2);
        assert_eq!(p.take(b, false).unwrap().kind, Pending::FlowStats);
        assert_eq!(p.take(b, false), None);
        p.expire(KEEP_NS + 1);
        assert!(p.is_empty());
    }

    #[test]
    fn buffers_belong_to_one_tenant() {
        let mut m = BufferMap::default();
        let v = m.insert(1, 500);
        assert_eq!(m.resolve(2, v), None, "another tenant's buffer");
        assert_eq!(m.resolve(1, v), Some(500));
        assert_eq!(m.resolve(1, v), None, "used up");
    }
}
