//! Codec tests: round trips of every message in both versions, and the byte
//! vectors captured from Open vSwitch 3.1 (tests/vectors/*.hex).

use perfbench::codec::{self, CodecError, ErrorMsg, Message, PortCounters, Version, of10, of13};
use perfbench::{messages, probe};
use std::path::PathBuf;

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

fn load_hex(name: &str) -> Vec<u8> {
    let p = vectors_dir().join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let hex: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    assert!(
        hex.len().is_multiple_of(2),
        "{name}: odd number of hex digits"
    );
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&hex[i..i + 2], 16)
                .unwrap_or_else(|_| panic!("{name}: bad hex at {i}"))
        })
        .collect()
}

fn all_vectors() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(vectors_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".hex"))
        .map(|n| {
            let b = load_hex(&n);
            (n, b)
        })
        .collect();
    v.sort();
    v
}

fn roundtrip(m: &Message, xid: u32) -> Vec<u8> {
    let bytes = m.to_bytes(xid).unwrap();
    let (h, back) = codec::decode(&bytes).unwrap();
    assert_eq!(h.xid, xid);
    assert_eq!(h.length as usize, bytes.len());
    assert_eq!(&back, m, "decode(encode(m)) != m for {m:?}");
    assert_eq!(back.to_bytes(xid).unwrap(), bytes);
    bytes
}

fn counters(k: u64) -> PortCounters {
    PortCounters {
        rx_packets: k,
        tx_packets: k + 1,
        rx_bytes: k + 2,
        tx_bytes: k + 3,
        rx_dropped: k + 4,
        tx_dropped: k + 5,
        rx_errors: k + 6,
        tx_errors: k + 7,
        rx_frame_err: k + 8,
        rx_over_err: k + 9,
        rx_crc_err: k + 10,
        collisions: k + 11,
    }
}

#[test]
fn of10_roundtrips_every_message() {
    use of10::Message as M;
    let frame = probe::template(1, 64);
    let msgs = vec![
        M::Hello { body: vec![] },
        M::Error(ErrorMsg {
            err_type: 1,
            code: 1,
            data: vec![1, 2, 3],
        }),
        M::EchoRequest(b"12345678".to_vec()),
        M::EchoReply(vec![]),
        M::FeaturesRequest,
        M::FeaturesReply(of10::FeaturesReply {
            datapath_id: 0x0102_0304_0506_0708,
            n_buffers: 256,
            n_tables: 254,
            capabilities: 0xc7,
            actions: 0xfff,
            ports: vec![
                of10::PhyPort::named(1, [2, 0, 0, 0, 0, 1], "eth1"),
                of10::PhyPort::named(0xfffe, [2; 6], "br0"),
            ],
        }),
        M::PacketIn(of10::PacketIn {
            buffer_id: 7,
            total_len: 64,
            in_port: 3,
            reason: 1,
            data: frame.clone(),
        }),
        M::PacketOut(of10::PacketOut {
            buffer_id: of10::NO_BUFFER,
            in_port: of10::OFPP_CONTROLLER,
            actions: vec![
                of10::Action::Output {
                    port: 2,
                    max_len: 0,
                },
                of10::Action::Other {
                    action_type: 5,
                    body: vec![0, 0, 0, 0],
                },
            ],
            data: frame.clone(),
        }),
        M::FlowMod(of10::FlowMod {
            match_: of10::Match {
                in_port: 4,
                dl_type: 0x0800,
                nw_src: 0x0a00_0001,
                tp_dst: 80,
                ..of10::Match::all()
            },
            cookie: 99,
            command: 0,
            idle_timeout: 10,
            hard_timeout: 20,
            priority: 100,
            buffer_id: of10::NO_BUFFER,
            out_port: of10::OFPP_NONE,
            flags: 1,
            actions: vec![of10::Action::Output {
                port: of10::OFPP_CONTROLLER,
                max_len: 128,
            }],
        }),
        M::BarrierRequest,
        M::BarrierReply,
        M::PortStatsRequest {
            flags: 0,
            port_no: of10::OFPP_NONE,
        },
        M::PortStatsReply {
            flags: 0,
            stats: vec![
                of10::PortStats {
                    port_no: 1,
                    counters: counters(10),
                },
                of10::PortStats {
                    port_no: 2,
                    counters: counters(20),
                },
            ],
        },
        M::Other {
            msg_type: 9,
            body: vec![0, 0, 0, 128],
        },
    ];
    for (i, m) in msgs.into_iter().enumerate() {
        let b = roundtrip(&Message::V10(m.clone()), i as u32 + 1);
        assert_eq!(b[0], 0x01);
        assert_eq!(b[1], m.msg_type());
    }
}

#[test]
fn of13_roundtrips_every_message() {
    use of13::Message as M;
    let frame = probe::template(2, 80);
    let msgs = vec![
        M::Hello {
            elements: vec![of13::HelloElement::VersionBitmap(vec![0x12])],
        },
        M::Hello { elements: vec![] },
        M::Error(ErrorMsg {
            err_type: 1,
            code: 1,
            data: vec![4, 30, 0, 16],
        }),
        M::EchoRequest(vec![]),
        M::EchoReply(b"abc".to_vec()),
        M::FeaturesRequest,
        M::FeaturesReply(of13::FeaturesReply {
            datapath_id: 42,
            n_buffers: 0,
            n_tables: 254,
            auxiliary_id: 0,
            capabilities: 0x4f,
            reserved: 0,
        }),
        M::PacketIn(of13::PacketIn {
            buffer_id: of13::NO_BUFFER,
            total_len: 80,
            reason: 0,
            table_id: 0,
            cookie: 0,
            match_: of13::Match {
                fields: vec![of13::Oxm::in_port(1)],
            },
            data: frame.clone(),
        }),
        M::PacketIn(of13::PacketIn {
            buffer_id: 3,
            total_len: 80,
            reason: 1,
            table_id: 2,
            cookie: u64::MAX,
            match_: of13::Match {
                fields: vec![
                    of13::Oxm::in_port(7),
                    of13::Oxm {
                        class: 0x8000,
                        field: 6,
                        hasmask: true,
                        value: vec![1, 2, 3, 4, 5, 6, 0xff, 0xff, 0xff, 0, 0, 0],
                    },
                ],
            },
            data: vec![],
        }),
        M::PacketOut(of13::PacketOut {
            buffer_id: of13::NO_BUFFER,
            in_port: of13::OFPP_CONTROLLER,
            actions: vec![of13::Action::Output {
                port: 1,
                max_len: 0,
            }],
            data: frame.clone(),
        }),
        M::FlowMod(of13::FlowMod {
            cookie: 1,
            cookie_mask: 2,
            table_id: 0,
            command: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 0,
            buffer_id: of13::NO_BUFFER,
            out_port: of13::OFPP_ANY,
            out_group: 0xffff_ffff,
            flags: 0,
            match_: of13::Match::default(),
            instructions: vec![
                of13::Instruction::ApplyActions(vec![of13::Action::Output {
                    port: of13::OFPP_CONTROLLER,
                    max_len: of13::OFPCML_NO_BUFFER,
                }]),
                of13::Instruction::WriteActions(vec![]),
                of13::Instruction::ClearActions,
                of13::Instruction::GotoTable(3),
            ],
        }),
        M::BarrierRequest,
        M::BarrierReply,
        M::PortStatsRequest {
            flags: 0,
            port_no: of13::OFPP_ANY,
        },
        M::PortStatsReply {
            flags: 1,
            stats: vec![of13::PortStats {
                port_no: 0xffff_fffe,
                counters: counters(5),
                duration_sec: 3,
                duration_nsec: 4,
            }],
        },
        M::Other {
            msg_type: 24,
            body: vec![0; 16],
        },
    ];
    for (i, m) in msgs.into_iter().enumerate() {
        let b = roundtrip(&Message::V13(m.clone()), 1000 + i as u32);
        assert_eq!(b[0], 0x04);
        assert_eq!(b[1], m.msg_type());
    }
}

/// Every captured message decodes, re-encodes to the same bytes, and has the
/// type its file name says.
#[test]
fn ovs_vectors_decode_and_reencode_byte_for_byte() {
    let vs = all_vectors();
    assert!(
        vs.len() >= 30,
        "expected the captured vector set, found {} files",
        vs.len()
    );
    for (name, bytes) in &vs {
        let (h, m) = codec::decode(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want_version = if name.contains("_of10_") { 0x01 } else { 0x04 };
        // OVS answers a 1.0 controller's HELLO with a 1.3 HELLO carrying a version bitmap.
        if !name.ends_with("_hello.hex") {
            assert_eq!(h.version, want_version, "{name}");
        }
        let label = name.trim_end_matches(".hex").splitn(3, '_').nth(2).unwrap();
        let type_name = codec::type_name(h.version, h.msg_type)
            .trim_start_matches("OFPT_")
            .to_lowercase();
        if !label.starts_with("type") {
            assert_eq!(type_name, label, "{name}: decoded type {type_name}");
        }
        assert!(
            !matches!(m, Message::V10(of10::Message::Other { .. }))
                || label.starts_with("type")
                || label == "set_config",
            "{name}: decoded as an unknown message"
        );
        assert_eq!(
            &m.to_bytes(h.xid).unwrap(),
            bytes,
            "{name}: re-encoding differs"
        );
    }
}

#[test]
fn ovs_vectors_have_the_expected_contents() {
    // OVS's HELLO offers 1.0 and 1.3 in a version bitmap.
    let (_, m) = codec::decode(&load_hex("ovs_of13_hello.hex")).unwrap();
    let Message::V13(h) = m else {
        panic!("not 1.3")
    };
    assert_eq!(h.hello_bitmap(), Some((1 << 1) | (1 << 4)));
    assert_eq!(
        codec::negotiate(&[Version::V10], 4, h.hello_bitmap()),
        Some(Version::V10)
    );
    assert_eq!(
        codec::negotiate(&[Version::V13], 4, h.hello_bitmap()),
        Some(Version::V13)
    );

    // PACKET_IN carries our probe frame, from port 1, in both versions.
    for (f, v) in [
        ("ovs_of13_packet_in.hex", Version::V13),
        ("ovs_of10_packet_in.hex", Version::V10),
    ] {
        let b = load_hex(f);
        let data = messages::packet_in_data(v, &b[8..]).unwrap();
        let p = probe::parse(data).unwrap_or_else(|| panic!("{f}: no probe in PACKET_IN data"));
        assert_eq!((p.tenant, p.seq), (0, 42), "{f}");
        match codec::decode(&b).unwrap().1 {
            Message::V13(of13::Message::PacketIn(pi)) => {
                assert_eq!(pi.match_.fields, vec![of13::Oxm::in_port(1)]);
                assert_eq!(pi.total_len as usize, pi.data.len());
            }
            Message::V10(of10::Message::PacketIn(pi)) => {
                assert_eq!(pi.in_port, 1);
                assert_eq!(pi.total_len as usize, pi.data.len());
            }
            other => panic!("{f}: {other:?}"),
        }
    }

    // Port statistics replies list the bridge's ports.
    match codec::decode(&load_hex("ovs_of13_multipart_reply.hex"))
        .unwrap()
        .1
    {
        Message::V13(of13::Message::PortStatsReply { stats, .. }) => {
            assert_eq!(stats.len(), 2);
            assert!(stats.iter().any(|s| s.port_no == 1));
        }
        other => panic!("{other:?}"),
    }
    match codec::decode(&load_hex("ovs_of10_stats_reply.hex"))
        .unwrap()
        .1
    {
        Message::V10(of10::Message::PortStatsReply { stats, .. }) => assert_eq!(stats.len(), 2),
        other => panic!("{other:?}"),
    }
    // FEATURES_REPLY: 1.0 lists the two ports (pbo0 and the bridge's local port).
    match codec::decode(&load_hex("ovs_of10_features_reply.hex"))
        .unwrap()
        .1
    {
        Message::V10(of10::Message::FeaturesReply(f)) => {
            let names: Vec<String> = f
                .ports
                .iter()
                .map(|p| {
                    String::from_utf8_lossy(&p.name)
                        .trim_end_matches('\0')
                        .to_string()
                })
                .collect();
            assert!(names.contains(&"pbo0".to_string()), "{names:?}");
        }
        other => panic!("{other:?}"),
    }
    // The unknown message type got OFPET_BAD_REQUEST / OFPBRC_BAD_TYPE, echoing our xid 9.
    for f in ["ovs_of13_error.hex", "ovs_of10_error.hex"] {
        let b = load_hex(f);
        let (h, _) = codec::split(&b).unwrap();
        let e = ErrorMsg::decode(&b[8..]).unwrap();
        assert_eq!((h.xid, e.err_type, e.code), (9, 1, 1), "{f}");
    }
    // The messages perfbench itself writes are byte-identical to those OVS accepted.
    assert_eq!(
        messages::table_miss_to_controller(Version::V13)
            .to_bytes(6)
            .unwrap(),
        load_hex("ctl_of13_flow_mod.hex")
    );
    assert_eq!(
        messages::table_miss_to_controller(Version::V10)
            .to_bytes(6)
            .unwrap(),
        load_hex("ctl_of10_flow_mod.hex")
    );
    assert_eq!(
        messages::port_stats_request(Version::V13)
            .to_bytes(4)
            .unwrap(),
        load_hex("ctl_of13_multipart_request.hex")
    );
    assert_eq!(
        messages::port_stats_request(Version::V10)
            .to_bytes(4)
            .unwrap(),
        load_hex("ctl_of10_stats_request.hex")
    );
    for (f, v) in [
        ("ctl_of13_packet_out.hex", Version::V13),
        ("ctl_of10_packet_out.hex", Version::V10),
    ] {
        let want = load_hex(f);
        let frame = messages::packet_out_data(v, &want[8..]).unwrap();
        let mut got = Vec::new();
        messages::write_packet_out(&mut got, v, 8, 1, frame).unwrap();
        assert_eq!(got, want, "{f}");
    }
}

/// Truncated or corrupted input gives an error, never a panic.
#[test]
fn damaged_vectors_fail_cleanly() {
    for (name, bytes) in all_vectors() {
        for cut in 0..bytes.len() {
            let mut b = bytes[..cut].to_vec();
            if b.len() >= 4 {
                let l = (b.len() as u16).to_be_bytes();
                b[2..4].copy_from_slice(&l);
            }
            let r = codec::decode(&b);
            // A shorter message may still be valid (e.g. data cut short); it must not panic.
            if cut < 8 {
                assert!(r.is_err(), "{name} cut to {cut}");
            }
        }
        // Every single-byte corruption of the body decodes or errors, without panicking.
        for i in 8..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = codec::decode(&b);
        }
    }
    let e = codec::decode(&[0x04, 0, 0, 4, 0, 0, 0, 0]).unwrap_err();
    assert!(matches!(e, CodecError::BadLength { length: 4, .. }), "{e}");
    let e = codec::decode(&[0x02, 0, 0, 8, 0, 0, 0, 0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unsupported OpenFlow version 0x02 (supported: 0x01 = 1.0, 0x04 = 1.3)"
    );
    let e = codec::decode(&[0x04, 6, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap_err();
    assert!(
        e.to_string().contains("truncated features datapath_id"),
        "{e}"
    );
}

#[test]
fn framing_splits_a_stream() {
    let mut stream = Vec::new();
    for (_, b) in all_vectors().iter().take(5) {
        stream.extend_from_slice(b);
    }
    let mut off = 0;
    let mut n = 0;
    while let Some(len) = codec::frame_len(&stream[off..]).unwrap() {
        off += len;
        n += 1;
    }
    assert_eq!((n, off), (5, stream.len()));
    assert_eq!(codec::frame_len(&stream[..7]).unwrap(), None);
}
