//! The congestion controls braid adds to the kernel.

use std::fmt;
use std::str::FromStr;

/// One of braid's eBPF congestion controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Control {
    /// Scalable TCP (Kelly 2003).
    Stcp,
    /// HighSpeed TCP (RFC 3649).
    Hstcp,
    /// H-TCP (Leith & Shorten).
    Htcp,
    /// Fractional stream of Combined Parallel TCP (Hacker, Noble, Athey 2004).
    Frac,
    /// TCP-P group member (Cho & Bettati).
    Tcpp,
}

impl Control {
    /// Every control, in registration order.
    pub const ALL: [Control; 5] = [
        Control::Stcp,
        Control::Hstcp,
        Control::Htcp,
        Control::Frac,
        Control::Tcpp,
    ];

    /// The name the kernel knows it by (`TCP_CONGESTION`, sysctls, `iperf3 -C`).
    pub fn name(self) -> &'static str {
        match self {
            Control::Stcp => "braid_stcp",
            Control::Hstcp => "braid_hstcp",
            Control::Htcp => "braid_htcp",
            Control::Frac => "braid_frac",
            Control::Tcpp => "braid_tcpp",
        }
    }

    /// One line for `braid cc status`.
    pub fn summary(self) -> &'static str {
        match self {
            Control::Stcp => "Scalable TCP: +0.01 packet per ACK above 100 packets, x0.875 on loss",
            Control::Hstcp => "HighSpeed TCP: RFC 3649 a(w)/b(w) above 38 packets",
            Control::Htcp => "H-TCP: alpha from time since congestion, adaptive beta in [0.5, 0.8]",
            Control::Frac => "fractional stream: Reno growing at frac_cwnd/1000, Reno's halving",
            Control::Tcpp => "TCP-P: a group of N flows that behaves like k TCP flows",
        }
    }
}

impl fmt::Display for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Control {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Control::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                format!(
                    "{s:?} is not one of braid's controls ({})",
                    names().join(", ")
                )
            })
    }
}

pub(crate) fn names() -> Vec<&'static str> {
    Control::ALL.iter().map(|c| c.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_fit_the_kernel_limit() {
        for c in Control::ALL {
            assert_eq!(c.name().parse::<Control>().unwrap(), c);
            // TCP_CA_NAME_MAX is 16 including the NUL.
            assert!(c.name().len() <= 15, "{c}");
        }
        assert!("cubic"
            .parse::<Control>()
            .unwrap_err()
            .contains("braid_frac"));
    }
}
