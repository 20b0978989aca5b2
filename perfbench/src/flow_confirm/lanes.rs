//! Wiring for a run: one confirmation lane per flow-mod tenant, from the
//! tenant's FLOW_MODs to probes on a data-plane port, at a real switch
//! (AF_PACKET on the injection interface) or at the emulated switch (a
//! datagram socket pair and the switch's rule table).

use super::{ConfirmConfig, ConfirmResult, FramePort, Installed};
use crate::dp::RawSocket;
use crate::emulated_dp::{self, RuleTable};
use crate::tenant::{Kind, TenantSpec};
use anyhow::{Context, bail};
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Receiver, Sender};

pub struct Lane {
    pub tenant: u32,
    pub frame_len: usize,
    /// Taken by the tenant thread; dropping it tells the lane the tenant is done.
    pub installed_tx: Option<Sender<Installed>>,
    pub installed_rx: Option<Receiver<Installed>>,
    pub port: Box<dyn FramePort + Sync>,
    /// The emulated switch's side: its data port and rule table.
    pub emulated: Option<(UnixDatagram, Arc<RuleTable>)>,
}

/// Lanes per tenant (None for tenants that are not confirmed). The data-plane
/// ports are opened here, before anything starts, so setup errors come first.
pub fn open(
    tenants: &[TenantSpec],
    emulate_switch: bool,
    inject_iface: Option<&str>,
) -> anyhow::Result<Vec<Option<Lane>>> {
    if !emulate_switch && inject_iface.is_none() {
        bail!(
            "data-plane confirmation of flow-mod needs --inject-iface (the interface on the switch's --out-port) or --emulate-switch"
        );
    }
    let flow_mod_tenants = tenants.iter().filter(|t| t.kind == Kind::FlowMod).count();
    if flow_mod_tenants == 0 {
        bail!("data-plane confirmation needs at least one flow-mod tenant");
    }
    if flow_mod_tenants > 1 && !emulate_switch {
        // Rule n of every tenant matches the same packets on the one port.
        bail!(
            "data-plane confirmation at a real switch takes one flow-mod tenant: the others' rule n would forward its probes too"
        );
    }
    tenants
        .iter()
        .map(|t| {
            if t.kind != Kind::FlowMod {
                return Ok(None);
            }
            let (tx, rx) = mpsc::channel();
            let (port, emulated): (Box<dyn FramePort + Sync>, _) = match inject_iface {
                Some(iface) if !emulate_switch => (Box::new(RawSocket::open(iface)?), None),
                _ => {
                    let (mine, switch_port) = emulated_dp::port_pair()
                        .context("cannot create the emulated data-plane port")?;
                    (
                        Box::new(mine),
                        Some((switch_port, Arc::new(RuleTable::default()))),
                    )
                }
            };
            Ok(Some(Lane {
                tenant: t.id,
                frame_len: t.size,
                installed_tx: Some(tx),
                installed_rx: Some(rx),
                port,
                emulated,
            }))
        })
        .collect()
}

/// Takes each lane's channel ends: the senders go to the tenant threads, the
/// receivers to [`spawn`].
#[allow(clippy::type_complexity)]
pub fn channels(
    lanes: &mut [Option<Lane>],
) -> (
    Vec<Option<Sender<Installed>>>,
    Vec<Option<Receiver<Installed>>>,
) {
    lanes
        .iter_mut()
        .map(|l| match l {
            Some(l) => (l.installed_tx.take(), l.installed_rx.take()),
            None => (None, None),
        })
        .unzip()
}

/// Starts the lanes' probers and the emulated switches' forwarders in `sc`;
/// the forwarders run until `stop` is set.
pub fn spawn<'s, 'e: 's>(
    sc: &'s std::thread::Scope<'s, 'e>,
    lanes: &'e [Option<Lane>],
    receivers: Vec<Option<Receiver<Installed>>>,
    cfg: ConfirmConfig,
    stop: &'e AtomicBool,
) -> Vec<std::thread::ScopedJoinHandle<'s, ConfirmResult>> {
    let mut probers = Vec::new();
    for (lane, rx) in lanes.iter().zip(receivers) {
        let (Some(lane), Some(rx)) = (lane, rx) else {
            continue;
        };
        if let Some((switch_port, rules)) = &lane.emulated {
            sc.spawn(move || emulated_dp::forward(switch_port, rules, stop));
        }
        let (port, id, len) = (&lane.port, lane.tenant, lane.frame_len);
        probers.push(sc.spawn(move || super::confirm(port.as_ref(), id, rx, cfg, len)));
    }
    probers
}
