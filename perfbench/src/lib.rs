//! perfbench: an OpenFlow control-plane benchmark for SDN network hypervisors.
//!
//! See README.md for the topology modes. Module map:
//! - `codec` (`of10`, `of13`): the OpenFlow wire format; `messages`: the
//!   messages perfbench sends, version-agnostic; `probe`: the timestamped
//!   data-plane frame.
//! - `schedule`, `pacer`, `clock`: when to send, on CLOCK_MONOTONIC.
//! - `conn`, `tenant` (`kind`: what it sends), `switch`, `echo_peer`, `dp`,
//!   `proxy`: the actors.
//! - `flow_confirm`: flow insertion latency (FLOW_MOD → first forwarded
//!   packet); `emulated_dp`: the emulated switch's rule table and forwarder.
//! - `run_config` (what a run is given, checked), `run`, `record`, `summary`,
//!   `report`, `cpu`, `bench`: measurement and reports. The binary's command
//!   line is `src/cli/` (flags, values, one module per group of subcommands).

pub mod bench;
pub mod clock;
pub mod codec;
pub mod conn;
pub mod cpu;
pub mod dp;
pub mod echo_peer;
pub mod emulated_dp;
pub mod flow_confirm;
pub mod kind;
pub mod messages;
pub mod pacer;
pub mod probe;
pub mod proxy;
pub mod record;
pub mod report;
pub mod run;
pub mod run_config;
pub mod schedule;
pub mod signals;
pub mod start_sync;
pub mod summary;
pub mod switch;
pub mod tenant;
