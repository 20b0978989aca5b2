//! The emulated switch: completes the switch side of the handshake, answers
//! requests itself (ECHO, FEATURES, port statistics, BARRIER), generates
//! paced PACKET_INs carrying probe frames, and timestamps the probe frames
//! that PACKET_OUTs deliver. The echo peer is the same switch, listening.

use crate::clock::now_ns;
use crate::codec::{self, Version};
use crate::conn::{self, RecvBuf, SendBuf};
use crate::emulated_dp::RuleTable;
use crate::messages;
use crate::pacer::{self, Pacer};
use crate::probe;
use crate::record::{Arrival, DATA_PACKET, Record};
use crate::schedule::Schedule;
use crate::start_sync::StartSync;
use anyhow::Context;
use std::io::ErrorKind;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct SwitchSpec {
    /// Tenant whose probes this switch sends (PACKET_IN) and expects (PACKET_OUT).
    pub tenant: u32,
    pub dpid: u64,
    /// Versions this switch accepts in the HELLO exchange.
    pub versions: Vec<Version>,
    pub nports: u16,
    /// Paced PACKET_IN generation, if any.
    pub packet_in: Option<Schedule>,
    pub in_port: u32,
    pub frame_len: usize,
    pub nodelay: bool,
}

#[derive(Debug, Default)]
pub struct SwitchResult {
    pub tenant: u32,
    pub version: Option<Version>,
    /// PACKET_INs sent, indexed by sequence number.
    pub records: Vec<Record>,
    /// Probe frames received in PACKET_OUTs.
    pub arrivals: Vec<Arrival>,
    pub answered: u64,
    pub flow_mods: u64,
    pub unmatched: u64,
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
    pub aborted: Option<String>,
}

/// When a switch's loop runs.
#[derive(Debug, Clone, Copy)]
pub struct SwitchTiming {
    pub setup_deadline_ns: u64,
    /// PACKET_IN generation window (relative to the common start).
    pub duration_ns: u64,
    /// The loop ends this long after the window (or when the peer closes).
    pub drain_ns: u64,
}

/// Pre-encoded answers, with the xid patched per request.
struct Answers {
    features: Vec<u8>,
    port_stats: Vec<u8>,
    /// The emulated data plane's rule table, if flow setup is confirmed there.
    rules: Option<Arc<RuleTable>>,
}

impl Answers {
    fn new(v: Version, dpid: u64, nports: u16) -> anyhow::Result<Answers> {
        Ok(Answers {
            features: messages::features_reply(v, dpid, nports).to_bytes(0)?,
            port_stats: messages::port_stats_reply(v, nports, 1).to_bytes(0)?,
            rules: None,
        })
    }
}

#[inline]
fn push_with_xid(out: &mut Vec<u8>, msg: &[u8], xid: [u8; 4]) {
    let st = out.len();
    out.extend_from_slice(msg);
    out[st + 4..st + 8].copy_from_slice(&xid);
}

/// Answers one message from the controller. Returns false if it was not a
/// message a switch answers or accepts.
#[inline]
fn answer(
    v: Version,
    a: &Answers,
    m: &[u8],
    rx: u64,
    out: &mut Vec<u8>,
    res: &mut SwitchResult,
) -> bool {
    let mt = m[1];
    let xid = [m[4], m[5], m[6], m[7]];
    use codec::types::*;
    if mt == ECHO_REQUEST {
        let st = out.len();
        out.extend_from_slice(m);
        out[st + 1] = ECHO_REPLY;
    } else if mt == FEATURES_REQUEST {
        push_with_xid(out, &a.features, xid);
    } else if mt == messages::stats_request_type(v) {
        let stats_type = if m.len() >= 10 {
            u16::from_be_bytes([m[8], m[9]])
        } else {
            u16::MAX
        };
        if stats_type == 4 {
            push_with_xid(out, &a.port_stats, xid);
        } else {
            push_error(v, out, m, 1, 2); // BAD_REQUEST / BAD_STAT (BAD_MULTIPART)
        }
    } else if mt == messages::barrier_request_type(v) {
        codec::begin(
            out,
            v.wire(),
            messages::barrier_reply_type(v),
            u32::from_be_bytes(xid),
        );
        let at = out.len() - 6;
        out[at..at + 2].copy_from_slice(&8u16.to_be_bytes());
    } else if mt == PACKET_OUT {
        match messages::packet_out_data(v, &m[8..])
            .ok()
            .and_then(probe::parse)
        {
            Some(p) => res.arrivals.push(Arrival {
                seq: p.seq,
                tx_ns: p.tx_ns,
                rx_ns: rx,
                size: m.len() as u16,
                msg_type: DATA_PACKET,
            }),
            None => res.unmatched += 1,
        }
        return true;
    } else if mt == FLOW_MOD {
        res.flow_mods += 1;
        // Installed before a later BARRIER is answered, as a switch must.
        if let Some(t) = &a.rules {
            t.install(m);
        }
        return true;
    } else if mt == HELLO || mt == ECHO_REPLY || mt == 9 {
        // A late HELLO, an answer to nothing we asked, SET_CONFIG: accept silently.
        return true;
    } else {
        push_error(v, out, m, 1, 1); // BAD_REQUEST / BAD_TYPE
        return false;
    }
    res.answered += 1;
    true
}

fn push_error(v: Version, out: &mut Vec<u8>, req: &[u8], err_type: u16, code: u16) {
    let e = codec::ErrorMsg {
        err_type,
        code,
        data: req[..req.len().min(64)].to_vec(),
    };
    let start = codec::begin(
        out,
        v.wire(),
        codec::types::ERROR,
        u32::from_be_bytes([req[4], req[5], req[6], req[7]]),
    );
    e.encode(out);
    let _ = codec::finish(out, start);
}

/// When PACKET_IN generation starts.
#[derive(Clone, Copy)]
pub enum StartAt<'a> {
    /// Once the controller's FEATURES_REQUEST is answered (or 1 s after the HELLO).
    Handshake,
    /// At the common start of a run; the switch serves requests meanwhile.
    Common(&'a StartSync),
}

/// Runs one emulated switch on a connected stream.
pub fn run(
    spec: SwitchSpec,
    s: TcpStream,
    start_at: StartAt<'_>,
    t: SwitchTiming,
) -> anyhow::Result<SwitchResult> {
    run_with_rules(spec, s, start_at, t, None)
}

/// [`run`], recording the flow-setup rules FLOW_MODs install in `rules`
/// (the table of an emulated data plane, see [`crate::emulated_dp`]).
pub fn run_with_rules(
    spec: SwitchSpec,
    mut s: TcpStream,
    start_at: StartAt<'_>,
    t: SwitchTiming,
    rules: Option<Arc<RuleTable>>,
) -> anyhow::Result<SwitchResult> {
    crate::clock::tighten_timer_slack();
    conn::set_nodelay(&s, spec.nodelay)?;
    let (v, mut rb) = conn::switch_hello(&mut s, &spec.versions, t.setup_deadline_ns)
        .with_context(|| format!("switch {}: OpenFlow HELLO exchange", spec.tenant))?;
    serve(&spec, v, &mut s, &mut rb, start_at, &t, rules)
}

fn serve(
    spec: &SwitchSpec,
    v: Version,
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    start_at: StartAt<'_>,
    t: &SwitchTiming,
    rules: Option<Arc<RuleTable>>,
) -> anyhow::Result<SwitchResult> {
    s.set_nonblocking(true)?;
    let fd = s.as_raw_fd();
    let mut answers = Answers::new(v, spec.dpid, spec.nports)?;
    answers.rules = rules;
    let hello_done = now_ns();
    let mut start: Option<u64> = None;
    // Until the start is known, the loop may run until the latest possible end.
    let mut stop = t.setup_deadline_ns.max(hello_done + 1_000_000_000) + t.duration_ns + t.drain_ns;
    let mut res = SwitchResult {
        tenant: spec.tenant,
        version: Some(v),
        ..SwitchResult::default()
    };
    let mut pacer: Option<Pacer> = None;
    if let Some(sch) = &spec.packet_in {
        res.records
            .reserve(sch.count_before(t.duration_ns as f64 / 1e9) as usize + 16);
    }
    let mut frame = probe::template(spec.tenant, spec.frame_len);
    let mut out = SendBuf::new(1 << 20);
    let conn_id = spec.tenant as u16;
    let mut features_answered = false;
    loop {
        let now = now_ns();
        if now >= stop {
            break;
        }
        if start.is_none() {
            let st = match start_at {
                StartAt::Common(sy) => {
                    if sy.failed() {
                        break;
                    }
                    sy.start_ns()
                }
                StartAt::Handshake if features_answered || now >= hello_done + 1_000_000_000 => now,
                StartAt::Handshake => 0,
            };
            if st != 0 {
                start = Some(st);
                stop = st + t.duration_ns + t.drain_ns;
                pacer = spec
                    .packet_in
                    .clone()
                    .map(|sch| Pacer::new(sch, st, st + t.duration_ns));
            }
        }
        let mut worked = false;
        if let Some(p) = pacer.as_mut()
            && p.next_due().is_some_and(|d| d <= now)
            && out.pending() < (4 << 20)
        {
            for _ in 0..512 {
                let Some(seq) = p.take_due(now, now) else {
                    break;
                };
                probe::stamp(&mut frame, seq, now);
                messages::write_packet_in(&mut out.buf, v, seq as u32, spec.in_port, &frame)?;
                res.records.push(Record {
                    req_ns: now,
                    resp_ns: 0,
                    xid: seq as u32,
                    conn: conn_id,
                    req_type: DATA_PACKET,
                    resp_type: 0,
                    req_size: frame.len() as u16,
                    resp_size: 0,
                });
            }
            worked = true;
        }
        match rb.fill(s) {
            Ok(0) => break,
            Ok(_) => worked = true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                break;
            }
            Err(e) => {
                res.aborted = Some(format!("reading: {e}"));
                break;
            }
        }
        // Also handles messages that arrived together with the HELLO.
        let rx = now_ns();
        while let Some(m) = rb.next_msg()? {
            worked = true;
            if m[1] == codec::types::FEATURES_REQUEST {
                features_answered = true;
            }
            if !answer(v, &answers, m, rx, &mut out.buf, &mut res) {
                res.unmatched += 1;
            }
        }
        if out.pending() > 0 {
            match out.flush(s) {
                Ok(()) => {}
                Err(e)
                    if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) =>
                {
                    break;
                }
                Err(e) => {
                    res.aborted = Some(format!("sending: {e}"));
                    break;
                }
            }
        }
        if out.pending() > 0 && !worked {
            // A backlog waits for room in the socket: sleep until then, do not spin.
            pacer::poll_read_write(fd, 1_000_000);
        } else if !worked && out.pending() == 0 {
            match pacer.as_ref().and_then(|p| p.next_due()) {
                Some(next) => pacer::idle(next, fd),
                None => {
                    pacer::poll_readable(
                        fd,
                        (stop - now).min(if start.is_some() {
                            50_000_000
                        } else {
                            1_000_000
                        }),
                    );
                }
            }
        }
    }
    if let Some(p) = &pacer {
        res.lateness_p50_us = p.lateness_percentile_us(0.5);
        res.lateness_p99_us = p.lateness_percentile_us(0.99);
        res.lateness_max_us = p.lateness_max_ns as f64 / 1000.0;
    }
    Ok(res)
}

/// Answers on an already-accepted connection until the peer closes or
/// `max_ns` passes (the echo peer's per-connection loop).
pub fn serve_passive(
    s: TcpStream,
    versions: Vec<Version>,
    dpid: u64,
    nodelay: bool,
    max_ns: u64,
) -> anyhow::Result<SwitchResult> {
    let spec = SwitchSpec {
        tenant: 0,
        dpid,
        versions,
        nports: 2,
        packet_in: None,
        in_port: 1,
        frame_len: probe::MIN_FRAME,
        nodelay,
    };
    let t = SwitchTiming {
        setup_deadline_ns: now_ns() + 10_000_000_000,
        duration_ns: 0,
        drain_ns: max_ns,
    };
    run(spec, s, StartAt::Handshake, t)
}
