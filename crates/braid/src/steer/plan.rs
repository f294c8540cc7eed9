//! What a session's mode means for each stream: its congestion control and
//! braid-cc settings. Whichever end sends data applies this to its sockets.

use braid_cc::{SocketSettings, Strength};
use braid_wire::{Kind, Mode, SessionParams};

use crate::proto::steer::StreamControl;

/// At most this many streams per session.
pub const MAX_STREAMS: u16 = 256;
/// Block sizes the engine accepts.
pub const BLOCK_SIZES: std::ops::RangeInclusive<u32> = 4096..=64 << 20;

/// The mode as reports name it: `parallel-9`, `combined-4`, `single`.
pub fn mode_name(p: &SessionParams) -> String {
    match p.mode {
        Mode::Single => "single".into(),
        Mode::Parallel => format!("parallel-{}", p.streams),
        Mode::Combined => format!("combined-{}", p.streams),
        Mode::Tcpp => format!("tcpp-{}", p.streams),
        Mode::Auto => format!("auto-{}", p.streams),
        Mode::Falcon => format!("falcon-{}", p.streams),
    }
}

/// Checks what a client asks for; the message names the bad field.
pub fn check(p: &SessionParams) -> Result<(), String> {
    if p.streams == 0 || p.streams > MAX_STREAMS {
        return Err(format!(
            "{} streams is out of range: 1..={MAX_STREAMS}",
            p.streams
        ));
    }
    if !BLOCK_SIZES.contains(&p.block_size) {
        return Err(format!(
            "block size {} is out of range: {}..={} bytes",
            p.block_size,
            BLOCK_SIZES.start(),
            BLOCK_SIZES.end()
        ));
    }
    if !crate::files::treehash::valid_block_size(p.block_size) {
        return Err(format!(
            "block size {} is not a power of two (each block is a subtree of the file's BLAKE3)",
            p.block_size
        ));
    }
    if p.kind == Kind::Bench && p.duration_ms == 0 {
        return Err("a bench needs a duration above 0".into());
    }
    if !p.cc.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') || p.cc.len() > 15 {
        return Err(format!("{:?} is not a congestion control name", p.cc));
    }
    match p.mode {
        Mode::Single if p.streams != 1 => {
            Err(format!("single mode is one stream, not {}", p.streams))
        }
        Mode::Combined => braid_cc::check_frac_cwnd(p.frac_cwnd as u32)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Mode::Tcpp => Strength::from_milli(p.strength_milli)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        // Auto's fair share: ordinary flows' worth, or none (it yields entirely).
        Mode::Auto if p.strength_milli == 0 => Ok(()),
        Mode::Auto => Strength::from_milli(p.strength_milli)
            .map(|_| ())
            .map_err(|_| fair_share_range(p.strength_milli as f64 / 1000.0)),
        _ => Ok(()),
    }
}

/// The streams a session starts with: a Falcon search starts at one and
/// auto at a few, and both grow; every other mode starts with all it asked for.
pub fn initial_streams(p: &SessionParams) -> usize {
    match p.mode {
        Mode::Falcon => 1,
        Mode::Auto => crate::steer::auto::first_streams(p.streams as usize, fair_streams(p)),
        _ => p.streams as usize,
    }
}

/// Auto's streams while others share the path: `--fair-share` ordinary flows,
/// whole; none where it is 0 (the group yields entirely).
pub fn fair_streams(p: &SessionParams) -> usize {
    match p.strength_milli {
        0 => 0,
        k => ((k as f64 / 1000.0).round() as usize).max(1),
    }
}

/// What a fair share out of range is told: the two kinds it may be.
pub fn fair_share_range(k: f64) -> String {
    format!(
        "fair share {k} is out of range: 0 (yield entirely to others) or from 1 to {} ordinary flows",
        Strength::MAX.as_f64()
    )
}

/// Every stream's control for a session whose TCP-P group is `group`.
pub fn stream_controls(p: &SessionParams, group: u64) -> Vec<StreamControl> {
    let named = |cc: &str, settings| StreamControl {
        cc: Some(cc.to_owned()),
        settings,
    };
    (0..p.streams)
        .map(|i| match p.mode {
            // Auto's streams are ordinary ones too: its steer sets how many
            // carry and caps their rate, which needs nothing of braid's.
            Mode::Single | Mode::Parallel | Mode::Falcon | Mode::Auto if p.cc.is_empty() => {
                StreamControl {
                    cc: None,
                    settings: SocketSettings::default(),
                }
            }
            Mode::Single | Mode::Parallel | Mode::Falcon | Mode::Auto => {
                named(&p.cc, SocketSettings::default())
            }
            // Hacker 2004: stream 0 is an ordinary Reno flow, the others grow
            // as if their RTT were m times longer.
            Mode::Combined if i == 0 => named("reno", SocketSettings::default()),
            Mode::Combined => named(
                "braid_frac",
                SocketSettings {
                    frac_cwnd: Some(p.frac_cwnd as u32),
                    ..SocketSettings::default()
                },
            ),
            Mode::Tcpp => named(
                "braid_tcpp",
                SocketSettings {
                    strength: Some(Strength::from_milli(p.strength_milli).unwrap_or(Strength::ONE)),
                    group_id: Some(group),
                    ..SocketSettings::default()
                },
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(mode: Mode, streams: u16) -> SessionParams {
        SessionParams {
            kind: Kind::Bench,
            mode,
            streams,
            cc: String::new(),
            frac_cwnd: 100,
            strength_milli: 1000,
            duration_ms: 1000,
            block_size: 1 << 20,
            flags: 0,
            limit_bps: 0,
        }
    }

    #[test]
    fn combined_is_one_reno_and_fractional_rest() {
        let c = stream_controls(&params(Mode::Combined, 3), 7);
        assert_eq!(c[0].cc.as_deref(), Some("reno"));
        assert_eq!(c[0].settings, SocketSettings::default());
        for s in &c[1..] {
            assert_eq!(s.cc.as_deref(), Some("braid_frac"));
            assert_eq!(s.settings.frac_cwnd, Some(100));
        }
    }

    #[test]
    fn tcpp_streams_share_the_session_group() {
        let mut p = params(Mode::Tcpp, 4);
        p.strength_milli = 2500;
        let c = stream_controls(&p, 99);
        assert!(c.iter().all(|s| s.cc.as_deref() == Some("braid_tcpp")
            && s.settings.group_id == Some(99)
            && s.settings.strength.map(|k| k.milli()) == Some(2500)));
    }

    #[test]
    fn parallel_uses_the_named_control_or_the_default() {
        let mut p = params(Mode::Parallel, 2);
        assert!(stream_controls(&p, 0).iter().all(|s| s.cc.is_none()));
        p.cc = "cubic".into();
        assert!(stream_controls(&p, 0)
            .iter()
            .all(|s| s.cc.as_deref() == Some("cubic")));
    }

    #[test]
    fn bad_parameters_are_named() {
        assert!(check(&params(Mode::Single, 2))
            .unwrap_err()
            .contains("single mode"));
        assert!(check(&params(Mode::Parallel, 0))
            .unwrap_err()
            .contains("streams"));
        let mut p = params(Mode::Combined, 5);
        p.frac_cwnd = 0;
        assert!(check(&p).unwrap_err().contains("frac_cwnd"));
        let mut p = params(Mode::Tcpp, 5);
        p.strength_milli = 500;
        assert!(check(&p).unwrap_err().contains("strength"));
        p.strength_milli = 0;
        assert!(check(&p).unwrap_err().contains("strength"));
        // Auto's fair share may be none (it yields entirely), else one flow's worth or more.
        let mut p = params(Mode::Auto, 32);
        p.strength_milli = 0;
        assert!(check(&p).is_ok());
        assert_eq!(fair_streams(&p), 0);
        assert_eq!(initial_streams(&p), 2);
        p.strength_milli = 500;
        let e = check(&p).unwrap_err();
        assert!(
            e.contains("fair share 0.5") && e.contains("yield entirely"),
            "{e}"
        );
        p.strength_milli = 2400;
        assert!(check(&p).is_ok());
        assert_eq!(fair_streams(&p), 2);
        let mut p = params(Mode::Parallel, 5);
        p.cc = "re no".into();
        assert!(check(&p).unwrap_err().contains("congestion control"));
        p.cc = "reno".into();
        p.block_size = 12;
        assert!(check(&p).unwrap_err().contains("block size"));
        p.block_size = 3 << 20;
        assert!(check(&p).unwrap_err().contains("power of two"));
        assert!(check(&params(Mode::Tcpp, 9)).is_ok());
    }
}
