//! The loopback echo peer: a listening emulated switch that answers ECHO,
//! FEATURES, port statistics and BARRIER requests on every connection, for
//! tests and benchmarks of the controller side without a real switch.

use crate::clock::now_ns;
use crate::codec::Version;
use crate::switch;
use anyhow::Context;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default, serde::Serialize)]
pub struct EchoPeerStats {
    pub connections: u64,
    pub answered: u64,
    pub errors: Vec<String>,
}

/// Serves until `max_ns` (CLOCK_MONOTONIC), a stop signal, or `max_conns` connections have come and gone.
pub fn serve(
    l: TcpListener,
    versions: Vec<Version>,
    nodelay: bool,
    max_ns: u64,
    max_conns: Option<u64>,
) -> anyhow::Result<EchoPeerStats> {
    l.set_nonblocking(true).context("listener")?;
    let answered = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    let mut conns = 0u64;
    while now_ns() < max_ns && !crate::signals::stop_requested() {
        if max_conns.is_some_and(|m| conns >= m) {
            break;
        }
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                conns += 1;
                let (v, a, e) = (versions.clone(), answered.clone(), errors.clone());
                let left = max_ns.saturating_sub(now_ns());
                handles.push(std::thread::spawn(move || {
                    match switch::serve_passive(s, v, conns, nodelay, left) {
                        Ok(r) => {
                            a.fetch_add(r.answered, Ordering::Relaxed);
                            if let Some(ab) = r.aborted {
                                e.lock().unwrap().push(ab);
                            }
                        }
                        Err(err) => e.lock().unwrap().push(format!("{err:#}")),
                    }
                }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) => return Err(e).context("accept"),
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let errors = std::mem::take(&mut *errors.lock().unwrap());
    Ok(EchoPeerStats {
        connections: conns,
        answered: answered.load(Ordering::Relaxed),
        errors,
    })
}

/// Binds `addr` (port 0 picks a free port) and reports the bound address.
pub fn bind(addr: SocketAddr) -> anyhow::Result<(TcpListener, SocketAddr)> {
    let l = crate::conn::bind(addr)?;
    let a = l.local_addr()?;
    Ok((l, a))
}
