//! End-to-end runs on loopback against peers: the echo peer, a peer with a known delay, and the pass-through proxy.

mod common;

use common::{any, config, describe, one_at_a_time, rate_ok, spec};
use perfbench::clock::now_ns;
use perfbench::codec::{self, Version};
use perfbench::conn;
use perfbench::run::{self, Endpoints};
use perfbench::tenant::Kind;
use perfbench::{echo_peer, proxy};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

#[test]
fn connect_mode_against_the_echo_peer() {
    let _serial = one_at_a_time();
    let (l, addr) = echo_peer::bind(any()).unwrap();
    let peer = std::thread::spawn(move || {
        echo_peer::serve(
            l,
            vec![Version::V10, Version::V13],
            true,
            now_ns() + 20_000_000_000,
            Some(3),
        )
    });
    let tenants = vec![
        spec(0, Kind::Echo, 5_000.0, Version::V10),
        spec(1, Kind::Features, 3_000.0, Version::V13),
        spec(2, Kind::PortStats, 1_000.0, Version::V10),
    ];
    let r = run::run(&config(tenants, Endpoints::Connect(vec![addr; 3]), 1.0)).unwrap();
    let why = describe(&r);
    for (s, rate) in r.tenants.iter().zip([5_000.0, 3_000.0, 1_000.0]) {
        assert_eq!(s.lost, 0, "{why}");
        assert!(
            (s.target_rate - rate).abs() < 1.0 && rate_ok(s, 0.6),
            "{why}"
        );
        assert_eq!(s.latency.count, s.sent);
    }
    let stats = peer.join().unwrap().unwrap();
    assert_eq!(stats.connections, 3);
    assert!(stats.errors.is_empty(), "{:?}", stats.errors);
    // 3 FEATURES_REQUESTs of the handshakes + every request of the run (window and edges).
    assert!(stats.answered >= 3 + 9_000 * 6 / 10, "{stats:?}");
}

/// A peer that answers each ECHO_REQUEST exactly `delay` after it arrived:
/// the measured latency must show that delay.
#[test]
fn latency_matches_a_known_delay() {
    let _serial = one_at_a_time();
    let delay_ns: u64 = 2_000_000;
    let l = TcpListener::bind(any()).unwrap();
    let addr = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let (v, mut rb) =
            conn::switch_hello(&mut s, &[Version::V13], now_ns() + 5_000_000_000).unwrap();
        let features = perfbench::messages::features_reply(v, 1, 1)
            .to_bytes(0)
            .unwrap();
        let mut pending: std::collections::VecDeque<(u64, u64, Vec<u8>)> = Default::default();
        // (xid, read, written) of every ECHO_REQUEST, by the peer's own clock readings.
        let mut held: Vec<(u32, u64, u64)> = Vec::new();
        let stop = now_ns() + 6_000_000_000;
        let mut closed = false;
        while now_ns() < stop && !(closed && pending.is_empty()) {
            // Read only until the next reply is due, so replies leave on time.
            let wait_ns = pending
                .front()
                .map_or(1_000_000, |(t, _, _)| t.saturating_sub(now_ns()))
                .clamp(1_000, 1_000_000);
            s.set_read_timeout(Some(Duration::from_nanos(wait_ns)))
                .unwrap();
            if !closed && let Ok(0) = rb.fill(&mut s) {
                closed = true;
            }
            let rx = now_ns();
            while let Some(m) = rb.next_msg().unwrap() {
                let mut r = m.to_vec();
                if m[1] == codec::types::FEATURES_REQUEST {
                    let mut f = features.clone();
                    f[4..8].copy_from_slice(&m[4..8]);
                    s.write_all(&f).unwrap();
                } else if m[1] == codec::types::ECHO_REQUEST {
                    r[1] = codec::types::ECHO_REPLY;
                    pending.push_back((rx + delay_ns, rx, r));
                }
            }
            while pending.front().is_some_and(|(t, _, _)| *t <= now_ns()) {
                let (_, rx, r) = pending.pop_front().unwrap();
                let written = now_ns();
                if s.write_all(&r).is_err() {
                    return held;
                }
                held.push((u32::from_be_bytes([r[4], r[5], r[6], r[7]]), rx, written));
            }
            if closed {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        held
    });
    let mut cfg = config(
        vec![spec(0, Kind::Echo, 500.0, Version::V13)],
        Endpoints::Connect(vec![addr]),
        1.0,
    );
    let dir = std::env::temp_dir().join(format!("pb-delay-{}", std::process::id()));
    cfg.out_dir = Some(dir.clone());
    cfg.write_records = true;
    let r = run::run(&cfg).unwrap();
    let held: std::collections::HashMap<u32, (u64, u64)> = peer
        .join()
        .unwrap()
        .into_iter()
        .map(|(xid, rx, written)| (xid, (rx, written)))
        .collect();
    let csv = std::fs::read_to_string(dir.join("records.csv")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let s = &r.tenants[0];
    let why = describe(&r);
    assert_eq!(s.lost, 0, "{why}");
    assert!(
        s.latency.min_us >= 2_000.0,
        "min {} µs < the 2 ms delay\n{why}",
        s.latency.min_us
    );
    // Each measurement brackets the peer's hold: sent before the peer read the
    // request, received after it wrote the reply. What perfbench adds on top
    // is the two one-way trips (wake-ups included), which depend on the
    // machine's load, so only a gross systematic delay is refused.
    let mut extra_ns = Vec::new();
    for row in csv.lines().skip(1) {
        let c: Vec<&str> = row.split(',').collect();
        let Some(&(rx, written)) = held.get(&c[0].parse::<u32>().unwrap()) else {
            continue;
        };
        let (req, resp): (u64, u64) = (c[2].parse().unwrap(), c[5].parse().unwrap());
        assert!(
            req <= rx && resp >= written,
            "{row}: peer held {rx}..{written}"
        );
        extra_ns.push((resp - req) - (written - rx));
    }
    assert!(
        extra_ns.len() as u64 >= s.sent,
        "{} of {} matched",
        extra_ns.len(),
        s.sent
    );
    extra_ns.sort_unstable();
    let median = extra_ns[extra_ns.len() / 2];
    assert!(
        median < 10_000_000,
        "perfbench added a median {median} ns\n{why}"
    );
}

#[test]
fn through_the_proxy() {
    let _serial = one_at_a_time();
    // Tenants listen on two ports; the proxy listens on two more and relays; emulated switches connect to the proxy.
    let t_ls: Vec<TcpListener> = (0..2).map(|_| TcpListener::bind(any()).unwrap()).collect();
    let t_addrs: Vec<SocketAddr> = t_ls.iter().map(|l| l.local_addr().unwrap()).collect();
    drop(t_ls);
    let p_ls: Vec<TcpListener> = (0..2).map(|_| TcpListener::bind(any()).unwrap()).collect();
    let p_addrs: Vec<SocketAddr> = p_ls.iter().map(|l| l.local_addr().unwrap()).collect();
    drop(p_ls);
    let cfg = proxy::ProxyConfig {
        routes: p_addrs
            .iter()
            .copied()
            .zip(t_addrs.iter().copied())
            .collect(),
        nodelay: true,
        max_ns: now_ns() + 4_000_000_000,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let px = std::thread::spawn(move || proxy::run(cfg, move || tx.send(()).unwrap()));
    rx.recv_timeout(Duration::from_secs(2))
        .expect("proxy ready");
    let sw: Vec<_> = p_addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let a = *a;
            std::thread::spawn(move || {
                let s = conn::connect_until(a, now_ns() + 5_000_000_000)?;
                let spec = perfbench::switch::SwitchSpec {
                    tenant: i as u32,
                    dpid: i as u64 + 1,
                    versions: vec![Version::V13],
                    nports: 2,
                    packet_in: None,
                    in_port: 1,
                    frame_len: 64,
                    nodelay: true,
                };
                let t = perfbench::switch::SwitchTiming {
                    setup_deadline_ns: now_ns() + 5_000_000_000,
                    duration_ns: 0,
                    drain_ns: 3_000_000_000,
                };
                perfbench::switch::run(spec, s, perfbench::switch::StartAt::Handshake, t)
            })
        })
        .collect();
    let tenants = vec![
        spec(0, Kind::Echo, 3_000.0, Version::V13),
        spec(1, Kind::PortStats, 2_000.0, Version::V13),
    ];
    // The switches reach the proxy before the tenants listen (a busy machine
    // can order it so by chance): the proxy must wait for its upstream, not
    // drop the switch (it did, and this test failed when the listeners came up late).
    std::thread::sleep(Duration::from_millis(100));
    let r = run::run(&config(tenants, Endpoints::Listen(t_addrs), 1.0)).unwrap();
    let why = describe(&r);
    for s in &r.tenants {
        assert_eq!(s.lost, 0, "{why}");
        assert!(rate_ok(s, 0.6), "{why}");
        assert!(s.latency.p50_us > 0.0, "{why}");
    }
    for h in sw {
        let res = h.join().unwrap().unwrap();
        assert!(res.answered > 1000, "{res:?}");
    }
    let stats = px.join().unwrap().unwrap();
    assert_eq!(stats.connections, 2, "{stats:?}");
    assert!(stats.to_switch_msgs >= 3_000, "{stats:?}");
    assert!(stats.to_controller_msgs >= 3_000, "{stats:?}");
}
