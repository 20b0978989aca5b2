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
/// PACKET_OUT) have an entry only so that an error can find its tenant.
///
/// xids are handed out in sequence, so the entries live in a ring indexed by
/// xid: adding is one store, a lookup one load, and nothing is ever rehashed
/// or swept. (A hash map of every request of the last 30 s — 600 000 at
/// 20k PACKET_OUT/s — cost 6 % of the hypervisor's CPU in `perf`, and its
/// growth stalled the event loop for milliseconds.) A slot is reused after
/// `RING` more requests or when older than `KEEP_NS`, whichever comes first.
#[derive(Debug)]
pub struct PendingMap {
    /// Grows up to `RING` slots (capacity reserved once, pages touched as used).
    ring: Vec<Slot>,
    next: u32,
    live: usize,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// 0: empty or taken.
    xid: u32,
    at_ns: u64,
    entry: Entry,
}

/// Entries older than this are forgotten (their answer, if any, is dropped).
const KEEP_NS: u64 = 30_000_000_000;
/// And never more than this many (a power of two: the ring's size).
const RING: usize = 1 << 20;
/// The hypervisor's own requests use xids at and above this.
pub const OWN_XIDS: u32 = 0xFFF0_0000;

impl Default for PendingMap {
    fn default() -> PendingMap {
        PendingMap {
            ring: Vec::with_capacity(RING),
            next: 0,
            live: 0,
        }
    }
}

impl PendingMap {
    /// Registers a forwarded request; returns the xid to send it with.
    pub fn add(&mut self, tenant: u64, tenant_xid: u32, kind: Pending, now_ns: u64) -> u32 {
        self.next = if self.next == 0 || self.next >= OWN_XIDS - 1 {
            1
        } else {
            self.next + 1
        };
        let xid = self.next;
        let slot = Slot {
            xid,
            at_ns: now_ns,
            entry: Entry {
                tenant,
                tenant_xid,
                kind,
            },
        };
        let i = xid as usize % RING;
        if i < self.ring.len() {
            if self.ring[i].xid != 0 {
                self.live -= 1; // overwritten: the oldest request is forgotten
            }
            self.ring[i] = slot;
        } else {
            // The ring is still filling: xids 1, 2, ... land at the end.
            self.ring.resize(i, Slot { xid: 0, ..slot });
            self.ring.push(slot);
        }
        self.live += 1;
        xid
    }

    /// The entry for a reply; kept when more parts of a multipart reply follow.
    pub fn take(&mut self, xid: u32, more: bool, now_ns: u64) -> Option<Entry> {
        let slot = self.ring.get_mut(xid as usize % RING)?;
        if xid == 0 || slot.xid != xid {
            return None;
        }
        if now_ns.saturating_sub(slot.at_ns) >= KEEP_NS {
            slot.xid = 0;
            self.live -= 1;
            return None;
        }
        if !more {
            slot.xid = 0;
            self.live -= 1;
        }
        Some(slot.entry)
    }

    /// Requests still waiting (expired ones included until their slot is reused).
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
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
        assert_eq!(p.take(b, true, 0).unwrap().tenant, 2);
        assert_eq!(p.take(b, false, 0).unwrap().kind, Pending::FlowStats);
        assert_eq!(p.take(b, false, 0), None);
        assert_eq!(p.len(), 1);
        assert_eq!(p.take(a, false, KEEP_NS + 1), None, "expired");
        assert!(p.is_empty());
        assert_eq!(p.take(0, false, 0), None, "never handed out");
        assert_eq!(p.take(12345, false, 0), None, "beyond the ring's fill");
    }

    #[test]
    fn the_oldest_request_is_forgotten_when_the_ring_is_full() {
        let mut p = PendingMap::default();
        let first = p.add(1, 5, Pending::Plain, 0);
        for k in 0..RING as u32 {
            p.add(2, k, Pending::Plain, 0);
        }
        assert_eq!(p.len(), RING);
        assert_eq!(p.take(first, false, 0), None, "its slot was reused");
        let last = p.add(3, 9, Pending::Plain, 0);
        assert_eq!(p.take(last, false, 0).unwrap().tenant_xid, 9);
    }

    #[test]
    fn xids_wrap_below_the_hypervisors_own() {
        let mut p = PendingMap {
            next: OWN_XIDS - 2,
            ..PendingMap::default()
        };
        assert_eq!(p.add(1, 1, Pending::Plain, 0), OWN_XIDS - 1);
        assert_eq!(p.add(1, 2, Pending::Plain, 0), 1);
        assert_eq!(p.take(1, false, 0).unwrap().tenant_xid, 2);
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
