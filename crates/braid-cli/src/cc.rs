//! `braid cc ...`: the congestion controls in the kernel.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use braid_cc::{Control, Controls, Defaults, InstallReport, Strength};
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::trace;

#[derive(Subcommand)]
pub enum CcCommand {
    /// Register braid's five controls and pin them so they stay after this command exits.
    Install(PinDir),
    /// List the controls, the defaults and every live TCP-P group.
    Status {
        #[command(flatten)]
        pin: PinDir,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Change the defaults used by sockets without settings of their own.
    Set(SetArgs),
    /// Unregister the controls and remove every pin.
    Uninstall(PinDir),
    /// Send to a sink over N streams with a chosen control, printing each stream's window as JSON lines.
    Trace(trace::TraceArgs),
    /// Accept connections and discard what they send (the other end of `trace`).
    Sink(trace::SinkArgs),
}

#[derive(Args, Clone)]
pub struct PinDir {
    /// Where the controls' maps and links are pinned.
    #[arg(long, default_value = braid_cc::DEFAULT_PIN_DIR)]
    pub pin_dir: PathBuf,
}

#[derive(Args)]
pub struct SetArgs {
    #[command(flatten)]
    pin: PinDir,
    /// braid_frac's growth in thousandths of Reno's, 1..=1000 (100 = virtual RTT x10).
    #[arg(long, conflicts_with = "virtual_rtt")]
    frac_cwnd: Option<u32>,
    /// braid_frac's virtual RTT multiplier m (frac_cwnd = 1000/m).
    #[arg(long)]
    virtual_rtt: Option<f64>,
    /// braid_tcpp's strength k >= 1 (fractions allowed).
    #[arg(long)]
    strength: Option<Strength>,
}

pub fn run(cmd: CcCommand) -> Result<()> {
    match cmd {
        CcCommand::Install(p) => install(&p),
        CcCommand::Status { pin, json } => status(&pin, json),
        CcCommand::Set(a) => set(a),
        CcCommand::Uninstall(p) => {
            let r = braid_cc::uninstall(&p.pin_dir)?;
            if r.unregistered.is_empty() && r.unpinned == 0 {
                braid::outln!(
                    "nothing to remove: braid's controls were not installed in {}",
                    p.pin_dir.display()
                );
            } else {
                braid::outln!(
                    "unregistered {} ({} pins removed)",
                    r.unregistered.join(" "),
                    r.unpinned
                );
            }
            Ok(())
        }
        CcCommand::Trace(a) => trace::trace(a),
        CcCommand::Sink(a) => trace::sink(a),
    }
}

fn install(p: &PinDir) -> Result<()> {
    match braid_cc::install(&p.pin_dir, Defaults::default())? {
        InstallReport::Installed { pin_dir } => {
            braid::outln!("registered {} (pinned in {})", names(), pin_dir.display())
        }
        InstallReport::AlreadyInstalled { pin_dir } => {
            braid::outln!(
                "already installed: {} (pinned in {})",
                names(),
                pin_dir.display()
            )
        }
    }
    Ok(())
}

fn names() -> String {
    Control::ALL.map(|c| c.name()).join(" ")
}

/// Converts a virtual-RTT multiplier m into frac_cwnd = 1000/m.
pub fn frac_from_virtual_rtt(m: f64) -> Result<u32> {
    if !(m.is_finite() && (1.0..=1000.0).contains(&m)) {
        bail!("virtual RTT multiplier {m} is out of range: m must be between 1 and 1000");
    }
    Ok((1000.0 / m).round() as u32)
}

fn set(a: SetArgs) -> Result<()> {
    let controls = Controls::open(&a.pin.pin_dir)?;
    let mut d = controls.defaults()?;
    if a.frac_cwnd.is_none() && a.virtual_rtt.is_none() && a.strength.is_none() {
        bail!("nothing to set: give --frac-cwnd, --virtual-rtt or --strength");
    }
    if let Some(f) = a.frac_cwnd {
        d.frac_cwnd = f;
    }
    if let Some(m) = a.virtual_rtt {
        d.frac_cwnd = frac_from_virtual_rtt(m)?;
    }
    if let Some(k) = a.strength {
        d.strength = k;
    }
    controls.set_defaults(d)?;
    braid::outln!(
        "defaults: frac_cwnd {} (virtual RTT x{:.4}), strength k {}",
        d.frac_cwnd,
        1000.0 / d.frac_cwnd as f64,
        d.strength
    );
    Ok(())
}

#[derive(Serialize)]
struct ControlStatus {
    name: &'static str,
    pinned: bool,
    registered: bool,
    allowed: bool,
    summary: &'static str,
}

#[derive(Serialize)]
struct Status {
    pin_dir: PathBuf,
    installed: bool,
    controls: Vec<ControlStatus>,
    defaults: Option<Defaults>,
    /// Windows found out of bounds and put back since the install.
    repaired_windows: Option<u32>,
    groups: Vec<braid_cc::GroupInfo>,
}

fn status(p: &PinDir, json: bool) -> Result<()> {
    // The pins and maps are root's to read: a user is told what the kernel's
    // lists say, and that the rest needs root, not an error.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let available = braid_cc::available_controls()?;
    let allowed = braid_cc::allowed_controls()?;
    let pinned = braid_cc::installed_controls(&p.pin_dir);
    let controls: Vec<ControlStatus> = Control::ALL
        .iter()
        .map(|c| ControlStatus {
            name: c.name(),
            pinned: pinned.contains(c),
            registered: available.iter().any(|a| a == c.name()),
            allowed: allowed.iter().any(|a| a == c.name()),
            summary: c.summary(),
        })
        .collect();
    let installed = controls.iter().all(|c| c.registered && (c.pinned || !root));
    let (defaults, repaired_windows, groups) = if pinned.is_empty() || !root {
        (None, None, Vec::new())
    } else {
        let ctl = Controls::open(&p.pin_dir).context("reading the pinned maps")?;
        (
            Some(ctl.defaults()?),
            Some(ctl.repaired_windows()?),
            ctl.groups()?,
        )
    };
    let st = Status {
        pin_dir: p.pin_dir.clone(),
        installed,
        controls,
        defaults,
        repaired_windows,
        groups,
    };
    if json {
        braid::outln!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(());
    }
    let state = if st.installed && !root {
        "installed (registered; their pins and settings are root's to read)"
    } else if st.installed {
        "installed"
    } else if pinned.is_empty() {
        "not installed (run `braid cc install` as root)"
    } else {
        "partly installed (run `braid cc install` again)"
    };
    braid::outln!(
        "braid congestion controls: {state}; pins in {}",
        st.pin_dir.display()
    );
    for c in &st.controls {
        let flag = |b: bool, yes: &'static str, no: &'static str| if b { yes } else { no };
        braid::outln!(
            "  {:<12} {:<14} {:<11} {}",
            c.name,
            flag(c.registered, "registered", "unregistered"),
            flag(c.allowed, "allowed", "restricted"),
            c.summary
        );
    }
    if let Some(d) = st.defaults {
        braid::outln!(
            "defaults: frac_cwnd {} (virtual RTT x{:.4}), strength k {}",
            d.frac_cwnd,
            1000.0 / d.frac_cwnd as f64,
            d.strength
        );
    }
    if let Some(n) = st.repaired_windows.filter(|n| *n > 0) {
        braid::outln!("windows out of bounds put back: {n} (see bpf/math/reno.h)");
    }
    if !root && st.installed {
        braid::outln!("TCP-P groups and settings: run as root to read them");
    } else if st.groups.is_empty() {
        braid::outln!("TCP-P groups: none");
    } else {
        braid::outln!("TCP-P groups:");
        for g in &st.groups {
            braid::outln!(
                "  {:<24} netns {:<6} N={:<3} k={:<5} cwnd sum {:<7} reductions {:<6} guarded {}",
                g.key.to_string(),
                g.netns,
                g.members,
                g.strength.to_string(),
                g.cwnd_sum,
                g.reductions,
                g.guarded
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_rtt_maps_to_frac_cwnd() {
        assert_eq!(frac_from_virtual_rtt(10.0).unwrap(), 100);
        assert_eq!(frac_from_virtual_rtt(100.0).unwrap(), 10);
        assert_eq!(frac_from_virtual_rtt(1.0).unwrap(), 1000);
        assert!(frac_from_virtual_rtt(0.5)
            .unwrap_err()
            .to_string()
            .contains("between 1 and 1000"));
        assert!(frac_from_virtual_rtt(f64::NAN).is_err());
    }
}
