//! `braid plan`: what each mode would move on a path, the knee, and the
//! mode to use. The path is given (`--rate --rtt --loss`) or probed through
//! a `braid serve`: one stream, then several, a few seconds each.

use std::path::PathBuf;
use std::time::Duration;

use braid::path::advice::{advise, PathFacts};
use braid::path::model::{measured_knee, Response, C_RANDOM};
use braid::records::Summary;
use braid::records::{self, Plan};
use braid::session::client::{self, Config};
use braid::session::SocketOptions;
use braid::telemetry::Output;
use braid::{target, Error, Result};
use braid_link::spec::{parse_prob, parse_rate, parse_time};
use braid_wire::{Kind, Mode, SessionParams};
use clap::Args;

#[derive(Args)]
pub struct PlanArgs {
    /// A braid serve to probe, HOST[:PORT]; leave it out to plan from --rate, --rtt and --loss.
    host: Option<String>,
    /// The path's rate, as tc writes rates (100mbit).
    #[arg(long, value_parser = parse_rate, requires_all = ["rtt", "loss"], conflicts_with = "host")]
    rate: Option<u64>,
    /// The round-trip time (68ms).
    #[arg(long, value_parser = parse_time)]
    rtt: Option<u64>,
    /// Loss that is not congestion, per packet (1e-5, or 0.001%).
    #[arg(long, value_parser = parse_prob)]
    loss: Option<f64>,
    /// The control of the streams to plan (and probe) for: cubic (what auto's streams run), reno or bbr.
    #[arg(long, default_value = "cubic", value_parser = ["cubic", "reno", "bbr"])]
    cc: String,
    /// TCP payload per packet, bytes.
    #[arg(long, default_value_t = 1448)]
    mss: u32,
    /// Mathis' constant (Reno's window, and CUBIC's Reno-friendly floor): 1.30 under random loss, 1.22 periodic.
    #[arg(long, default_value_t = C_RANDOM)]
    mathis_c: f64,
    /// Seconds of each probe.
    #[arg(short = 't', long, default_value_t = 3.0)]
    time: f64,
    /// The most streams a probe uses (probes go 1, 4, 16, ... while the aggregate grows).
    #[arg(long, default_value_t = 16)]
    max_streams: u16,
    /// One JSON line (a `plan` record).
    #[arg(long)]
    json: bool,
    /// A file holding the token (default: $BRAID_TOKEN).
    #[arg(long)]
    token_file: Option<PathBuf>,
}

/// One probe: `streams` streams of `--cc` under `braid bench` for `seconds`.
fn probe(host: &str, args: &PlanArgs, streams: u16) -> Result<Summary> {
    let remote = target::parse(host, false).map_err(Error::Usage)?;
    let token = crate::transfer::token(&args.token_file)?.ok_or_else(|| {
        Error::Usage(
            "no token: set BRAID_TOKEN or pass --token-file (braid serve prints one)".into(),
        )
    })?;
    let cfg = Config {
        target: remote.addr,
        token,
        params: SessionParams {
            kind: Kind::Bench,
            mode: if streams == 1 {
                Mode::Single
            } else {
                Mode::Parallel
            },
            streams,
            cc: args.cc.clone(),
            frac_cwnd: 100,
            strength_milli: 1000,
            duration_ms: (args.time * 1000.0).round() as u32,
            block_size: 1 << 20,
            flags: 0,
            limit_bps: 0,
        },
        sock: SocketOptions::default(),
        pin_dir: braid_cc::DEFAULT_PIN_DIR.into(),
        output: Output::Quiet,
        interval: Duration::from_secs(1),
        limit_bps: None,
        cancel: crate::transfer::cancel(),
        steer: None,
        plain: false,
        sync: Default::default(),
    };
    client::bench(&cfg)
}

/// The path from probes of 1, 4, 16 ... streams, until the aggregate grows
/// by less than a fifth or `--max-streams`: the smallest RTT any stream saw,
/// the lone stream's retransmitted share of its segments as the loss (its
/// losses are the path's, not a crowd's), and as the rate the best aggregate
/// (a lower bound of the path's).
fn probed(host: &str, a: &PlanArgs) -> Result<(PathFacts, String)> {
    let one = probe(host, a, 1)?;
    let mut points = vec![(1u32, one.mbps)];
    let mut rtt_us = one
        .streams
        .iter()
        .map(|s| s.min_rtt_us)
        .filter(|r| *r > 0)
        .min();
    let mut n = 4u16;
    while n <= a.max_streams {
        let s = probe(host, a, n)?;
        let best = points.iter().map(|p| p.1).fold(0.0, f64::max);
        points.push((n as u32, s.mbps));
        rtt_us = rtt_us
            .into_iter()
            .chain(s.streams.iter().map(|s| s.min_rtt_us).filter(|r| *r > 0))
            .min();
        if s.mbps < 1.2 * best {
            break;
        }
        n = n.saturating_mul(4);
    }
    let rtt_us = rtt_us.ok_or_else(|| Error::Protocol("the probes saw no RTT".into()))?;
    let loss = if one.data_segs_out > 0 {
        one.retransmits as f64 / one.data_segs_out as f64
    } else {
        0.0
    };
    let rate = points.iter().map(|p| p.1).fold(0.0, f64::max) * 1e6;
    let knee = measured_knee(&points, 0.9).unwrap_or(1);
    let seen: Vec<String> = points
        .iter()
        .map(|(n, m)| format!("{n}: {m:.1} Mb/s"))
        .collect();
    let note = format!(
        "probed {host} ({} s each): {}; the lone stream sent {} of {} segments again; min RTT {:.1} ms; \
         measured knee (90 % of the best): {knee} stream(s)",
        a.time,
        seen.join(", "),
        one.retransmits,
        one.data_segs_out,
        rtt_us as f64 / 1000.0,
    );
    Ok((
        PathFacts {
            rate_bps: rate,
            rtt_s: rtt_us as f64 / 1e6,
            loss,
            mss_bytes: a.mss as f64,
            measured: true,
            measured_knee: Some(knee),
        },
        note,
    ))
}

pub fn run(a: PlanArgs) -> Result<()> {
    if !(a.mathis_c.is_finite() && a.mathis_c > 0.0) {
        return Err(Error::Usage("--mathis-c must be above 0".into()));
    }
    let (path, note) =
        match (&a.host, a.rate, a.rtt, a.loss) {
            (Some(h), _, _, _) => {
                if !(a.time.is_finite() && a.time > 0.0 && a.time <= 600.0) {
                    return Err(Error::Usage("-t must be in (0, 600] seconds".into()));
                }
                let (p, note) = probed(h, &a)?;
                (p, Some(note))
            }
            (None, Some(rate), Some(rtt), Some(loss)) if rate > 0 && rtt > 0 => (
                PathFacts {
                    rate_bps: rate as f64,
                    rtt_s: rtt as f64 / 1e9,
                    loss,
                    mss_bytes: a.mss as f64,
                    measured: false,
                    measured_knee: None,
                },
                None,
            ),
            (None, Some(_), Some(_), Some(_)) => {
                return Err(Error::Usage("--rate and --rtt must be above 0".into()))
            }
            _ => return Err(Error::Usage(
                "give a braid serve to probe (HOST[:PORT]) or the path: --rate, --rtt and --loss"
                    .into(),
            )),
        };
    let control = Response::of(&a.cc).expect("clap keeps --cc to the controls modelled");
    let plan = advise(&path, control, a.mathis_c);
    if a.json {
        records::print(&plan);
    } else {
        print_plan(&plan, note.as_deref());
    }
    Ok(())
}

fn print_plan(p: &Plan, note: Option<&str>) {
    if let Some(n) = note {
        braid::outln!("{n}");
    }
    braid::outln!(
        "path: {:.1} Mb/s{}, RTT {:.1} ms, loss {:.1e}, MSS {} B ({})",
        p.rate_bps / 1e6,
        if p.measured { " or more" } else { "" },
        p.rtt_s * 1000.0,
        p.loss,
        p.mss,
        if p.measured { "probed" } else { "given" }
    );
    match p.one_stream_bps {
        Some(b) => braid::outln!(
            "one {} stream ({}): {:.1} Mb/s; the knee: {} stream(s)",
            p.control,
            match p.control.as_str() {
                "cubic" => format!("RFC 9438's response, Reno-friendly at C = {:.2}", p.c),
                _ => format!("Mathis, C = {:.2}", p.c),
            },
            b / 1e6,
            p.knee
        ),
        None => braid::outln!(
            "one {} stream is not held back by this loss; the knee: {} stream(s)",
            p.control,
            p.knee
        ),
    }
    braid::outln!("  {:<28} {:>7} {:>15}", "mode", "streams", "predicted Mb/s");
    for m in &p.modes {
        braid::outln!(
            "  {:<28} {:>7} {:>15.1}",
            m.mode,
            m.streams,
            m.predicted_bps / 1e6
        );
    }
    braid::outln!(
        "recommended: --mode {} -n {}\n  because {}",
        p.recommend_mode,
        p.recommend_streams,
        p.reason
    );
}
