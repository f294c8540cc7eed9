//! The link's configuration in netem's words, one string per direction:
//!
//! ```text
//! rate 100mbit delay 34ms limit 300 loss random 0.01%
//! rate 10mbit delay 50ms 5ms red limit 400000 min 30000 max 90000 avpkt 1000 probability 0.1 bandwidth 10mbit gentle
//! delay 34ms loss gemodel 1% 25% 100% 0% loss-at dequeue seed 7
//! ```
//!
//! rate: bit, kbit, mbit, gbit (bits per second, as tc) or Mb/s, MB/s
//! (bits, bytes); tc's ambiguous kbps/mbps are refused. Times: ns, us, ms, s. Sizes: bytes, with an
//! optional k, m (x1000) suffix. Probabilities: a fraction (0.01) or a
//! percentage (1%).

use crate::direction::{Config, Limit, LossAt, QueueKind};
use crate::loss::Loss;
use crate::red::RedParams;
use crate::trace::DeliveryTrace;

/// Parses a rate into bits per second: "100mbit", "1gbit", "100Mb/s",
/// "12.5MB/s".
///
/// Bits are `bit`, `kbit`, `mbit`, `gbit`, `tbit` (any case) or `b/s`,
/// `kb/s`, `Mb/s`, `Gb/s`, `Tb/s` (a lower-case b); bytes are `B/s`, `kB/s`,
/// `MB/s`, `GB/s` (an upper-case B). tc's `bps`, `kbps`, `mbps`, `gbps` mean
/// bytes there and bits to most readers, so they are refused with both
/// readings spelled out: a limit read the other way is eight times off.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    for suffix in ["tbps", "gbps", "mbps", "kbps", "bps"] {
        if let Some(num) = lower.strip_suffix(suffix) {
            let p = &suffix[..suffix.len() - 3];
            return Err(format!(
                "rate {s:?} is ambiguous: tc reads {suffix} as bytes per second, most people as \
                 bits; write {num}{p}bit for bits per second or {num}{P}B/s for bytes",
                P = p.to_ascii_uppercase()
            ));
        }
    }
    let prefix = |c: &str| -> Option<f64> {
        match c {
            "" => Some(1.0),
            "k" | "K" => Some(1e3),
            "m" | "M" => Some(1e6),
            "g" | "G" => Some(1e9),
            "t" | "T" => Some(1e12),
            _ => None,
        }
    };
    // Each unit: the text it ends (`bit` in any case, `b/s` and `B/s` as
    // written), and bits per unit. The number and the unit's prefix letter
    // come before it.
    let units: [(&str, &str, f64); 3] = [(&lower, "bit", 1.0), (t, "b/s", 1.0), (t, "B/s", 8.0)];
    let split = units.iter().find_map(|(text, unit, bits)| {
        let (num, p) = split_prefix(text.strip_suffix(unit)?);
        prefix(p).map(|m| (num.to_string(), m * bits))
    });
    let Some((num, mult)) = split else {
        return Err(format!(
            "rate {s:?} needs a unit: kbit, mbit, gbit (or kb/s, Mb/s, Gb/s) for bits per \
             second, kB/s, MB/s, GB/s for bytes"
        ));
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("rate {s:?}: {num:?} is not a number"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("rate {s:?} must be positive"));
    }
    let bits = v * mult;
    if bits >= u64::MAX as f64 {
        return Err(format!("rate {s:?} is too large"));
    }
    Ok(bits.round() as u64)
}

/// Splits "12.5M" into ("12.5", "M"): the unit's prefix is the one letter
/// after the number, if it is not part of the number.
fn split_prefix(head: &str) -> (&str, &str) {
    match head.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&head[..i], &head[i..]),
        _ => (head, ""),
    }
}

/// Parses a time into nanoseconds: "34ms", "500us", "1.5s", "100ns".
pub fn parse_time(s: &str) -> Result<u64, String> {
    let l = s.to_ascii_lowercase();
    let units: [(&str, f64); 7] = [
        ("nsec", 1.0),
        ("usec", 1e3),
        ("msec", 1e6),
        ("ns", 1.0),
        ("us", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
    ];
    for (suffix, mult) in units {
        if let Some(num) = l.strip_suffix(suffix) {
            let v: f64 = num
                .parse()
                .map_err(|_| format!("time {s:?}: {num:?} is not a number"))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("time {s:?} must not be negative"));
            }
            return Ok((v * mult).round() as u64);
        }
    }
    Err(format!("time {s:?} needs a unit: ns, us, ms or s"))
}

/// Parses a size in bytes: "1500", "64k", "2m".
pub fn parse_size(s: &str) -> Result<u64, String> {
    let l = s.to_ascii_lowercase();
    let (num, mult) = if let Some(n) = l.strip_suffix('k') {
        (n, 1_000.0)
    } else if let Some(n) = l.strip_suffix('m') {
        (n, 1_000_000.0)
    } else {
        (l.as_str(), 1.0)
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("size {s:?} is not a number of bytes"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("size {s:?} must not be negative"));
    }
    Ok((v * mult).round() as u64)
}

/// Parses a probability: "0.01" or "1%".
pub fn parse_prob(s: &str) -> Result<f64, String> {
    let (num, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("probability {s:?} is not a number"))?;
    let p = v / scale;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("probability {s:?} is outside [0, 1]"));
    }
    Ok(p)
}

struct Tokens<'a> {
    words: Vec<&'a str>,
    at: usize,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Option<&'a str> {
        let w = self.words.get(self.at).copied();
        self.at += 1;
        w
    }
    fn value(&mut self, after: &str) -> Result<&'a str, String> {
        self.next()
            .ok_or_else(|| format!("{after:?} needs a value"))
    }
    /// The next word if it parses as a probability (optional arguments of gemodel/state).
    fn optional_prob(&mut self) -> Result<Option<f64>, String> {
        match self.words.get(self.at) {
            Some(w) if w.trim_end_matches('%').parse::<f64>().is_ok() => {
                self.at += 1;
                parse_prob(w).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// Parses one direction's configuration.
pub fn parse(spec: &str) -> Result<Config, String> {
    let mut cfg = Config::default();
    let mut t = Tokens {
        words: spec.split_whitespace().collect(),
        at: 0,
    };
    while let Some(word) = t.next() {
        match word {
            "rate" => cfg.rate_bps = Some(parse_rate(t.value("rate")?)?),
            "trace" => {
                cfg.trace = Some(std::sync::Arc::new(DeliveryTrace::load(t.value("trace")?)?))
            }
            "delay" => {
                cfg.delay_ns = parse_time(t.value("delay")?)?;
                if let Some(j) = t.words.get(t.at).filter(|w| parse_time(w).is_ok()) {
                    cfg.jitter_ns = parse_time(j)?;
                    t.at += 1;
                }
            }
            "limit" => {
                let v = t.value("limit")?;
                let n: u64 = v
                    .parse()
                    .map_err(|_| format!("limit {v:?} is not a number of packets"))?;
                cfg.queue = QueueKind::DropTail(Limit::Packets(n));
            }
            "limit-bytes" => {
                cfg.queue = QueueKind::DropTail(Limit::Bytes(parse_size(t.value("limit-bytes")?)?))
            }
            "overhead" => {
                let v = t.value("overhead")?;
                cfg.overhead = v
                    .parse()
                    .map_err(|_| format!("overhead {v:?} is not a number of bytes"))?;
            }
            "seed" => {
                let v = t.value("seed")?;
                cfg.seed = v
                    .parse()
                    .map_err(|_| format!("seed {v:?} is not an integer"))?;
            }
            "loss-at" => {
                cfg.loss_at = match t.value("loss-at")? {
                    "enqueue" => LossAt::Enqueue,
                    "dequeue" => LossAt::Dequeue,
                    other => return Err(format!("loss-at {other:?}: say enqueue or dequeue")),
                }
            }
            "loss" => cfg.loss = parse_loss(&mut t)?,
            "red" => cfg.queue = QueueKind::Red(parse_red(&mut t)?),
            other => return Err(format!("unknown word {other:?} in link spec {spec:?}")),
        }
    }
    if cfg.rate_bps.is_some() && cfg.trace.is_some() {
        return Err(format!(
            "link spec {spec:?} gives both rate and trace: the trace is the rate"
        ));
    }
    Ok(cfg)
}

fn parse_loss(t: &mut Tokens<'_>) -> Result<Loss, String> {
    let kind = t.value("loss")?;
    Ok(match kind {
        "random" => Loss::Random {
            p: parse_prob(t.value("loss random")?)?,
        },
        "gemodel" => {
            let p = parse_prob(t.value("loss gemodel")?)?;
            let (r, h, k) = (t.optional_prob()?, t.optional_prob()?, t.optional_prob()?);
            Loss::gemodel(p, r, h, k)
        }
        "state" => {
            let p13 = parse_prob(t.value("loss state")?)?;
            let (a, b, c, d) = (
                t.optional_prob()?,
                t.optional_prob()?,
                t.optional_prob()?,
                t.optional_prob()?,
            );
            Loss::four_state(p13, a, b, c, d)
        }
        "periodic" => {
            let v = t.value("loss periodic")?;
            let every: u64 = v
                .parse()
                .map_err(|_| format!("loss periodic {v:?} is not a packet count"))?;
            if every == 0 {
                return Err("loss periodic 0: every n-th packet needs n >= 1".into());
            }
            Loss::Periodic { every, seen: 0 }
        }
        // netem's shorthand: `loss 1%`
        p => Loss::Random {
            p: parse_prob(p).map_err(|e| {
                format!("loss: {e} (or name a model: random, gemodel, state, periodic)")
            })?,
        },
    })
}

fn parse_red(t: &mut Tokens<'_>) -> Result<RedParams, String> {
    let (mut limit, mut min, mut max, mut avpkt, mut burst, mut prob, mut bw, mut gentle) =
        (None, None, None, None, None, 0.02, None, false);
    while let Some(&w) = t.words.get(t.at) {
        match w {
            "limit" | "min" | "max" | "avpkt" | "burst" | "probability" | "bandwidth" => {
                t.at += 1;
                let v = t.value(w)?;
                match w {
                    "limit" => limit = Some(parse_size(v)?),
                    "min" => min = Some(parse_size(v)?),
                    "max" => max = Some(parse_size(v)?),
                    "avpkt" => avpkt = Some(parse_size(v)?),
                    "burst" => {
                        burst = Some(
                            v.parse::<u64>()
                                .map_err(|_| format!("red burst {v:?} is not a packet count"))?,
                        )
                    }
                    "probability" => prob = parse_prob(v)?,
                    _ => bw = Some(parse_rate(v)?),
                }
            }
            "gentle" => {
                t.at += 1;
                gentle = true;
            }
            "ecn" => return Err("red ecn: braid-link drops, it does not mark".into()),
            _ => break,
        }
    }
    let need = |v: Option<u64>, name: &str| v.ok_or_else(|| format!("red needs {name}"));
    let (min, max, avpkt) = (need(min, "min")?, need(max, "max")?, avpkt.unwrap_or(1000));
    let p = RedParams {
        limit: need(limit, "limit")?,
        min,
        max,
        avpkt,
        burst: burst.unwrap_or_else(|| RedParams::default_burst(min, max, avpkt)),
        probability: prob,
        bandwidth: need(bw, "bandwidth")?,
        gentle,
    };
    p.validate()?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_second_spelled_like_bits_is_refused() {
        // tc's "mbps" is megabytes; a user reads megabits. Either reading
        // taken silently is a limit eight times off.
        for s in ["10mbps", "10Mbps", "5kbps", "1gbps", "800bps"] {
            let e = parse_rate(s).unwrap_err();
            assert!(e.contains("ambiguous"), "{s}: {e}");
            assert!(e.contains("bit") && e.contains("B/s"), "{s}: {e}");
        }
        assert!(parse_rate("10mbps").unwrap_err().contains("10mbit"));
        assert!(parse_rate("10mbps").unwrap_err().contains("10MB/s"));
        for s in ["10", "10mb", "10xbit", "-1mbit", "0gbit", "10 mbit"] {
            assert!(parse_rate(s).is_err(), "{s}");
        }
    }

    #[test]
    fn units() {
        assert_eq!(parse_rate("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1Gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("1250kB/s").unwrap(), 10_000_000);
        assert_eq!(parse_rate("10Mb/s").unwrap(), 10_000_000);
        assert_eq!(parse_rate("10MB/s").unwrap(), 80_000_000);
        assert_eq!(parse_rate("2.5Gb/s").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate("64bit").unwrap(), 64);
        assert_eq!(parse_time("34ms").unwrap(), 34_000_000);
        assert_eq!(parse_time("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_time("250us").unwrap(), 250_000);
        assert_eq!(parse_size("64k").unwrap(), 64_000);
        assert_eq!(parse_prob("1%").unwrap(), 0.01);
        assert_eq!(parse_prob("0.001").unwrap(), 0.001);
    }

    #[test]
    fn a_full_line() {
        let c = parse("rate 100mbit delay 34ms 1ms limit 300 loss random 0.01% seed 9 loss-at dequeue overhead 24").unwrap();
        assert_eq!(c.rate_bps, Some(100_000_000));
        assert_eq!((c.delay_ns, c.jitter_ns), (34_000_000, 1_000_000));
        assert_eq!(c.queue, QueueKind::DropTail(Limit::Packets(300)));
        assert_eq!(c.loss, Loss::Random { p: 0.0001 });
        assert_eq!((c.seed, c.loss_at, c.overhead), (9, LossAt::Dequeue, 24));
    }

    #[test]
    fn netem_loss_models() {
        assert_eq!(parse("loss 1%").unwrap().loss, Loss::Random { p: 0.01 });
        assert_eq!(
            parse("loss gemodel 1% 25%").unwrap().loss,
            Loss::gemodel(0.01, Some(0.25), None, None)
        );
        assert_eq!(
            parse("loss state 1% 30% 20% 50% 0%").unwrap().loss,
            Loss::four_state(0.01, Some(0.3), Some(0.2), Some(0.5), Some(0.0))
        );
        assert_eq!(
            parse("loss periodic 100").unwrap().loss,
            Loss::Periodic {
                every: 100,
                seen: 0
            }
        );
    }

    #[test]
    fn red_with_tc_names() {
        let c = parse("rate 10mbit red limit 400k min 30k max 90k avpkt 1000 probability 0.1 bandwidth 10mbit gentle delay 50ms").unwrap();
        let QueueKind::Red(p) = c.queue else {
            panic!("not red")
        };
        assert_eq!(
            (p.limit, p.min, p.max, p.burst, p.gentle),
            (400_000, 30_000, 90_000, 50, true)
        );
        assert_eq!(c.delay_ns, 50_000_000);
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(parse("rate 100").unwrap_err().contains("unit"));
        assert!(parse("delay").unwrap_err().contains("needs a value"));
        assert!(parse("loss 150%").unwrap_err().contains("outside"));
        assert!(parse("wobble 3").unwrap_err().contains("wobble"));
        assert!(parse("red min 30k max 20k limit 90k bandwidth 1mbit")
            .unwrap_err()
            .contains("min"));
        assert!(parse("red min 1 max 2 limit 9")
            .unwrap_err()
            .contains("bandwidth"));
        assert!(parse("trace /nonexistent/trace")
            .unwrap_err()
            .contains("/nonexistent/trace"));
    }

    #[test]
    fn trace_is_read_from_its_file_and_excludes_rate() {
        let path =
            std::env::temp_dir().join(format!("braid-link-spec-{}.trace", std::process::id()));
        std::fs::write(&path, "1\n2\n").unwrap();
        let p = path.to_str().unwrap();
        let cfg = parse(&format!("trace {p} delay 5ms")).unwrap();
        assert_eq!(cfg.trace.as_ref().unwrap().mean_rate_bps(), 12e6);
        assert!(parse(&format!("rate 10mbit trace {p}"))
            .unwrap_err()
            .contains("both rate and trace"));
        std::fs::remove_file(&path).unwrap();
    }
}
