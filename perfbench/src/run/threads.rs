//! The threads of one run: tenant controllers, emulated switches, injectors,
//! the capture, the flow-confirmation lanes, and CPU sampling of the system
//! under test, all started in one scope and joined in a fixed order.

use super::{Plan, join, pin_current_thread};
use crate::cpu::{self, CpuUsage};
use crate::dp::{self, CaptureResult, InjectResult};
use crate::flow_confirm::lanes::{self, Lane};
use crate::flow_confirm::{ConfirmConfig, ConfirmResult, Installed};
use crate::run_config::RunConfig;
use crate::start_sync::StartSync;
use crate::summary::Window;
use crate::switch::{self, SwitchResult, SwitchSpec, SwitchTiming};
use crate::tenant::{self, Endpoint, Kind, TenantResult};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::thread::{Scope, ScopedJoinHandle};

type Handle<'s, T> = ScopedJoinHandle<'s, anyhow::Result<T>>;

/// What the run's threads returned, joined.
pub(super) struct Outcome {
    pub tenants: Vec<anyhow::Result<TenantResult>>,
    pub switches: Vec<anyhow::Result<SwitchResult>>,
    pub injectors: Vec<anyhow::Result<InjectResult>>,
    pub capture: Option<anyhow::Result<CaptureResult>>,
    pub cpu: Vec<CpuUsage>,
    pub confirmed: Vec<ConfirmResult>,
}

/// The flow-confirmation lanes and their channel ends (empty without confirmation).
pub(super) struct Confirmation<'a> {
    pub config: Option<ConfirmConfig>,
    pub lanes: &'a [Option<Lane>],
    pub installed_tx: Vec<Option<Sender<Installed>>>,
    pub installed_rx: Vec<Option<Receiver<Installed>>>,
}

/// The controller side of each tenant: a bound listener, or none to connect to `addrs`.
pub(super) struct Controllers<'a> {
    pub listeners: Vec<Option<TcpListener>>,
    pub addrs: &'a [SocketAddr],
}

/// Starts every thread of the run, waits for all of them and returns their results.
pub(super) fn run_all(
    cfg: &RunConfig,
    plan: &Plan,
    sync: &StartSync,
    controllers: Controllers<'_>,
    confirmation: Confirmation<'_>,
) -> Outcome {
    let stop_forwarders = AtomicBool::new(false);
    let Confirmation {
        config,
        lanes,
        installed_tx,
        installed_rx,
    } = confirmation;
    std::thread::scope(|sc| {
        let probers = match config {
            Some(c) => lanes::spawn(sc, lanes, installed_rx, c, &stop_forwarders),
            None => vec![],
        };
        let addrs = controllers.addrs;
        let tenant_h = spawn_tenants(sc, cfg, plan, sync, controllers, installed_tx);
        let switch_h = spawn_switches(sc, cfg, plan, sync, lanes, addrs);
        let inject_h = spawn_injectors(sc, cfg, plan, sync);
        let capture_h = spawn_capture(sc, cfg, plan, sync);
        let cpu = sample_cpu(cfg, sync, &tenant_h);
        let tenants = tenant_h.into_iter().map(join).collect();
        let switches = switch_h.into_iter().map(join).collect();
        let injectors = inject_h.into_iter().map(join).collect();
        let capture = capture_h.map(join);
        // The probers end once their tenants have and every rule is settled.
        let confirmed = probers.into_iter().filter_map(|h| h.join().ok()).collect();
        stop_forwarders.store(true, Ordering::Release);
        Outcome {
            tenants,
            switches,
            injectors,
            capture,
            cpu,
            confirmed,
        }
    })
}

fn spawn_tenants<'s, 'e>(
    sc: &'s Scope<'s, 'e>,
    cfg: &'e RunConfig,
    plan: &Plan,
    sync: &'e StartSync,
    controllers: Controllers<'_>,
    mut installed_tx: Vec<Option<Sender<Installed>>>,
) -> Vec<Handle<'s, TenantResult>> {
    let timing = plan.timing;
    cfg.tenants
        .iter()
        .cloned()
        .zip(controllers.listeners)
        .zip(controllers.addrs.iter().copied())
        .enumerate()
        .map(|(i, ((spec, l), a))| {
            let installed = installed_tx.get_mut(i).and_then(Option::take);
            let ep = match l {
                Some(l) => Endpoint::Listen(l),
                None => Endpoint::Connect(a),
            };
            let pin = cfg.pin_tenants;
            std::thread::Builder::new()
                .name(format!("tenant-{}", spec.id))
                .spawn_scoped(sc, move || {
                    if let Some(c) = pin {
                        pin_current_thread(c);
                    }
                    tenant::run_confirmed(spec, ep, sync, timing, installed)
                })
                .expect("spawn tenant thread")
        })
        .collect()
}

fn spawn_switches<'s, 'e>(
    sc: &'s Scope<'s, 'e>,
    cfg: &'e RunConfig,
    plan: &Plan,
    sync: &'e StartSync,
    lanes: &[Option<Lane>],
    addrs: &[SocketAddr],
) -> Vec<Handle<'s, SwitchResult>> {
    let timing = plan.timing;
    let setup_deadline_ns = timing.setup_deadline_ns;
    (0..plan.switch_count)
        .map(|i| {
            let t = &cfg.tenants[i];
            let spec = SwitchSpec {
                tenant: t.id,
                dpid: t.id as u64 + 1,
                versions: vec![t.version],
                nports: 2,
                packet_in: (t.kind == Kind::PacketIn).then(|| t.schedule.clone()),
                in_port: 1,
                frame_len: t.size,
                nodelay: true,
            };
            let addr = addrs[i];
            let rules = lanes
                .get(i)
                .and_then(|l| l.as_ref()?.emulated.as_ref())
                .map(|(_, r)| r.clone());
            let pin = cfg.pin_switches;
            let st = SwitchTiming {
                setup_deadline_ns,
                duration_ns: timing.duration_ns,
                drain_ns: timing.drain_ns + 200_000_000,
            };
            std::thread::Builder::new()
                .name(format!("switch-{}", t.id))
                .spawn_scoped(sc, move || {
                    if let Some(c) = pin {
                        pin_current_thread(c);
                    }
                    let s = crate::conn::connect_until(addr, setup_deadline_ns)?;
                    let at = switch::StartAt::Common(sync);
                    switch::run_with_rules(spec, s, at, st, rules)
                })
                .expect("spawn switch thread")
        })
        .collect()
}

fn spawn_injectors<'s, 'e>(
    sc: &'s Scope<'s, 'e>,
    cfg: &'e RunConfig,
    plan: &Plan,
    sync: &'e StartSync,
) -> Vec<Handle<'s, InjectResult>> {
    let duration_ns = plan.timing.duration_ns;
    plan.injected
        .iter()
        .map(|&i| {
            let t = &cfg.tenants[i];
            let iface = cfg.inject_iface.clone().unwrap_or_default();
            let (id, sch, size) = (t.id, t.schedule.clone(), t.size);
            sc.spawn(move || dp::inject(&iface, id, sch, size, duration_ns, sync))
        })
        .collect()
}

fn spawn_capture<'s, 'e>(
    sc: &'s Scope<'s, 'e>,
    cfg: &'e RunConfig,
    plan: &Plan,
    sync: &'e StartSync,
) -> Option<Handle<'s, CaptureResult>> {
    let (duration_ns, drain_ns) = (plan.timing.duration_ns, plan.timing.drain_ns);
    plan.capture.then(|| {
        let iface = cfg.capture_iface.clone().unwrap_or_default();
        sc.spawn(move || dp::capture(&iface, duration_ns, drain_ns + 100_000_000, sync))
    })
}

/// Samples the system under test's CPU over the measured window (once the
/// run has started; nothing if every tenant ended before it did).
fn sample_cpu(
    cfg: &RunConfig,
    sync: &StartSync,
    tenants: &[Handle<'_, TenantResult>],
) -> Vec<CpuUsage> {
    if cfg.cpu_pids.is_empty() {
        return Vec::new();
    }
    while sync.start_ns() == 0 && !tenants.iter().all(|h| h.is_finished()) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    if sync.start_ns() == 0 {
        return Vec::new();
    }
    let w = Window::trimmed(
        sync.start_ns(),
        cfg.duration_s,
        cfg.warmup_s,
        cfg.cooldown_s,
    );
    cpu::monitor(cfg.cpu_pids.clone(), w.start_ns, w.end_ns)
        .join()
        .unwrap_or_default()
}
