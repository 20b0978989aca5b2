use super::*;
use crate::config;

fn slice() -> Slice {
    let c = config::parse(
        r#"
[[slice]]
name = "red"
controller = "127.0.0.1:6653"
ports = [1, 2]
[slice.flowspace]
vlan = 10
"#,
    )
    .unwrap();
    c.slices[0].clone()
}

fn fm10(m: of10::Match, actions: Vec<of10::Action>) -> of10::FlowMod {
    of10::FlowMod {
        match_: m,
        cookie: 0x1234,
        command: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 100,
        buffer_id: of10::NO_BUFFER,
        out_port: of10::OFPP_NONE,
        flags: 0,
        actions,
    }
}

fn out10(port: u16) -> of10::Action {
    of10::Action::Output { port, max_len: 0 }
}

#[test]
fn wildcard_in_port_expands_to_the_slice_ports() {
    let s = slice();
    let mods = flow_mod10(&s, &fm10(of10::Match::all(), vec![out10(2)])).unwrap();
    assert_eq!(mods.len(), 2);
    for (m, port) in mods.iter().zip([1u32, 2]) {
        let f = ofmatch::from_of10(&m.match_);
        assert_eq!(f.in_port, Some(port));
        assert_eq!(f.vlan, Some(10), "narrowed to the slice's VLAN");
        assert_eq!(cookie_tag(m.cookie), s.cookie_tag);
        assert_eq!(m.cookie & !TAG_MASK, 0x1234);
        assert_ne!(m.flags & OFPFF_SEND_FLOW_REM, 0);
    }
}

#[test]
fn outside_the_flowspace_is_denied() {
    let s = slice();
    let mut m = of10::Match::all();
    ofmatch::apply_of10(
        &mut m,
        &Fields {
            vlan: Some(20),
            ..Fields::default()
        },
    )
    .unwrap();
    assert_eq!(
        flow_mod10(&s, &fm10(m, vec![])),
        Err(Denied::OutsideFlowspace)
    );
    let mut m = of10::Match::all();
    ofmatch::apply_of10(
        &mut m,
        &Fields {
            in_port: Some(3),
            ..Fields::default()
        },
    )
    .unwrap();
    assert_eq!(flow_mod10(&s, &fm10(m, vec![])), Err(Denied::Port(3)));
    let all = of10::Match::all();
    assert_eq!(
        flow_mod10(&s, &fm10(all, vec![out10(3)])),
        Err(Denied::Port(3))
    );
    assert!(matches!(
        flow_mod10(&s, &fm10(all, vec![out10(0xfffa)])),
        Err(Denied::Action(_))
    ));
    let set_vlan = of10::Action::Other {
        action_type: 1,
        body: vec![0, 20, 0, 0],
    };
    assert!(matches!(
        flow_mod10(&s, &fm10(all, vec![set_vlan])),
        Err(Denied::Action(_))
    ));
}

#[test]
fn flood_becomes_the_slice_ports_minus_in_port() {
    let s = slice();
    let mods = flow_mod10(&s, &fm10(of10::Match::all(), vec![out10(0xfffb)])).unwrap();
    assert_eq!(mods[0].actions, vec![out10(2)]);
    assert_eq!(mods[1].actions, vec![out10(1)]);
    let po = of10::PacketOut {
        buffer_id: of10::NO_BUFFER,
        in_port: of10::OFPP_CONTROLLER,
        actions: vec![out10(0xfffc)],
        data: vec![],
    };
    assert_eq!(packet_out10(&s, &po).unwrap(), vec![out10(1), out10(2)]);
    let po = of10::PacketOut {
        actions: vec![out10(4)],
        ..po
    };
    assert_eq!(packet_out10(&s, &po), Err(Denied::Port(4)));
}

#[test]
fn of13_deletes_are_confined_by_cookie() {
    let s = slice();
    let fm = of13::FlowMod {
        cookie: 0,
        cookie_mask: 0,
        table_id: 0,
        command: 3,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 0,
        buffer_id: of13::NO_BUFFER,
        out_port: of13::OFPP_ANY,
        out_group: 0xffff_ffff,
        flags: 0,
        match_: of13::Match {
            fields: vec![of13::Oxm::in_port(2)],
        },
        instructions: vec![],
    };
    let mods = flow_mod13(&s, &fm).unwrap();
    assert_eq!(mods.len(), 1);
    assert_eq!(mods[0].cookie_mask, TAG_MASK);
    assert_eq!(cookie_tag(mods[0].cookie), s.cookie_tag);
    let (f, rest) = ofmatch::from_oxms(&mods[0].match_.fields);
    assert_eq!((f.in_port, f.vlan), (Some(2), Some(10)));
    assert!(rest.is_empty());
    let masked_vlan = of13::Oxm {
        class: of13::OFPXMC_OPENFLOW_BASIC,
        field: ofmatch::oxm::VLAN_VID,
        hasmask: true,
        value: vec![0x10, 0, 0x10, 0],
    };
    let fm = of13::FlowMod {
        match_: of13::Match {
            fields: vec![masked_vlan],
        },
        ..fm
    };
    assert_eq!(flow_mod13(&s, &fm), Err(Denied::OutsideFlowspace));
}
