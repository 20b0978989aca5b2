//! The command line: separate processes for the controller side and the
//! emulated switch, and precise errors for bad input.

use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_perfbench");

fn free_port_pair() -> u16 {
    // Two consecutive free ports (tenant i listens on base + i).
    for _ in 0..50 {
        let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if p < 65_000 && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
    panic!("no two consecutive free ports");
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run perfbench")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

#[test]
fn controller_and_emulated_switch_in_separate_processes() {
    let port = free_port_pair();
    let timing = [
        "--duration",
        "1.5",
        "--warmup",
        "0.25",
        "--cooldown",
        "0.25",
    ];
    let listen = format!("127.0.0.1:{port}");
    let mut cp_args = vec![
        "cp",
        "--listen",
        &listen,
        "--tenants",
        "2",
        "--type",
        "packet-in,packet-out",
        "--rate",
        "2000",
        "--of",
        "1.0",
        "--external-dp",
    ];
    cp_args.extend(timing);
    let cp = Command::new(BIN)
        .args(&cp_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sw_args = vec![
        "switch",
        "--connect",
        &listen,
        "--switches",
        "2",
        "--packet-in-rate",
        "2000",
        "--of",
        "1.0,1.3",
    ];
    // The switch process starts PACKET_INs at its own handshake, the
    // controller process its window at the common start of its tenants,
    // which a busy machine can delay by a second: the switch generates for
    // longer, and measures PACKET_OUT arrivals in a window of the same length
    // inside the controller's sending time (its window opens at the first arrival).
    sw_args.extend([
        "--duration",
        "2.75",
        "--warmup",
        "0.25",
        "--cooldown",
        "1.5",
    ]);
    let sw = run(&sw_args);
    let cp = cp.wait_with_output().unwrap();
    assert!(
        cp.status.success(),
        "cp: {}",
        String::from_utf8_lossy(&cp.stderr)
    );
    assert!(
        sw.status.success(),
        "switch: {}",
        String::from_utf8_lossy(&sw.stderr)
    );
    let c = json(&cp);
    let s = json(&sw);
    // Tenant 0 received switch 0's PACKET_INs: ~2000 in its 1 s window, none missing.
    let t0 = &c["tenants"][0];
    assert_eq!(t0["kind"], "packet-in");
    let sent = t0["sent"].as_u64().unwrap();
    assert!((1_900..=2_100).contains(&sent), "{t0}");
    assert_eq!(t0["lost"], 0, "{t0}");
    assert!(t0["latency"]["p50_us"].as_f64().unwrap() > 0.0);
    // Tenant 1's PACKET_OUTs are measured by the switch process.
    assert_eq!(c["tenants"][1]["measured_elsewhere"], true);
    let sw1 = &s["switches"][1];
    assert_eq!(sw1["version"], "1.0");
    let po = &sw1["packet_out_arrivals"];
    let got = po["sent"].as_u64().unwrap();
    assert!((1_900..=2_100).contains(&got), "{sw1}");
    assert!(po["latency"]["p50_us"].as_f64().unwrap() > 0.0, "{sw1}");
    assert!(
        s["switches"][0]["packet_ins_sent"].as_u64().unwrap() >= 2_900,
        "{s}"
    );
}

#[test]
fn bad_input_is_named() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["cp", "--type", "bogus", "--emulate-switch"],
            "unknown message type 'bogus'",
        ),
        (
            &[
                "cp",
                "--tenants",
                "3",
                "--nodelay",
                "1,0",
                "--emulate-switch",
            ],
            "--nodelay has 2 values but there are 3 tenants",
        ),
        (
            &["cp", "--nodelay", "maybe", "--emulate-switch"],
            "'maybe' is not 1/0",
        ),
        (
            &["cp", "--rate", "fast", "--emulate-switch"],
            "rate 'fast' is not a number",
        ),
        (
            &["cp", "--schedule", "/nonexistent/s.txt", "--emulate-switch"],
            "cannot read schedule file /nonexistent/s.txt",
        ),
        (
            &["cp", "--listen", "localhost", "--emulate-switch"],
            "'localhost' is not an address of the form IP:PORT",
        ),
        (
            &[
                "cp",
                "--duration",
                "2",
                "--warmup",
                "1",
                "--cooldown",
                "1",
                "--emulate-switch",
            ],
            "must be non-negative and less than --duration",
        ),
        (
            &["cp", "--type", "packet-out"],
            "nothing receives the frames",
        ),
        (
            &["cp", "--of", "1.2", "--emulate-switch"],
            "unknown OpenFlow version '1.2'",
        ),
        (
            &[
                "proxy",
                "--listen",
                "127.0.0.1:1",
                "--listen",
                "127.0.0.1:2",
                "--upstream",
                "127.0.0.1:3",
            ],
            "2 --listen but 1 --upstream",
        ),
        (
            &["dp", "--iface", "lo"],
            "nothing to do: give --inject-rate R and/or --capture",
        ),
        (
            &["echo-peer", "--max-seconds", "0"],
            "--max-seconds must be positive",
        ),
    ];
    for (args, want) in cases {
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: expected '{want}' in: {err}");
    }
}
