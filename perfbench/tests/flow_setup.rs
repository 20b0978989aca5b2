//! The FLOW_MOD + BARRIER pairs of the flow-mod message kind.

use perfbench::codec::{self, Message, Version, of10, of13};
use perfbench::messages;

#[test]
fn flow_setup_rules_are_distinct_flow_mods_with_a_barrier() {
    for v in [Version::V10, Version::V13] {
        let mut out = Vec::new();
        messages::write_flow_mod_barrier(&mut out, v, 70_000, 1).unwrap();
        let len = u16::from_be_bytes([out[2], out[3]]) as usize;
        let (h, m) = codec::decode(&out[..len]).unwrap();
        let (hb, _) = codec::decode(&out[len..]).unwrap();
        assert_eq!((h.xid, hb.xid), (70_000, 70_000));
        assert_eq!(hb.msg_type, messages::barrier_request_type(v));
        match m {
            Message::V10(of10::Message::FlowMod(f)) => {
                assert_eq!(
                    (f.match_.in_port, f.match_.tp_src),
                    (1, (70_000u32 % 65_536) as u16)
                );
                assert_eq!(f.match_.tp_dst, 47_000);
                assert_eq!(f.hard_timeout, 10);
            }
            Message::V13(of13::Message::FlowMod(f)) => {
                assert_eq!(f.match_.fields.len(), 5);
                assert_eq!(f.match_.fields[3].value, (70_000u32 as u16).to_be_bytes());
            }
            other => panic!("{other:?}"),
        }
    }
}
