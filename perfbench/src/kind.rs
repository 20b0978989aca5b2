//! The OpenFlow message kinds a tenant exercises, and which reply answers each.

use crate::codec::{self, Version};
use crate::messages;

/// The message type a tenant exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// ECHO_REQUEST → ECHO_REPLY.
    Echo,
    /// FEATURES_REQUEST → FEATURES_REPLY.
    Features,
    /// Port statistics (1.0 STATS / 1.3 MULTIPART) request → reply.
    PortStats,
    /// BARRIER_REQUEST → BARRIER_REPLY.
    Barrier,
    /// PACKET_OUT with a probe frame; the data-plane side timestamps its arrival.
    PacketOut,
    /// The data-plane side sends probe frames; the tenant timestamps the PACKET_IN.
    PacketIn,
    /// FLOW_MOD n + BARRIER_REQUEST n → BARRIER_REPLY n (the flow is installed).
    FlowMod,
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Ok(match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "echo" | "echo-request" => Kind::Echo,
            "features" | "features-request" => Kind::Features,
            "port-stats" | "portstats" | "stats" => Kind::PortStats,
            "barrier" => Kind::Barrier,
            "packet-out" | "packetout" => Kind::PacketOut,
            "packet-in" | "packetin" => Kind::PacketIn,
            "flow-mod" | "flowmod" => Kind::FlowMod,
            _ => {
                return Err(format!(
                    "unknown message type '{s}' (use echo, features, port-stats, barrier, packet-out, packet-in or flow-mod)"
                ));
            }
        })
    }
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Echo => "echo",
            Kind::Features => "features",
            Kind::PortStats => "port-stats",
            Kind::Barrier => "barrier",
            Kind::PacketOut => "packet-out",
            Kind::PacketIn => "packet-in",
            Kind::FlowMod => "flow-mod",
        }
    }

    /// Request type and the reply type that answers it, for request/reply kinds.
    pub fn request_reply(self, v: Version) -> Option<(u8, u8)> {
        use codec::types::*;
        match self {
            Kind::Echo => Some((ECHO_REQUEST, ECHO_REPLY)),
            Kind::Features => Some((FEATURES_REQUEST, FEATURES_REPLY)),
            Kind::PortStats => Some((
                messages::stats_request_type(v),
                messages::stats_reply_type(v),
            )),
            Kind::FlowMod => Some((FLOW_MOD, messages::barrier_reply_type(v))),
            Kind::Barrier => Some((
                messages::barrier_request_type(v),
                messages::barrier_reply_type(v),
            )),
            Kind::PacketOut | Kind::PacketIn => None,
        }
    }
}
