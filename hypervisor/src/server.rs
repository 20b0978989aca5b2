//! The listener: switches connect here, each gets a session thread; the
//! slices file is read again on SIGHUP (sessions pick up the new generation
//! without dropping connections); SIGINT/SIGTERM or the time limit stop all.

use crate::config::{self, Config};
use crate::session::{self, SessionReport};
use anyhow::Context;
use perfbench::clock::now_ns;
use perfbench::codec::Version;
use serde::Serialize;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What every session reads: the current slices and the run's settings.
pub struct Shared {
    config: Mutex<Arc<Config>>,
    generation: AtomicU64,
    pub versions: Vec<Version>,
    pub nodelay: bool,
    pub stop_ns: u64,
}

impl Shared {
    pub fn new(config: Config, versions: Vec<Version>, nodelay: bool, stop_ns: u64) -> Shared {
        Shared {
            config: Mutex::new(Arc::new(config)),
            generation: AtomicU64::new(1),
            versions,
            nodelay,
            stop_ns,
        }
    }

    /// The current configuration and its generation number.
    pub fn snapshot(&self) -> (Arc<Config>, u64) {
        let c = self.config.lock().unwrap_or_else(|p| p.into_inner());
        (c.clone(), self.generation.load(Ordering::SeqCst))
    }

    /// Installs a new configuration; slices keep their cookie tag by name.
    pub fn replace(&self, mut new: Config) {
        let mut c = self.config.lock().unwrap_or_else(|p| p.into_inner());
        config::keep_tags(&c, &mut new);
        *c = Arc::new(new);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_hup(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
}

pub fn install_signals() {
    perfbench::signals::install();
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGHUP, on_hup as *const () as libc::sighandler_t);
    }
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub listen: String,
    pub reloads: u64,
    pub reload_errors: Vec<String>,
    pub switches: Vec<SessionReport>,
}

pub struct Server {
    pub listener: TcpListener,
    pub shared: Arc<Shared>,
    /// Where the slices came from (reloaded on SIGHUP); `None` = generated on the command line.
    pub slices_file: Option<PathBuf>,
}

impl Server {
    pub fn bind(
        addr: SocketAddr,
        shared: Shared,
        slices_file: Option<PathBuf>,
    ) -> anyhow::Result<Server> {
        let listener =
            TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
        listener.set_nonblocking(true)?;
        Ok(Server {
            listener,
            shared: Arc::new(shared),
            slices_file,
        })
    }

    fn reload(&self, report: &mut Report) {
        let Some(path) = &self.slices_file else {
            return;
        };
        match config::load(path) {
            Ok(c) => {
                let n = c.slices.len();
                self.shared.replace(c);
                report.reloads += 1;
                eprintln!("hypervisor: reloaded {n} slices from {}", path.display());
            }
            Err(e) => {
                eprintln!("hypervisor: reload failed, keeping the old slices: {e:#}");
                report.reload_errors.push(format!("{e:#}"));
            }
        }
    }

    /// Accepts switches until stopped; returns every session's report.
    pub fn run(self) -> Report {
        let mut report = Report {
            listen: self
                .listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            ..Report::default()
        };
        let mut sessions = Vec::new();
        while now_ns() < self.shared.stop_ns && !perfbench::signals::stop_requested() {
            if RELOAD.swap(false, Ordering::SeqCst) {
                self.reload(&mut report);
            }
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let shared = self.shared.clone();
                    sessions.push(std::thread::spawn(move || {
                        let _ = stream.set_nonblocking(false);
                        session::run(shared, stream)
                    }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => {
                    eprintln!("hypervisor: accept: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        report.switches = sessions.into_iter().filter_map(|h| h.join().ok()).collect();
        report
    }
}
