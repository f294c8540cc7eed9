//! braid-link: forwards every frame between two interfaces through an
//! emulated bottleneck, one pipeline per direction (see lib.rs).
//!
//! It runs in a router namespace between two veths, reading and writing
//! whole Ethernet frames with AF_PACKET sockets; offloads must be off on
//! both veths so that a frame is a packet. Counters go to --stats (JSON) on
//! exit and on SIGUSR1; the per-packet event log to --events (CSV) on exit.

mod afpacket;
mod clock;
mod ring;

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use braid_link::direction::Counters;
use braid_link::{hist::Hist, spec, wake::Wake, Direction, Event};
use clap::Parser;
use serde_json::json;

use afpacket::Port;
use clock::{cpu_time_ns, now_ns};

/// Frames read from one port before serving the other (fairness between directions).
const BATCH: usize = 64;

#[derive(Parser)]
#[command(
    name = "braid-link",
    version,
    about = "User-space bottleneck link emulator"
)]
struct Args {
    /// First interface.
    #[arg(long)]
    a: String,
    /// Second interface.
    #[arg(long)]
    b: String,
    /// The link from a to b, in netem's words, e.g. "rate 100mbit delay 34ms limit 300 loss 0.01%".
    #[arg(long, default_value = "")]
    ab: String,
    /// The link from b to a.
    #[arg(long, default_value = "")]
    ba: String,
    /// Write counters as JSON here on exit and on SIGUSR1.
    #[arg(long)]
    stats: Option<PathBuf>,
    /// Keep a per-packet event log and write it as CSV here on exit.
    #[arg(long)]
    events: Option<PathBuf>,
    /// Pin to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Each port's receive ring, in MiB: what it holds is what arrives while
    /// braid-link is off its core (64 MiB: 50 ms of 9000-byte frames at
    /// 10 Gb/s, 0.5 s of 1500-byte frames at 1 Gb/s).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    ring_mib: u32,
    /// Poll rather than sleep when the next frame is due sooner than this
    /// machine reliably wakes from a timed sleep (the 99th percentile of the
    /// oversleeps braid-link measures): frames leave on time where the
    /// machine wakes late, at the cost of a core while frames are due often.
    #[arg(long)]
    busy_wait: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);
static DUMP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

extern "C" fn on_dump(_: libc::c_int) {
    DUMP.store(true, Ordering::Relaxed);
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("braid-link: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<()> {
    let ab = spec::parse(&args.ab)
        .map_err(anyhow::Error::msg)
        .context("--ab")?;
    let ba = spec::parse(&args.ba)
        .map_err(anyhow::Error::msg)
        .context("--ba")?;
    if args.a == args.b {
        bail!(
            "--a and --b are both {}: the link needs two interfaces",
            args.a
        );
    }
    let log = args.events.is_some();
    let mut dirs = [
        Direction::<Vec<u8>>::new(ab, log),
        Direction::<Vec<u8>>::new(ba, log),
    ];
    let ring = args.ring_mib as usize * (1 << 20);
    let mut ports = [Port::open(&args.a, ring)?, Port::open(&args.b, ring)?];

    // SAFETY: plain syscalls with valid arguments; the handlers only store atomics.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGUSR1, on_dump as *const () as libc::sighandler_t);
    }
    if let Some(cpu) = args.cpu {
        pin(cpu)?;
    }
    let started = now_ns();
    let deadline = args
        .duration
        .map(|s| started + Duration::from_secs_f64(s).as_nanos() as u64);
    let mut pool: Vec<Vec<u8>> = (0..4096)
        .map(|_| Vec::with_capacity(afpacket::FRAME_MAX))
        .collect();
    let mut tx_errors = [0u64; 2];
    // Buffers the receive rings' frames are copied into (refilled from the
    // pool) and frames due out, sent with one sendmmsg a direction.
    let mut rx: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
    let mut tx: Vec<Vec<u8>> = Vec::with_capacity(4 * BATCH);
    let mut cpu_start = cpu_time_ns();
    let mut wake = Wake::default();

    while !STOP.load(Ordering::Relaxed) {
        let now = now_ns();
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
        for (i, port) in ports.iter_mut().enumerate() {
            while rx.len() < BATCH {
                rx.push(
                    pool.pop()
                        .unwrap_or_else(|| Vec::with_capacity(afpacket::FRAME_MAX)),
                );
            }
            let got = port.recv_batch(&mut rx);
            // The batch waited in the ring together: one clock reading
            // stamps it (the frames' reads were as far from their arrivals).
            let at = now_ns();
            for buf in rx.drain(..got) {
                if let Err(back) = dirs[i].arrive(at, buf) {
                    pool.push(back);
                }
            }
        }
        for (i, dir) in dirs.iter_mut().enumerate() {
            let now = now_ns();
            while let Some(frame) = dir.pop(now) {
                tx.push(frame);
            }
            if !tx.is_empty() {
                tx_errors[i] += ports[1 - i].send_batch(&tx);
                pool.append(&mut tx);
            }
        }
        if DUMP.swap(false, Ordering::Relaxed) {
            write_stats(
                &args,
                &dirs,
                &ports,
                tx_errors,
                started,
                cpu_time_ns() - cpu_start,
                &wake,
            )?;
        }
        let due = dirs.iter().filter_map(|d| d.next_wakeup()).min();
        let now = now_ns();
        let sleep = match due.map(|d| d.saturating_sub(now)) {
            None => None,
            Some(0) => continue,
            Some(d) if args.busy_wait => match wake.sleep_for(d) {
                Some(s) => Some(s),
                None => continue,
            },
            Some(d) => Some(d),
        };
        // A sleep that ran its course measures how late the machine woke;
        // one a frame cut short does not.
        if afpacket::wait(&ports, sleep) == 0 {
            if let Some(s) = sleep {
                wake.record(now_ns().saturating_sub(now + s));
            }
        }
    }
    cpu_start = cpu_time_ns() - cpu_start;
    write_stats(&args, &dirs, &ports, tx_errors, started, cpu_start, &wake)?;
    if let Some(path) = &args.events {
        write_events(path, &dirs)?;
    }
    Ok(())
}

fn pin(cpu: usize) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            bail!("pinning to CPU {cpu}: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// One direction's counters, with the kernel's drops and the ring of `rx`,
/// the port its frames arrive on (a->b reads from a).
fn direction_json(c: &Counters, tx_errors: u64, rx: &Port) -> Result<serde_json::Value> {
    let drops = rx
        .kernel_drops()
        .with_context(|| format!("reading {}'s drop counter", rx.name))?;
    let (slots, bytes) = rx.ring_size();
    Ok(json!({
        "counters": c,
        "tx_errors": tx_errors,
        "rx_kernel_drops": drops,
        "rx_truncated": rx.truncated(),
        "rx_ring": {"slots": slots, "bytes": bytes},
        "late_ns": quantiles(&c.late),
        // Delay before the pipeline saw a frame (the loop was busy or not
        // scheduled): added to the spec's, and invisible in late_ns.
        "ring_wait_ns": quantiles(rx.ring_wait()),
    }))
}

/// A histogram's median, 99th percentile and largest value, as the stats print them.
fn quantiles(h: &Hist) -> serde_json::Value {
    json!({"p50": h.quantile(0.5), "p99": h.quantile(0.99), "max": h.quantile(1.0)})
}

fn write_stats(
    args: &Args,
    dirs: &[Direction<Vec<u8>>; 2],
    ports: &[Port; 2],
    tx: [u64; 2],
    started: u64,
    cpu_ns: u64,
    wake: &Wake,
) -> Result<()> {
    let wall = now_ns() - started;
    let mut wake_json = quantiles(wake.hist());
    wake_json["margin"] = json!(wake.margin());
    let v = json!({
        "version": 1,
        "a": args.a, "b": args.b, "ab_spec": args.ab, "ba_spec": args.ba,
        "seconds": wall as f64 / 1e9,
        "cpu_seconds": cpu_ns as f64 / 1e9,
        "ab": direction_json(dirs[0].counters(), tx[0], &ports[0])?,
        "ba": direction_json(dirs[1].counters(), tx[1], &ports[1])?,
        // How late timed sleeps ended: what a frame due after one waits
        // beyond its time, unless --busy-wait polls instead.
        "wake_late_ns": wake_json,
        "busy_wait": args.busy_wait,
    });
    let text = serde_json::to_string_pretty(&v)? + "\n";
    match &args.stats {
        Some(path) => {
            // Write beside, then rename: a reader never sees half a file.
            let tmp = path.with_extension("tmp");
            fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
            fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
        }
        None => print!("{text}"),
    }
    Ok(())
}

fn write_events(path: &PathBuf, dirs: &[Direction<Vec<u8>>; 2]) -> Result<()> {
    let mut out = std::io::BufWriter::new(
        fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    writeln!(
        out,
        "direction,event,t_ns,len,queue_ns,total_ns,reason,avg_bytes"
    )?;
    for (name, d) in ["ab", "ba"].iter().zip(dirs) {
        for e in d.events() {
            match e {
                Event::Arrive {
                    t_ns,
                    len,
                    avg_bytes,
                } => writeln!(out, "{name},arrive,{t_ns},{len},,,,{avg_bytes}")?,
                Event::Depart {
                    t_ns,
                    len,
                    queue_ns,
                    total_ns,
                } => writeln!(out, "{name},depart,{t_ns},{len},{queue_ns},{total_ns},,")?,
                Event::Drop { t_ns, len, reason } => writeln!(
                    out,
                    "{name},drop,{t_ns},{len},,,{},",
                    serde_json::to_value(reason)?.as_str().unwrap_or("?")
                )?,
            }
        }
    }
    out.flush()?;
    Ok(())
}
