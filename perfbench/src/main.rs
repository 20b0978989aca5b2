//! perfbench command line.

mod cli;

use clap::{Parser, Subcommand};
use cli::args::*;

#[derive(Parser)]
#[command(
    name = "perfbench",
    version,
    about = "OpenFlow 1.0/1.3 control-plane benchmark for SDN network hypervisors"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Tenant controllers (perfbenchCP), optionally with the data-plane side in the same process.
    Cp(CpArgs),
    /// Emulated OpenFlow switches that connect to a controller or hypervisor (perfbenchDP, emulation mode).
    Switch(SwitchArgs),
    /// Inject probe packets at / capture them from a real switch's port over AF_PACKET (perfbenchDP).
    Dp(DpArgs),
    /// Minimal OpenFlow pass-through hypervisor: switches connect here, it connects on to the controllers.
    Proxy(ProxyArgs),
    /// Loopback echo peer: a listening emulated switch that answers every request.
    EchoPeer(EchoPeerArgs),
    /// Measure perfbench's own goal figures on loopback (emulated switches).
    Bench(BenchArgs),
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Cp(a) => cli::cp::cmd_cp(a),
        Cmd::Switch(a) => cli::switch_side::cmd_switch(a),
        Cmd::Dp(a) => cli::switch_side::cmd_dp(a),
        Cmd::Proxy(a) => cli::tools::cmd_proxy(a),
        Cmd::EchoPeer(a) => cli::tools::cmd_echo_peer(a),
        Cmd::Bench(a) => cli::tools::cmd_bench(a),
    };
    if let Err(e) = r {
        eprintln!("perfbench: error: {e:#}");
        std::process::exit(2);
    }
}
