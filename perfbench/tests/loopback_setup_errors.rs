//! Runs that cannot start say precisely why: nobody connects, no common version, nothing to receive PACKET_OUTs, a window longer than the run.

mod common;

use common::{any, config, one_at_a_time, spec};
use perfbench::clock::now_ns;
use perfbench::codec::Version;
use perfbench::echo_peer;
use perfbench::run::{self, Endpoints};
use perfbench::tenant::Kind;

#[test]
fn setup_errors_are_precise() {
    let _serial = one_at_a_time();
    // Nobody connects.
    let mut cfg = config(
        vec![spec(0, Kind::Echo, 100.0, Version::V13)],
        Endpoints::Listen(vec![any()]),
        1.0,
    );
    cfg.setup_timeout_s = 0.3;
    let e = format!("{:#}", run::run(&cfg).unwrap_err());
    assert!(
        e.contains("no switch connected to 127.0.0.1:") && e.contains("in time"),
        "{e}"
    );

    // The switch speaks only 1.3, the tenant only 1.0.
    let (l, addr) = echo_peer::bind(any()).unwrap();
    let peer = std::thread::spawn(move || {
        echo_peer::serve(
            l,
            vec![Version::V13],
            true,
            now_ns() + 3_000_000_000,
            Some(1),
        )
    });
    let cfg = config(
        vec![spec(0, Kind::Echo, 100.0, Version::V10)],
        Endpoints::Connect(vec![addr]),
        1.0,
    );
    let e = format!("{:#}", run::run(&cfg).unwrap_err());
    assert!(e.contains("tenant 0: OpenFlow 1.0 handshake"), "{e}");
    let _ = peer.join();

    // PACKET_OUT with nothing to receive the frames.
    let cfg = config(
        vec![spec(0, Kind::PacketOut, 100.0, Version::V13)],
        Endpoints::Listen(vec![any()]),
        1.0,
    );
    let e = format!("{:#}", run::run(&cfg).unwrap_err());
    assert!(
        e.contains("--capture-iface") && e.contains("--emulate-switch"),
        "{e}"
    );

    // Warm-up and cool-down longer than the run.
    let mut cfg = config(
        vec![spec(0, Kind::Echo, 100.0, Version::V13)],
        Endpoints::Listen(vec![any()]),
        1.0,
    );
    cfg.warmup_s = 0.6;
    cfg.cooldown_s = 0.6;
    let e = format!("{:#}", run::run(&cfg).unwrap_err());
    assert!(
        e.contains("must be non-negative and shorter than the duration"),
        "{e}"
    );
}
