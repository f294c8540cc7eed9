//! braid's congestion controls in the running kernel.
//!
//! The controls themselves are eBPF `tcp_congestion_ops` (bpf/braid_cc.bpf.c);
//! this crate registers them ([`install`]), pins them under
//! [`DEFAULT_PIN_DIR`] so they outlive the loader, and lets a program choose a
//! socket's control and its per-socket settings ([`Controls::apply`]). A
//! socket without settings uses the defaults, so `iperf3 -C braid_frac` works
//! as it is.

mod controls;
mod error;
mod install;
pub mod native;
mod settings;
mod skel;
mod sysctl;
mod tcpinfo;

#[cfg(test)]
mod math;

pub use controls::Control;
pub use error::{Error, Result};
pub use install::{install, installed_controls, uninstall, InstallReport, UninstallReport};
pub use settings::{
    check_frac_cwnd, congestion_control, max_pacing_rate, set_congestion_control,
    set_max_pacing_rate, Controls, Defaults, GroupInfo, GroupKey, SocketSettings, Strength,
};
pub use sysctl::{allowed_controls, available_controls};
pub use tcpinfo::{tcp_info, TcpInfo};

/// Where `braid cc install` pins the maps and struct_ops links.
pub const DEFAULT_PIN_DIR: &str = "/sys/fs/bpf/braid";

/// Whether every braid control is registered with the kernel (the list is
/// global, the same in every network namespace).
pub fn installed_in_kernel() -> bool {
    available_controls()
        .map(|a| Control::ALL.iter().all(|c| a.iter().any(|x| x == c.name())))
        .unwrap_or(false)
}
