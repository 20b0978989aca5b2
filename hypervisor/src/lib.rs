//! An OpenFlow 1.0/1.3 network hypervisor after FlowVisor: each switch
//! connects once, and the hypervisor opens one channel per slice to the
//! slice's controller, showing it only its ports, its packets and its flows.
//!
//! Module map: `config` (the slices file), `fields`/`ofmatch` (flowspace
//! fields and the two versions' matches), `policy` (slicing FLOW_MOD and
//! PACKET_OUT), `limits` (rate limit, flow quota), `translate` (xids, buffer
//! ids), `ofwire` (messages the codec lacks), `chan` (a non-blocking channel),
//! `poller` (epoll),
//! `session` (one switch and its tenants), `switch_setup` (the switch handshake),
//! `from_switch` and `tenant` (what each side sends),
//! `server` (listener and reload). The OpenFlow codec is perfbench's.

pub mod chan;
pub mod config;
pub mod fields;
pub mod from_switch;
pub mod limits;
pub mod ofmatch;
pub mod ofwire;
pub mod policy;
pub mod poller;
pub mod server;
pub mod session;
pub mod switch_setup;
pub mod tenant;
pub mod translate;
