//! `braid traffic`: the laboratory's cross traffic and probes.
//!
//! - `udp`: a stiff UDP source (constant, the sinusoid of Hacker 2004 Eq. 3,
//!   or Poisson packet arrivals) that never slows down for loss;
//! - `sink`: receives it and reports rate and loss per interval of the
//!   sender's clock, as JSON lines;
//! - `flows`: Poisson arrivals of TCP flows of exponential size, to a
//!   `braid cc sink`;
//! - `ping`: ICMP echo probes every 10 ms with 1440 bytes of data, as the
//!   paper's fping, but in-process: fping falls behind below ~25 ms.
//!
//! The arithmetic lives in crates/braid-traffic; this file is sockets and clocks.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Write};
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use braid_link::spec::{parse_rate, parse_size, parse_time};
use braid_traffic::packet::{Header, Kind, HEADER_LEN};
use braid_traffic::shape::{Schedule, Shape};
use braid_traffic::tally::{Bin, Tally};
use braid_traffic::{icmp, stats};
use clap::{Args, Subcommand};

use braid::records;
use braid::telemetry::round3;
use socket2::{Domain, Protocol, Socket, Type};

#[derive(Subcommand)]
pub enum TrafficCommand {
    /// A stiff UDP source: constant, sinusoidal or Poisson.
    Udp(UdpArgs),
    /// Receive UDP sources; print rate and loss per interval as JSON lines.
    Sink(UdpSinkArgs),
    /// Poisson arrivals of TCP flows of exponential size (to a `braid cc sink`).
    Flows(FlowsArgs),
    /// ICMP echo RTT probes at a fixed interval, in-process.
    Ping(PingArgs),
}

pub fn run(cmd: TrafficCommand) -> Result<()> {
    match cmd {
        TrafficCommand::Udp(a) => udp(a),
        TrafficCommand::Sink(a) => sink(a),
        TrafficCommand::Flows(a) => flows(a),
        TrafficCommand::Ping(a) => ping(a),
    }
}

#[derive(Args)]
pub struct UdpArgs {
    /// The sink, HOST:PORT.
    #[arg(long)]
    to: SocketAddr,
    /// Constant rate of UDP payload, e.g. 12mbit.
    #[arg(long, value_parser = parse_rate, conflicts_with_all = ["sine", "poisson"])]
    rate: Option<u64>,
    /// Hacker 2004 Eq. 3 between MIN and MAX, e.g. 1mbit,10mbit.
    #[arg(long, value_name = "MIN,MAX", conflicts_with = "poisson")]
    sine: Option<String>,
    /// The sinusoid's period (the paper's 10 s).
    #[arg(long, default_value = "10s", value_parser = parse_time)]
    period: u64,
    /// Poisson packet arrivals with this mean rate, e.g. 2mbit.
    #[arg(long, value_parser = parse_rate)]
    poisson: Option<u64>,
    /// UDP payload bytes per packet (the header takes 36 of them).
    #[arg(long, default_value_t = 1440)]
    size: usize,
    /// How long to send, seconds.
    #[arg(short = 't', long, default_value_t = 10.0)]
    seconds: f64,
    /// Seed of the Poisson arrivals.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Flow id carried in every packet, to tell sources apart at one sink.
    #[arg(long, default_value_t = 0)]
    flow: u32,
}

#[derive(Args)]
pub struct UdpSinkArgs {
    /// Address to listen on, HOST:PORT.
    #[arg(long)]
    listen: SocketAddr,
    /// Width of a reporting interval on the sender's clock.
    #[arg(long, default_value = "100ms", value_parser = parse_time)]
    interval: u64,
    /// Exit after this many seconds (default: on SIGTERM or SIGINT).
    #[arg(long)]
    seconds: Option<f64>,
}

#[derive(Args)]
pub struct FlowsArgs {
    /// The TCP sink, HOST:PORT.
    #[arg(long)]
    to: SocketAddr,
    /// Mean offered load, e.g. 2mbit: flows arrive at load / mean size.
    #[arg(long, value_parser = parse_rate)]
    load: u64,
    /// Mean flow size in bytes (exponentially distributed), e.g. 100k.
    #[arg(long, default_value = "100k", value_parser = parse_size)]
    mean_size: u64,
    /// Congestion control of the flows.
    #[arg(long, default_value = "reno")]
    cc: String,
    /// How long to start flows, seconds.
    #[arg(short = 't', long, default_value_t = 10.0)]
    seconds: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
pub struct PingArgs {
    /// The IPv4 address to probe.
    #[arg(long)]
    to: IpAddr,
    /// Time between probes.
    #[arg(long, default_value = "10ms", value_parser = parse_time)]
    interval: u64,
    /// ICMP data bytes per probe (fping -b).
    #[arg(long, default_value_t = 1440)]
    size: usize,
    /// How long to probe, seconds.
    #[arg(short = 't', long, default_value_t = 10.0)]
    seconds: f64,
    /// Print every sample, not only the summary.
    #[arg(long)]
    samples: bool,
}

/// CLOCK_MONOTONIC in nanoseconds: the clock every namespace of one
/// machine shares, and the one the packets' timestamps use.
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the monotonic clock reads `at_ns`.
fn sleep_until(at_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (at_ns / 1_000_000_000) as _,
        tv_nsec: (at_ns % 1_000_000_000) as _,
    };
    // SAFETY: ts is valid; the remaining-time pointer may be null with TIMER_ABSTIME.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// The default 50 us timer slack would bunch a 10 Mb/s source's packets.
fn precise_timers() {
    // SAFETY: plain prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
}

fn positive_seconds(s: f64, what: &str) -> Result<f64> {
    if !(s.is_finite() && s > 0.0) {
        bail!("{what} must be a positive number of seconds, not {s}");
    }
    Ok(s)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGTERM and SIGINT end the run cleanly, with the summary printed.
fn stop_on_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(sig, on_stop as *const () as libc::sighandler_t) };
    }
}

fn udp(a: UdpArgs) -> Result<()> {
    let seconds = positive_seconds(a.seconds, "--seconds")?;
    if a.size < HEADER_LEN || a.size > 65_507 {
        bail!(
            "--size {} is out of range: {HEADER_LEN}..=65507 bytes",
            a.size
        );
    }
    let shape = match (a.rate, &a.sine, a.poisson) {
        (Some(r), None, None) => Shape::Constant { bps: r as f64 },
        (None, Some(s), None) => {
            let (lo, hi) = s
                .split_once(',')
                .with_context(|| format!("--sine {s:?}: expected MIN,MAX such as 1mbit,10mbit"))?;
            let min = parse_rate(lo)
                .or_else(|e| if lo.trim() == "0" { Ok(0) } else { Err(e) })
                .map_err(anyhow::Error::msg)?;
            let max = parse_rate(hi).map_err(anyhow::Error::msg)?;
            Shape::Sine {
                min_bps: min as f64,
                max_bps: max as f64,
                period_s: a.period as f64 / 1e9,
            }
        }
        (None, None, Some(r)) => Shape::Poisson { bps: r as f64 },
        _ => bail!("give one of --rate, --sine or --poisson"),
    };
    let mut schedule = Schedule::new(shape, a.size, a.seed).context("the source's shape")?;

    let sock = Socket::new(Domain::for_address(a.to), Type::DGRAM, Some(Protocol::UDP))
        .context("creating the UDP socket")?;
    sock.set_send_buffer_size(4 << 20)
        .context("sizing the send buffer")?;
    sock.connect(&a.to.into())
        .with_context(|| format!("connecting to {}", a.to))?;
    let sock: UdpSocket = sock.into();
    precise_timers();
    stop_on_signals();

    let mut buf = vec![0u8; a.size];
    let start = now_ns();
    let end = start + (seconds * 1e9) as u64;
    let (mut sent, mut refused, mut worst_late) = (0u64, 0u64, 0u64);
    while !STOP.load(Ordering::Relaxed) {
        let due = start + (schedule.next_departure() * 1e9) as u64;
        if due >= end {
            break;
        }
        sleep_until(due);
        let now = now_ns();
        worst_late = worst_late.max(now - due);
        Header {
            kind: Kind::Data,
            seq: sent,
            start_ns: start,
            sent_ns: now,
            flow: a.flow,
        }
        .encode(&mut buf);
        match sock.send(&buf) {
            Ok(_) => sent += 1,
            // A stiff source does not slow down: a packet the host could not
            // queue is gone, as if the link had dropped it.
            Err(e)
                if matches!(e.kind(), ErrorKind::WouldBlock)
                    || e.raw_os_error() == Some(libc::ENOBUFS)
                    || e.raw_os_error() == Some(libc::ECONNREFUSED) =>
            {
                refused += 1;
                sent += 1;
            }
            Err(e) => return Err(e).with_context(|| format!("sending to {}", a.to)),
        }
    }
    let elapsed = (now_ns() - start) as f64 / 1e9;
    let mut fin = [0u8; HEADER_LEN];
    for _ in 0..5 {
        Header {
            kind: Kind::Fin,
            seq: sent,
            start_ns: start,
            sent_ns: now_ns(),
            flow: a.flow,
        }
        .encode(&mut fin);
        let _ = sock.send(&fin);
        thread::sleep(Duration::from_millis(20));
    }
    records::print(&records::Source {
        flow: a.flow,
        shape: format!("{shape:?}"),
        seconds: round3(elapsed),
        packets: sent,
        bytes: sent * a.size as u64,
        not_sent: refused,
        mbps: round3(sent as f64 * a.size as f64 * 8.0 / elapsed / 1e6),
        due_mbps: round3(shape.bits(elapsed) / elapsed / 1e6),
        worst_late_us: worst_late / 1000,
    });
    Ok(())
}

/// A flow at the sink: where it comes from and the id it carries.
type FlowKey = (SocketAddr, u32);

fn flow_name((from, id): &FlowKey) -> String {
    format!("{from}/{id}")
}

fn bin_json(flow: &FlowKey, interval_ns: u64, b: &Bin) -> String {
    let secs = interval_ns as f64 / 1e9;
    records::line(&records::SinkInterval {
        flow: flow_name(flow),
        t: round3(b.index as f64 * secs),
        packets: b.packets,
        bytes: b.bytes,
        lost: b.lost,
        mbps: b.bytes as f64 * 8.0 / secs / 1e6,
    })
}

fn sink(a: UdpSinkArgs) -> Result<()> {
    if a.interval == 0 {
        bail!("--interval must be positive");
    }
    let deadline = match a.seconds {
        Some(s) => Some(now_ns() + (positive_seconds(s, "--seconds")? * 1e9) as u64),
        None => None,
    };
    let sock = Socket::new(
        Domain::for_address(a.listen),
        Type::DGRAM,
        Some(Protocol::UDP),
    )
    .context("creating the UDP socket")?;
    // A burst from a 100 Mb/s source must not overflow the socket while we print.
    sock.set_recv_buffer_size(16 << 20)
        .context("sizing the receive buffer")?;
    sock.bind(&a.listen.into())
        .with_context(|| format!("binding {}", a.listen))?;
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let sock: UdpSocket = sock.into();
    stop_on_signals();
    braid::errln!("braid traffic sink: listening on {}", sock.local_addr()?);

    let mut flows: BTreeMap<FlowKey, Tally> = BTreeMap::new();
    let mut malformed = 0u64;
    let mut buf = vec![0u8; 65_536];
    let out = std::io::stdout();
    while !STOP.load(Ordering::Relaxed) && deadline.is_none_or(|d| now_ns() < d) {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let h = match Header::decode(&buf[..n]) {
                    Ok(h) => h,
                    Err(_) => {
                        malformed += 1;
                        continue;
                    }
                };
                let key = (from, h.flow);
                let tally = flows.entry(key).or_insert_with(|| Tally::new(a.interval));
                match h.kind {
                    Kind::Data => tally.data(h.seq, h.offset_ns(), n as u64),
                    Kind::Fin => tally.fin(h.seq),
                }
                // Bins a second behind the newest packet will get no more.
                let done = tally.settled(1_000_000_000);
                if !done.is_empty() {
                    let mut o = out.lock();
                    for b in &done {
                        writeln!(o, "{}", bin_json(&key, a.interval, b))?;
                    }
                    o.flush()?;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e).context("receiving"),
        }
    }
    let mut o = out.lock();
    for (key, tally) in flows.iter_mut() {
        for b in tally.drain() {
            writeln!(o, "{}", bin_json(key, a.interval, &b))?;
        }
        let t = tally.totals();
        writeln!(
            o,
            "{}",
            records::line(&records::SinkSummary {
                flow: flow_name(key),
                packets: t.packets,
                bytes: t.bytes,
                lost: t.lost,
                reordered: t.reordered,
                sent: t.sent,
                loss_ratio: t.loss_ratio(),
            })
        )?;
    }
    if malformed > 0 {
        writeln!(
            o,
            "{}",
            records::line(&records::SinkMalformed {
                datagrams: malformed
            })
        )?;
    }
    o.flush()?;
    Ok(())
}

fn flows(a: FlowsArgs) -> Result<()> {
    let seconds = positive_seconds(a.seconds, "--seconds")?;
    if a.mean_size == 0 {
        bail!("--mean-size must be positive");
    }
    // Flow arrivals are a Poisson process: a Schedule of "packets" the size
    // of a mean flow at the offered load.
    let mut arrivals = Schedule::new(
        Shape::Poisson { bps: a.load as f64 },
        a.mean_size as usize,
        a.seed,
    )
    .context("the flows' offered load")?;
    let mut sizes = braid_link::rng::Rng::new(a.seed ^ 0x5eed);
    stop_on_signals();
    let start = now_ns();
    let end = start + (seconds * 1e9) as u64;
    let (done, failed, bytes, fct_us) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let mut started = 0u64;
    let mut handles = Vec::new();
    while !STOP.load(Ordering::Relaxed) {
        let due = start + (arrivals.next_departure() * 1e9) as u64;
        if due >= end {
            break;
        }
        sleep_until(due);
        let size = ((-(1.0 - sizes.unit()).ln()) * a.mean_size as f64)
            .ceil()
            .max(1.0) as u64;
        started += 1;
        let (to, cc) = (a.to, a.cc.clone());
        let (done, failed, bytes, fct_us) =
            (done.clone(), failed.clone(), bytes.clone(), fct_us.clone());
        handles.push(thread::spawn(move || {
            let t0 = now_ns();
            match send_flow(to, &cc, size) {
                Ok(()) => {
                    done.fetch_add(1, Ordering::Relaxed);
                    bytes.fetch_add(size, Ordering::Relaxed);
                    fct_us.fetch_add((now_ns() - t0) / 1000, Ordering::Relaxed);
                }
                Err(e) => {
                    failed.fetch_add(1, Ordering::Relaxed);
                    braid::errln!("braid traffic flows: {e:#}");
                }
            }
        }));
        handles.retain(|h| !h.is_finished());
    }
    for h in handles {
        let _ = h.join();
    }
    let n = done.load(Ordering::Relaxed);
    let elapsed = (now_ns() - start) as f64 / 1e9;
    records::print(&records::Flows {
        started,
        completed: n,
        failed: failed.load(Ordering::Relaxed),
        bytes: bytes.load(Ordering::Relaxed),
        seconds: round3(elapsed),
        offered_mbps: a.load as f64 / 1e6,
        mbps: round3(bytes.load(Ordering::Relaxed) as f64 * 8.0 / elapsed / 1e6),
        mean_completion_ms: if n > 0 {
            round3(fct_us.load(Ordering::Relaxed) as f64 / n as f64 / 1000.0)
        } else {
            0.0
        },
    });
    Ok(())
}

fn send_flow(to: SocketAddr, cc: &str, size: u64) -> Result<()> {
    use std::os::fd::AsFd;
    let sock = Socket::new(Domain::for_address(to), Type::STREAM, None)?;
    braid_cc::set_congestion_control(sock.as_fd(), cc)
        .with_context(|| format!("congestion control {cc:?}"))?;
    sock.connect(&to.into())
        .with_context(|| format!("connecting to {to}"))?;
    let mut s: TcpStream = sock.into();
    let chunk = [0u8; 64 * 1024];
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n])
            .with_context(|| format!("sending to {to}"))?;
        left -= n as u64;
    }
    s.shutdown(std::net::Shutdown::Write)?;
    // Wait for the sink to close: the flow is complete when its bytes are read.
    let mut b = [0u8; 1];
    let _ = std::io::Read::read(&mut s, &mut b);
    Ok(())
}

fn ping(a: PingArgs) -> Result<()> {
    let seconds = positive_seconds(a.seconds, "--seconds")?;
    let IpAddr::V4(_) = a.to else {
        bail!("--to {}: the prober speaks ICMPv4 only", a.to)
    };
    if a.interval == 0 {
        bail!("--interval must be positive");
    }
    if a.size < icmp::MIN_DATA || a.size > 65_000 {
        bail!(
            "--size {} is out of range: {}..=65000 bytes",
            a.size,
            icmp::MIN_DATA
        );
    }
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
        .context("opening a raw ICMP socket (needs root or CAP_NET_RAW)")?;
    sock.set_recv_buffer_size(4 << 20)?;
    let target: SocketAddr = SocketAddr::new(a.to, 0);
    sock.connect(&target.into())
        .with_context(|| format!("addressing {}", a.to))?;
    precise_timers();
    stop_on_signals();

    let ident = (std::process::id() & 0xffff) as u16;
    let mut out_buf = vec![0u8; 8 + a.size];
    let mut in_buf = vec![MaybeUninit::<u8>::uninit(); 65_536];
    let start = now_ns();
    let end = start + (seconds * 1e9) as u64;
    let (mut sent, mut late_sends) = (0u64, 0u64);
    let mut arrivals: Vec<u64> = Vec::new();
    let mut rtts_ms: Vec<f64> = Vec::new();
    let mut next = start;
    let out = std::io::stdout();
    // Replies to the last probes may take a while: listen a second longer.
    while !STOP.load(Ordering::Relaxed) {
        let now = now_ns();
        if next < end && now >= next {
            if now - next >= a.interval {
                late_sends += 1;
            }
            let len = icmp::echo_request(&mut out_buf, ident, sent, now, a.size);
            sock.send(&out_buf[..len])
                .with_context(|| format!("probing {}", a.to))?;
            sent += 1;
            next += a.interval;
            // A short stall (a busy host) is made up by sending the missed
            // probes at once; a long one is skipped rather than sent as a
            // burst that would load the path.
            if now.saturating_sub(next) > 10 * a.interval {
                next = now + a.interval;
            }
            continue;
        }
        let wake = if next < end {
            next
        } else {
            end + 1_000_000_000
        };
        if now >= wake {
            break;
        }
        let timeout_us = ((wake - now) / 1000).max(1);
        sock.set_read_timeout(Some(Duration::from_micros(timeout_us)))?;
        match sock.recv(&mut in_buf) {
            Ok(n) => {
                let at = now_ns();
                // SAFETY: recv initialised the first n bytes.
                let pkt = unsafe { std::slice::from_raw_parts(in_buf.as_ptr() as *const u8, n) };
                if let Some(r) = icmp::parse_reply(pkt, ident) {
                    if r.sent_ns < start || r.sent_ns > at {
                        continue;
                    }
                    let rtt = (at - r.sent_ns) as f64 / 1e6;
                    arrivals.push(r.seq);
                    rtts_ms.push(rtt);
                    if a.samples {
                        writeln!(
                            out.lock(),
                            "{}",
                            records::line(&records::Rtt {
                                seq: r.seq,
                                t: round3((r.sent_ns - start) as f64 / 1e9),
                                rtt_ms: rtt,
                            })
                        )?;
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e).context("receiving replies"),
        }
    }
    let reordered = stats::reordered(&arrivals);
    let mean = if rtts_ms.is_empty() {
        None
    } else {
        Some(round4(rtts_ms.iter().sum::<f64>() / rtts_ms.len() as f64))
    };
    rtts_ms.sort_by(f64::total_cmp);
    let q = |p: f64| stats::quantile(&rtts_ms, p).map(round4);
    records::print(&records::Ping {
        target: a.to.to_string(),
        interval_ms: a.interval as f64 / 1e6,
        size: a.size,
        sent,
        received: rtts_ms.len() as u64,
        lost: sent.saturating_sub(rtts_ms.len() as u64),
        reordered: reordered as u64,
        late_sends,
        min_ms: q(0.0),
        median_ms: q(0.5),
        p99_ms: q(0.99),
        max_ms: q(1.0),
        mean_ms: mean,
    });
    Ok(())
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
