//! `braid`: parallel TCP that keeps its speed and gives back the fairness.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod cc;
mod plan;
mod trace;
mod traffic;
mod transfer;

#[derive(Parser)]
#[command(
    name = "braid",
    version,
    about = "Parallel TCP streams, fair by design"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install, inspect and configure braid's congestion controls in the running kernel.
    #[command(subcommand)]
    Cc(cc::CcCommand),
    /// Sends files and directories to a braid server, striped over N streams.
    #[command(override_usage = "braid send [OPTIONS] SOURCE... HOST[:PORT]:DEST")]
    Send(transfer::SendArgs),
    /// Fetches files and directories from a braid server.
    #[command(override_usage = "braid get [OPTIONS] HOST[:PORT]:SOURCE [HOST:SOURCE...] DEST")]
    Get(transfer::GetArgs),
    /// Memory-to-memory throughput test against a braid server, like iperf3.
    Bench(transfer::BenchArgs),
    /// Answers send, get and bench on one port.
    Serve(transfer::ServeArgs),
    /// What each mode would move on a path, the knee, and the mode to use.
    Plan(plan::PlanArgs),
    /// Cross traffic and probes for the laboratory: stiff UDP, Poisson flows, RTT probes.
    #[command(subcommand)]
    Traffic(traffic::TrafficCommand),
    /// Prints a shell's completion script: `braid completions bash > /etc/bash_completion.d/braid`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Writes braid's man pages (braid.1, braid-send.1, ...) into a directory.
    Manpages {
        /// Where to write them; made if missing.
        dir: PathBuf,
    },
}

/// The completion script for `shell`, as text.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "braid", &mut script);
    let text = String::from_utf8(script).context("the completion script is not UTF-8")?;
    braid::console::out(format_args!("{text}"));
    Ok(())
}

/// One man page for braid and one for each of its commands.
fn manpages(dir: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("writing man pages into {}", dir.display()))?;
    braid::outln!("man pages written into {}", dir.display());
    Ok(())
}

fn main() -> ExitCode {
    // The matches are kept: the order of --include and --exclude is read from them.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let sub = |name| matches.subcommand_matches(name);
    // With --json the failure is a record on stdout too, for whoever reads only that.
    let json = matches
        .subcommand()
        .and_then(|(_, m)| m.try_get_one::<bool>("json").ok().flatten().copied())
        .unwrap_or(false);
    let engine = |r: braid::Result<()>| match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            braid::errln!("braid: {e}");
            if json {
                braid::records::print(&braid::records::Failure {
                    message: e.to_string(),
                    exit_code: e.exit_code(),
                });
            }
            ExitCode::from(e.exit_code())
        }
    };
    let result = match cli.command {
        Command::Cc(cmd) => cc::run(cmd),
        Command::Traffic(cmd) => traffic::run(cmd),
        Command::Completions { shell } => completions(shell),
        Command::Manpages { dir } => manpages(&dir),
        Command::Send(a) => return engine(transfer::send(a, sub("send"))),
        Command::Get(a) => return engine(transfer::get(a, sub("get"))),
        Command::Bench(a) => return engine(transfer::bench(a)),
        Command::Serve(a) => return engine(transfer::serve(a)),
        Command::Plan(a) => return engine(plan::run(a)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            braid::errln!("braid: {e:#}");
            ExitCode::FAILURE
        }
    }
}
