//! One tenant controller: its own thread and TCP connection, a paced stream
//! of one message type, and per-message records matched by xid (requests) or
//! by the probe's sequence number (PACKET_IN).

use crate::clock::now_ns;
use crate::codec::{self, Version};
use crate::conn::{self, RecvBuf, SendBuf};
use crate::flow_confirm::Installed;
use crate::messages::{self, CONTROL_XID_BASE};
use crate::pacer::{self, Pacer};
use crate::probe;
use crate::record::{Arrival, Record};
use crate::schedule::Schedule;
use crate::start_sync::StartSync;
use anyhow::{Context, bail};
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc::Sender;

pub use crate::kind::Kind;

#[derive(Debug, Clone)]
pub struct TenantSpec {
    pub id: u32,
    pub kind: Kind,
    pub schedule: Schedule,
    pub nodelay: bool,
    pub version: Version,
    /// Switch port PACKET_OUTs send their frame to.
    pub out_port: u32,
    /// Probe frame length (PACKET_OUT/PACKET_IN) or ECHO payload length.
    pub size: usize,
    /// Install a match-all → CONTROLLER flow after the handshake (for PACKET_IN at a real switch).
    pub install_table_miss: bool,
}

pub enum Endpoint {
    /// Wait for the switch (or hypervisor) to connect, as a controller does.
    Listen(TcpListener),
    /// Connect to a switch or hypervisor that listens for controllers.
    Connect(SocketAddr),
}

#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub duration_ns: u64,
    /// How long to wait for answers after the last request.
    pub drain_ns: u64,
    /// Connection and handshake must finish by this time.
    pub setup_deadline_ns: u64,
}

#[derive(Debug, Default)]
pub struct TenantResult {
    pub id: u32,
    pub version: Option<Version>,
    pub datapath_id: u64,
    /// Requests sent by this tenant, indexed by sequence number (= xid).
    pub records: Vec<Record>,
    /// PACKET_INs carrying this tenant's probes.
    pub arrivals: Vec<Arrival>,
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Messages that matched nothing we sent (wrong type, unknown xid, other tenant's probes).
    pub unmatched: u64,
    pub duplicates: u64,
    pub echo_requests_answered: u64,
    /// Most bytes that waited in the send buffer because the socket was full (peer too slow).
    pub max_send_backlog: usize,
    /// Why the loop ended early, if it did.
    pub aborted: Option<String>,
}

/// Most records one tenant keeps (32 bytes each).
pub const MAX_RECORDS: u64 = 50_000_000;
const MAX_BATCH: usize = 512;
const MAX_PENDING_BYTES: usize = 4 << 20;

fn establish(
    spec: &TenantSpec,
    ep: Endpoint,
    t: &Timing,
) -> anyhow::Result<(TcpStream, RecvBuf, u64)> {
    let mut s = match ep {
        Endpoint::Listen(l) => conn::accept_until(&l, t.setup_deadline_ns, "switch")?,
        Endpoint::Connect(a) => conn::connect_until(a, t.setup_deadline_ns)?,
    };
    conn::set_nodelay(&s, spec.nodelay)?;
    let (dpid, mut rb) = conn::controller_handshake(&mut s, spec.version, t.setup_deadline_ns)
        .with_context(|| format!("tenant {}: OpenFlow {} handshake", spec.id, spec.version))?;
    if spec.install_table_miss {
        conn::send_and_barrier(
            &mut s,
            &mut rb,
            spec.version,
            &messages::table_miss_to_controller(spec.version),
            t.setup_deadline_ns,
        )
        .with_context(|| format!("tenant {}: installing the table-miss flow", spec.id))?;
    }
    Ok((s, rb, dpid))
}

/// Runs one tenant: connect, handshake, wait for the common start, pace
/// messages for the duration, collect answers until the drain ends.
pub fn run(
    spec: TenantSpec,
    ep: Endpoint,
    sync: &StartSync,
    t: Timing,
) -> anyhow::Result<TenantResult> {
    run_confirmed(spec, ep, sync, t, None)
}

/// [`run`], telling `installed` (the data-plane confirmation) each FLOW_MOD's
/// rule and send time once it is written; the sender is dropped at the end.
pub fn run_confirmed(
    spec: TenantSpec,
    ep: Endpoint,
    sync: &StartSync,
    t: Timing,
    installed: Option<Sender<Installed>>,
) -> anyhow::Result<TenantResult> {
    crate::clock::tighten_timer_slack();
    let expected = spec.schedule.count_before(t.duration_ns as f64 / 1e9);
    if expected > MAX_RECORDS {
        sync.arrive(false);
        bail!(
            "tenant {}: the schedule asks for {expected} messages, more than the {MAX_RECORDS} one tenant can record; shorten the run or lower the rate",
            spec.id
        );
    }
    let setup = establish(&spec, ep, &t);
    let Some(start) = sync.arrive(setup.is_ok()) else {
        return match setup {
            Err(e) => Err(e),
            Ok(_) => bail!("tenant {}: another participant failed its setup", spec.id),
        };
    };
    let (mut s, mut rb, dpid) = setup?;
    s.set_nonblocking(true)?;
    let mut res = TenantResult {
        id: spec.id,
        version: Some(spec.version),
        datapath_id: dpid,
        ..TenantResult::default()
    };
    match spec.kind {
        Kind::PacketIn => receive_packet_ins(&spec, &mut s, &mut rb, start, &t, &mut res),
        _ => send_paced(&spec, &mut s, &mut rb, start, &t, &mut res, installed),
    }
    Ok(res)
}

fn note_error(res: &mut TenantResult, msg: &[u8]) {
    res.errors += 1;
    if res.first_error.is_none() {
        let h = codec::Header::parse(msg).ok();
        let e = codec::ErrorMsg::decode(&msg[8..]).ok();
        res.first_error = Some(match (h, e) {
            (Some(h), Some(e)) => format!(
                "OFPT_ERROR type {} code {} in answer to xid {}",
                e.err_type, e.code, h.xid
            ),
            _ => "malformed OFPT_ERROR".to_string(),
        });
    }
}

/// Request/reply kinds and PACKET_OUT: the paced send loop.
fn send_paced(
    spec: &TenantSpec,
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    start: u64,
    t: &Timing,
    res: &mut TenantResult,
    installed: Option<Sender<Installed>>,
) {
    let expected = spec.schedule.count_before(t.duration_ns as f64 / 1e9);
    let v = spec.version;
    let fd = s.as_raw_fd();
    let end = start + t.duration_ns;
    let drain_end = end + t.drain_ns;
    let mut pacer = Pacer::new(spec.schedule.clone(), start, end);
    let mut out = SendBuf::new(1 << 20);
    let mut recs: Vec<Record> = Vec::with_capacity(expected as usize + 16);
    let rr = spec.kind.request_reply(v);
    let (req_type, reply_type) = rr.unwrap_or((codec::types::PACKET_OUT, 0));
    let payload = vec![0x5au8; spec.size];
    let mut frame = probe::template(spec.id, spec.size);
    let mut answered: u64 = 0;
    let mut partial_size: u32 = 0;
    let conn_id = spec.id as u16;
    let out_port = spec.out_port;

    loop {
        let now = now_ns();
        // 1. Send everything that is due (bounded per batch).
        let mut sent_now = false;
        if pacer.next_due().is_some_and(|d| d <= now) && out.pending() < MAX_PENDING_BYTES {
            let first = recs.len();
            for _ in 0..MAX_BATCH {
                let Some(seq) = pacer.take_due(now, now) else {
                    break;
                };
                let xid = seq as u32;
                let before = out.buf.len();
                let r = match spec.kind {
                    Kind::Echo => messages::write_echo_request(&mut out.buf, v, xid, &payload),
                    Kind::Features | Kind::Barrier => {
                        messages::write_empty(&mut out.buf, v, req_type, xid);
                        Ok(())
                    }
                    Kind::PortStats => messages::port_stats_request(v).encode(xid, &mut out.buf),
                    Kind::PacketOut => {
                        probe::stamp(&mut frame, seq, now);
                        messages::write_packet_out(&mut out.buf, v, xid, out_port, &frame)
                    }
                    Kind::FlowMod => {
                        messages::write_flow_mod_barrier(&mut out.buf, v, xid, out_port)
                    }
                    Kind::PacketIn => unreachable!("PACKET_IN tenants do not send"),
                };
                if let Err(e) = r {
                    res.aborted = Some(format!("encoding message {seq}: {e}"));
                    return;
                }
                recs.push(Record {
                    req_ns: now,
                    resp_ns: 0,
                    xid,
                    conn: conn_id,
                    req_type,
                    resp_type: 0,
                    req_size: (out.buf.len() - before) as u16,
                    resp_size: 0,
                });
            }
            // Request timestamps: the moment the batch goes to the socket.
            if spec.kind != Kind::PacketOut {
                let tw = now_ns();
                for r in &mut recs[first..] {
                    r.req_ns = tw;
                }
            }
            if let Some(tx) = &installed {
                for r in &recs[first..] {
                    let _ = tx.send(Installed {
                        rule: r.xid,
                        sent_ns: r.req_ns,
                    });
                }
            }
            sent_now = true;
        }
        if out.pending() > 0 {
            if let Err(e) = out.flush(s) {
                res.aborted = Some(format!("sending: {e}"));
                break;
            }
            res.max_send_backlog = res.max_send_backlog.max(out.pending());
        }
        // 2. Read whatever has arrived.
        let mut got = false;
        let filled = rb.fill(s);
        let rx = now_ns();
        match filled {
            Ok(0) => {
                res.aborted = Some(format!(
                    "switch closed the connection after {} requests",
                    recs.len()
                ));
                break;
            }
            Ok(_) | Err(_) => {
                if let Err(e) = &filled
                    && !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted)
                {
                    res.aborted = Some(format!("reading: {e}"));
                    break;
                }
                // Messages read now, or left in the buffer by the handshake.
                loop {
                    let m = match rb.next_msg() {
                        Ok(Some(m)) => m,
                        Ok(None) => break,
                        Err(e) => {
                            res.aborted = Some(format!("bad message from switch: {e}"));
                            return finish(res, recs, &pacer);
                        }
                    };
                    got = true;
                    let (mt, xid) = (m[1], u32::from_be_bytes([m[4], m[5], m[6], m[7]]));
                    if mt == reply_type && rr.is_some() && xid < CONTROL_XID_BASE {
                        match recs.get_mut(xid as usize) {
                            Some(r) if !r.answered() => {
                                if spec.kind == Kind::PortStats
                                    && messages::stats_reply_more(&m[8..])
                                {
                                    partial_size += m.len() as u32;
                                    continue;
                                }
                                r.resp_ns = rx;
                                r.resp_type = mt;
                                r.resp_size =
                                    (m.len() as u32 + partial_size).min(u16::MAX as u32) as u16;
                                partial_size = 0;
                                answered += 1;
                            }
                            Some(_) => res.duplicates += 1,
                            None => res.unmatched += 1,
                        }
                    } else if mt == codec::types::ECHO_REQUEST {
                        let st = out.buf.len();
                        out.buf.extend_from_slice(m);
                        out.buf[st + 1] = codec::types::ECHO_REPLY;
                        res.echo_requests_answered += 1;
                    } else if mt == codec::types::ERROR {
                        note_error(res, m);
                    } else {
                        res.unmatched += 1;
                    }
                }
            }
        }
        // 3. Done? All sent, and all answered (or the drain time is over).
        if pacer.next_due().is_none() && out.pending() == 0 {
            let outstanding = rr.is_some() && answered < recs.len() as u64;
            if !outstanding || now >= drain_end {
                break;
            }
        }
        if now >= drain_end + 1_000_000_000 {
            res.aborted = Some("could not send everything before the drain ended".into());
            break;
        }
        // 4. Idle until the next send or input, unless we just did work; with
        //    a backlog, until the socket takes more (never spin on a full socket).
        if !sent_now && !got {
            let next = pacer.next_due().unwrap_or(drain_end);
            if out.pending() == 0 {
                pacer::idle(next, fd);
            } else {
                pacer::poll_read_write(fd, next.saturating_sub(now_ns()).clamp(10_000, 1_000_000));
            }
        } else if sent_now && out.pending() > 0 && !got {
            // The socket took only part of the batch: wait for room or input.
            pacer::poll_read_write(fd, 1_000_000);
        }
    }
    finish(res, recs, &pacer)
}

fn finish(res: &mut TenantResult, recs: Vec<Record>, pacer: &Pacer) {
    res.records = recs;
    res.lateness_p50_us = pacer.lateness_percentile_us(0.5);
    res.lateness_p99_us = pacer.lateness_percentile_us(0.99);
    res.lateness_max_us = pacer.lateness_max_ns as f64 / 1000.0;
}

/// PACKET_IN kind: receive until the drain ends, timestamping each probe.
fn receive_packet_ins(
    spec: &TenantSpec,
    s: &mut TcpStream,
    rb: &mut RecvBuf,
    start: u64,
    t: &Timing,
    res: &mut TenantResult,
) {
    let v = spec.version;
    let fd = s.as_raw_fd();
    let drain_end = start + t.duration_ns + t.drain_ns;
    let mut out = SendBuf::new(1 << 16);
    let cap = spec.schedule.count_before(t.duration_ns as f64 / 1e9) as usize;
    res.arrivals.reserve(cap + 16);
    loop {
        let now = now_ns();
        if now >= drain_end {
            break;
        }
        let filled = rb.fill(s);
        let rx = now_ns();
        match filled {
            Ok(0) => {
                res.aborted = Some(format!(
                    "switch closed the connection after {} PACKET_INs",
                    res.arrivals.len()
                ));
                break;
            }
            Err(e) if !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                res.aborted = Some(format!("reading: {e}"));
                break;
            }
            _ => {
                let mut got = false;
                loop {
                    let m = match rb.next_msg() {
                        Ok(Some(m)) => m,
                        Ok(None) => break,
                        Err(e) => {
                            res.aborted = Some(format!("bad message from switch: {e}"));
                            return;
                        }
                    };
                    got = true;
                    match m[1] {
                        codec::types::PACKET_IN => {
                            let p = messages::packet_in_data(v, &m[8..])
                                .ok()
                                .and_then(probe::parse);
                            match p {
                                Some(p) if p.tenant == spec.id => res.arrivals.push(Arrival {
                                    seq: p.seq,
                                    tx_ns: p.tx_ns,
                                    rx_ns: rx,
                                    size: m.len() as u16,
                                    msg_type: codec::types::PACKET_IN,
                                }),
                                _ => res.unmatched += 1,
                            }
                        }
                        codec::types::ECHO_REQUEST => {
                            let st = out.buf.len();
                            out.buf.extend_from_slice(m);
                            out.buf[st + 1] = codec::types::ECHO_REPLY;
                            res.echo_requests_answered += 1;
                        }
                        codec::types::ERROR => note_error(res, m),
                        _ => res.unmatched += 1,
                    }
                }
                if out.pending() > 0
                    && let Err(e) = out.flush(s)
                {
                    res.aborted = Some(format!("sending: {e}"));
                    break;
                }
                if !got {
                    // Sleep until input; wake up now and then to check the deadline.
                    pacer::poll_readable(fd, (drain_end - now).min(50_000_000));
                }
            }
        }
    }
}
