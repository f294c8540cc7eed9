//! `braid`: parallel TCP that keeps its speed and gives back the fairness.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cc;
mod trace;
mod traffic;

#[derive(Parser)]
#[command(name = "braid", version, about = "Parallel TCP streams, fair by design")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install, inspect and configure braid's congestion controls in the running kernel.
    #[command(subcommand)]
    Cc(cc::CcCommand),
    /// Cross traffic and probes for the laboratory: stiff UDP, Poisson flows, RTT probes.
    #[command(subcommand)]
    Traffic(traffic::TrafficCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Cc(cmd) => cc::run(cmd),
        Command::Traffic(cmd) => traffic::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("braid: {e:#}");
            ExitCode::FAILURE
        }
    }
}
