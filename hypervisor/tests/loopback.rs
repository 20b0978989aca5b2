//! On loopback, no root: perfbench's emulated switch connects to the
//! hypervisor once, two perfbench tenants get their own channel each, and a
//! SIGHUP-style reload changes a slice without dropping anything.

use hypervisor::config::{self, Limits};
use hypervisor::server::{Server, Shared};
use perfbench::clock::now_ns;
use perfbench::codec::Version;
use perfbench::run::{self, Endpoints, RunConfig};
use perfbench::schedule::Schedule;
use perfbench::tenant::{Kind, TenantSpec};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn spec(id: u32, kind: Kind, rate: f64) -> TenantSpec {
    TenantSpec {
        id,
        kind,
        schedule: Schedule::constant(rate).unwrap(),
        nodelay: true,
        version: Version::V13,
        out_port: 1,
        size: 64,
        install_table_miss: false,
    }
}

#[test]
fn two_tenants_share_one_switch_connection() {
    // The tenants' listeners are bound by the run itself: pick two free ports in a row.
    let base = loop {
        let a = free_addr();
        if TcpListener::bind(("127.0.0.1", a.port() + 1)).is_ok() && a.port() < 65_000 {
            break a;
        }
    };
    let limits = Limits::default();
    let cfg = config::generated(2, base, false, limits).unwrap();
    let shared = Shared::new(cfg, vec![Version::V13], true, now_ns() + 6_000_000_000);
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), shared, None).unwrap();
    let hv_addr = server.listener.local_addr().unwrap();
    let shared = server.shared.clone();
    let hv = std::thread::spawn(move || server.run());
    let sw = std::thread::spawn(move || {
        let s = perfbench::conn::connect_until(hv_addr, now_ns() + 5_000_000_000)?;
        let spec = perfbench::switch::SwitchSpec {
            tenant: 0,
            dpid: 7,
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
            drain_ns: 4_000_000_000,
        };
        perfbench::switch::run(spec, s, perfbench::switch::StartAt::Handshake, t)
    });
    let addrs = vec![base, SocketAddr::new(base.ip(), base.port() + 1)];
    let run_cfg = RunConfig {
        label: "hv".into(),
        tenants: vec![
            spec(0, Kind::Echo, 2_000.0),
            spec(1, Kind::Barrier, 1_000.0),
        ],
        endpoints: Endpoints::Listen(addrs),
        duration_s: 1.0,
        warmup_s: 0.2,
        cooldown_s: 0.2,
        drain_s: 0.5,
        setup_timeout_s: 6.0,
        emulate_switch: false,
        inject_iface: None,
        capture_iface: None,
        cpu_pids: vec![],
        out_dir: None,
        write_records: false,
        pin_tenants: None,
        pin_switches: None,
        announce: false,
        external_dp: false,
    };
    // Meanwhile a reload rate-limits tenant 1 far above its rate: nothing may drop.
    let reload = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let mut c = config::generated(2, base, false, Limits::default()).unwrap();
        c.slices[1].limits.rate = 100_000.0;
        shared.replace(c);
    });
    let r = run::run(&run_cfg).unwrap();
    reload.join().unwrap();
    for s in &r.tenants {
        assert_eq!(s.lost, 0, "{:?}", r.tenants);
        assert!(s.latency.count > 0);
    }
    let switch = sw.join().unwrap().unwrap();
    // Echoes are answered by the hypervisor; only the barriers reach the switch.
    let barriers = r.tenants[1].sent;
    assert!(switch.answered >= barriers, "{switch:?}");
    let report = hv.join().unwrap();
    let session = &report.switches[0];
    assert_eq!(session.dpid, "0000000000000007");
    let (t0, t1) = (&session.tenants[0], &session.tenants[1]);
    assert_eq!(t0.to_switch_msgs, 0, "echo stays local: {t0:?}");
    assert!(t0.answered_locally >= r.tenants[0].sent);
    assert!(t1.to_switch_msgs >= barriers);
    assert_eq!(
        (t0.connects, t1.connects),
        (1, 1),
        "the reload kept both channels"
    );
}
