//! A minimal OpenFlow pass-through "hypervisor": switches connect to the
//! proxy's listen address, and for each one the proxy opens a connection to
//! the matching upstream controller and relays whole OpenFlow messages both
//! ways, unchanged. It adds exactly one TCP hop and one user-space copy per
//! direction, which is the floor any real hypervisor's overhead starts from.

use crate::clock::now_ns;
use crate::codec;
use anyhow::{Context, bail};
use serde::Serialize;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long a switch's connection waits for its upstream controller to listen.
const UPSTREAM_RETRY_NS: u64 = 5_000_000_000;

#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// (listen, upstream) pairs: a switch connecting to `listen` is relayed to `upstream`.
    pub routes: Vec<(SocketAddr, SocketAddr)>,
    pub nodelay: bool,
    pub max_ns: u64,
}

#[derive(Debug, Default, Serialize)]
pub struct ProxyStats {
    pub connections: u64,
    pub to_controller_msgs: u64,
    pub to_switch_msgs: u64,
    pub errors: Vec<String>,
}

#[derive(Default)]
struct Counters {
    conns: AtomicU64,
    up: AtomicU64,
    down: AtomicU64,
}

/// Relays whole messages from `from` to `to` until either side closes.
fn relay(
    mut from: TcpStream,
    mut to: TcpStream,
    count: &AtomicU64,
    stop_ns: u64,
) -> anyhow::Result<()> {
    let mut buf = vec![0u8; 256 * 1024];
    let (mut start, mut end) = (0usize, 0usize);
    from.set_read_timeout(Some(Duration::from_millis(100)))?;
    loop {
        if now_ns() >= stop_ns || crate::signals::stop_requested() {
            break;
        }
        let n = match from.read(&mut buf[end..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset) => break,
            Err(e) => return Err(e).context("relay read"),
        };
        end += n;
        // Forward every complete message in one write; keep a partial tail.
        let mut cut = start;
        let mut msgs = 0;
        while let Some(len) = codec::frame_len(&buf[cut..end]).context("relay framing")? {
            cut += len;
            msgs += 1;
        }
        if cut > start {
            match to.write_all(&buf[start..cut]) {
                Ok(()) => {}
                Err(e)
                    if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) =>
                {
                    break;
                }
                Err(e) => return Err(e).context("relay write"),
            }
            count.fetch_add(msgs, Ordering::Relaxed);
            start = cut;
        }
        if start == end {
            start = 0;
            end = 0;
        } else if end == buf.len() {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    Ok(())
}

fn serve_route(
    l: TcpListener,
    upstream: SocketAddr,
    cfg: Arc<ProxyConfig>,
    c: Arc<Counters>,
    errors: Arc<std::sync::Mutex<Vec<String>>>,
) {
    let stop = cfg.max_ns;
    let _ = l.set_nonblocking(true);
    let mut workers = Vec::new();
    while now_ns() < stop && !crate::signals::stop_requested() {
        match l.accept() {
            Ok((down, _)) => {
                let _ = down.set_nonblocking(false);
                // The controller may not listen yet (it can start after the
                // switch connects): retry for a while instead of dropping the switch.
                let deadline = (now_ns() + UPSTREAM_RETRY_NS).min(stop);
                let up = match crate::conn::connect_until(upstream, deadline) {
                    Ok(u) => u,
                    Err(e) => {
                        errors.lock().unwrap().push(format!("upstream: {e:#}"));
                        continue;
                    }
                };
                let _ = down.set_nodelay(cfg.nodelay);
                let _ = up.set_nodelay(cfg.nodelay);
                c.conns.fetch_add(1, Ordering::Relaxed);
                for (from, to, up_dir) in [
                    (down.try_clone(), up.try_clone(), true),
                    (up.try_clone(), down.try_clone(), false),
                ] {
                    let (Ok(from), Ok(to)) = (from, to) else {
                        continue;
                    };
                    let c = c.clone();
                    let errors = errors.clone();
                    workers.push(std::thread::spawn(move || {
                        let ctr = if up_dir { &c.up } else { &c.down };
                        if let Err(e) = relay(from, to, ctr, stop) {
                            errors.lock().unwrap().push(format!("{e:#}"));
                        }
                    }));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => {
                errors.lock().unwrap().push(format!("accept: {e}"));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        workers.retain(|w| !w.is_finished());
    }
    for w in workers {
        let _ = w.join();
    }
}

/// Runs the proxy until `max_ns` (CLOCK_MONOTONIC). Binds all listen
/// addresses first, so a busy port fails at once.
pub fn run(cfg: ProxyConfig, on_ready: impl FnOnce()) -> anyhow::Result<ProxyStats> {
    if cfg.routes.is_empty() {
        bail!("the proxy needs at least one --listen/--upstream pair");
    }
    let listeners = cfg
        .routes
        .iter()
        .map(|(l, _)| TcpListener::bind(l).with_context(|| format!("proxy cannot listen on {l}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    on_ready();
    let cfg = Arc::new(cfg);
    let c = Arc::new(Counters::default());
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handles: Vec<_> = listeners
        .into_iter()
        .zip(cfg.routes.iter().map(|r| r.1))
        .map(|(l, up)| {
            let (cfg, c, errors) = (cfg.clone(), c.clone(), errors.clone());
            std::thread::spawn(move || serve_route(l, up, cfg, c, errors))
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    let errors = std::mem::take(&mut *errors.lock().unwrap());
    Ok(ProxyStats {
        connections: c.conns.load(Ordering::Relaxed),
        to_controller_msgs: c.up.load(Ordering::Relaxed),
        to_switch_msgs: c.down.load(Ordering::Relaxed),
        errors,
    })
}
