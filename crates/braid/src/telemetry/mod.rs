//! What a session reports while it runs and when it ends: every stream's
//! TCP_INFO on an interval, as JSON lines (`--json`) or a live display.
//!
//! The JSON lines (`interval`, `event`, `summary`) are `records`.

pub mod looks;

use std::io::{IsTerminal, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use braid_cc::TcpInfo;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use self::looks::LookPlan;
use crate::path::dispersion::Dispersion;
use crate::records::{self, Interval, StreamSample, StreamSummary, Summary};

/// How a session reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Json,
    /// A progress line (updated in place on a terminal) and a summary.
    Human,
    /// As `Human`, with a line per stream at each interval.
    Verbose,
    Quiet,
}

impl Output {
    /// Whether a person reads it: progress, notes and a summary in words.
    pub fn human(self) -> bool {
        matches!(self, Output::Human | Output::Verbose)
    }
}

/// Streams a session may have at most (the engine's limit).
const ROOM: usize = crate::steer::plan::MAX_STREAMS as usize;

/// One stream, across its reconnections.
#[derive(Default)]
struct Slot {
    socket: Option<TcpStream>,
    cc: String,
    /// TCP_INFO totals of connections this stream had before the current one.
    retired_retrans: u64,
    retired_segs: u64,
    /// The current connection's latest TCP_INFO; with no connection, the
    /// last one's (its counts already in `retired_*`), or nothing.
    last: TcpInfo,
    connections: u32,
    /// The current connection was asked to pace itself (`pace_connections`).
    paced: bool,
}

impl Slot {
    /// Keeps the current connection's counts and lets the connection go.
    fn retire(&mut self) {
        if let Some(old) = self.socket.take() {
            let info = braid_cc::tcp_info(old.as_fd()).unwrap_or(self.last);
            self.retired_retrans += info.total_retrans as u64;
            self.retired_segs += info.data_segs_out as u64;
            self.last = info;
        }
    }

    /// Retransmits and segments over every connection the stream had.
    fn totals(&self, info: &TcpInfo) -> (u64, u64) {
        if self.socket.is_none() {
            (self.retired_retrans, self.retired_segs)
        } else {
            (
                self.retired_retrans + info.total_retrans as u64,
                self.retired_segs + info.data_segs_out as u64,
            )
        }
    }
}

/// Shared between a session's stream workers and its sampler.
pub struct Telemetry {
    /// Room for every stream a session may have; streams may join it.
    slots: Mutex<Vec<Slot>>,
    /// Streams reported: those the session began with, and any that joined.
    shown: AtomicUsize,
    /// Payload bytes moved per stream (sent or received by this end).
    pub bytes: Vec<AtomicU64>,
    pub start: Instant,
    /// Bytes the whole session will move, when known (for the ETA).
    pub expected: AtomicU64,
    output: Output,
    stop: AtomicBool,
    /// The progress line kept in place on a terminal; None where stderr is a
    /// file or a pipe, which get a line per interval instead.
    bar: Option<ProgressBar>,
    /// When the receiving end's streams' bytes arrived (their reads stamp it).
    pub arrivals: Arc<Mutex<Dispersion>>,
    /// The path's bottleneck, payload bytes a second (0 while unknown): the
    /// receiving end's latest estimate, or at the sending end the receiver's
    /// latest word.
    bottleneck: AtomicU64,
    /// CPU time a steer spent on this end's streams (its ticks and looks,
    /// their TCP_INFO reads and what they asked), ns; u64::MAX while no
    /// steer ran.
    steer_cpu_ns: AtomicU64,
    /// A steer's looks between its ticks, taken by the streams' senders.
    looks: LookPlan<(u64, TcpInfo)>,
}

/// How a report says how a session was sealed: an unsealed one in words
/// nobody can miss.
pub fn sealed_words(suite: &str) -> String {
    if suite == braid_wire::seal::Suite::Plain.name() {
        "NOT SEALED (--plain: anyone on the path could read and change it)".into()
    } else {
        format!("sealed ({suite})")
    }
}

impl Telemetry {
    pub fn new(streams: usize, output: Output) -> Arc<Self> {
        let start = Instant::now();
        Arc::new(Telemetry {
            slots: Mutex::new((0..ROOM).map(|_| Slot::default()).collect()),
            shown: AtomicUsize::new(streams.min(ROOM)),
            bytes: (0..ROOM).map(|_| AtomicU64::new(0)).collect(),
            start,
            expected: AtomicU64::new(0),
            output,
            stop: AtomicBool::new(false),
            bar: (output.human() && std::io::stderr().is_terminal()).then(progress_bar),
            arrivals: Arc::new(Mutex::new(Dispersion::new())),
            bottleneck: AtomicU64::new(0),
            steer_cpu_ns: AtomicU64::new(u64::MAX),
            looks: LookPlan::new(start, ROOM),
        })
    }

    /// Counts a steer's CPU time on this thread since `from` (a
    /// [`thread_cpu`] reading taken before its wait, where the steer is
    /// what woke the thread: the wake is its cost too). What steering
    /// costs, apart from the transfer it steers, where the whole process's
    /// time is too noisy to show it.
    pub fn steered_since(&self, from: Duration) {
        let spent = thread_cpu().saturating_sub(from).as_nanos() as u64;
        // The first count turns "no steer" into a count.
        let _ = self
            .steer_cpu_ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(if n == u64::MAX { spent } else { n + spent })
            });
    }

    /// The CPU seconds [`Telemetry::steered_since`] counted; None if no steer ran.
    pub fn steer_cpu_seconds(&self) -> Option<f64> {
        let n = self.steer_cpu_ns.load(Ordering::Relaxed);
        (n != u64::MAX).then(|| (n as f64 / 1e3).round() / 1e6)
    }

    /// The bottleneck as the arrivals at this (receiving) end show it now,
    /// payload bytes a second, kept as this end's word; none until they
    /// show it.
    pub fn measure_bottleneck(&self) -> Option<u64> {
        let b = self.arrivals.lock().ok()?.estimate()? as u64;
        self.set_bottleneck(b);
        Some(b)
    }

    /// This end's own estimate of the bottleneck.
    fn set_bottleneck(&self, bytes_per_sec: u64) {
        self.bottleneck.store(bytes_per_sec, Ordering::Relaxed);
    }

    /// The receiving end's word on the bottleneck, heard at the sending end:
    /// kept if it is a rate the receiver could have measured
    /// (`dispersion::plausible`), else refused, and the word before it stands.
    pub fn hear_bottleneck(&self, bytes_per_sec: u64) -> Result<(), String> {
        if !crate::path::dispersion::plausible(bytes_per_sec) {
            return Err(format!(
                "the receiver's word on the bottleneck, {bytes_per_sec} bytes a second, \
                 is no rate it could have measured; ignored"
            ));
        }
        self.set_bottleneck(bytes_per_sec);
        Ok(())
    }

    /// The bottleneck, payload bytes a second, if this end knows it.
    pub fn bottleneck(&self) -> Option<u64> {
        Some(self.bottleneck.load(Ordering::Relaxed)).filter(|&b| b > 0)
    }

    fn bottleneck_mbps(&self) -> Option<f64> {
        self.bottleneck().map(|b| round3(b as f64 * 8.0 / 1e6))
    }

    /// A stream's (new) connection, sampled from now on.
    pub fn set_socket(&self, stream: usize, socket: &TcpStream) {
        let mut slots = self.slots.lock().unwrap();
        self.shown.fetch_max(stream + 1, Ordering::Relaxed);
        let s = &mut slots[stream];
        s.retire();
        s.cc = braid_cc::congestion_control(socket.as_fd()).unwrap_or_default();
        s.socket = socket.try_clone().ok();
        s.last = TcpInfo::default();
        s.connections += 1;
        s.paced = false;
    }

    /// Asks every stream's connection that was not asked yet to be paced
    /// by the kernel at TCP's own rate, with no cap (SO_MAX_PACING_RATE):
    /// a steer that paces its streams (`Steer::paces`). A socket that
    /// refuses is left as it is and not asked again.
    pub fn pace_connections(&self) {
        let mut slots = self.slots.lock().unwrap();
        for s in slots.iter_mut().filter(|s| !s.paced) {
            if let Some(k) = &s.socket {
                let _ = braid_cc::set_max_pacing_rate(k.as_fd(), None);
                s.paced = true;
            }
        }
    }

    /// Lets go of stream `stream`'s connection when the stream is done with
    /// it (it left the session, or the connection ended), keeping its counts.
    /// Held here, the socket would outlive the stream's own handles: the
    /// connection would not close, the peer would see no end, and a socket
    /// of a TCP-P group would stay a member of it until the session ended.
    pub fn release(&self, stream: usize) {
        if let Some(s) = self.slots.lock().unwrap().get_mut(stream) {
            s.retire();
        }
    }

    /// Runs `f` on stream `stream`'s current connection, if it has one, and
    /// reads its control's name again (`f` may have changed it).
    pub fn with_socket<R>(&self, stream: usize, f: impl FnOnce(&TcpStream) -> R) -> Option<R> {
        let mut slots = self.slots.lock().unwrap();
        let s = slots.get_mut(stream)?;
        let k = s.socket.as_ref()?;
        let r = f(k);
        s.cc = braid_cc::congestion_control(k.as_fd()).unwrap_or_default();
        Some(r)
    }

    /// Every stream's bytes and, where it has a connection, its TCP_INFO now.
    pub fn views(&self) -> Vec<(u64, Option<TcpInfo>)> {
        let slots = self.slots.lock().unwrap();
        slots[..self.shown.load(Ordering::Relaxed)]
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let info = s
                    .socket
                    .as_ref()
                    .and_then(|k| braid_cc::tcp_info(k.as_fd()).ok());
                (self.bytes[i].load(Ordering::Relaxed), info)
            })
            .collect()
    }

    /// Asks the streams' senders for a steer's looks between its ticks:
    /// from the first, one every interval, until the next tick (`until`);
    /// None asks for none.
    pub fn plan_looks(&self, looks: Option<(Instant, Duration)>, until: Instant) {
        self.looks.plan(looks, until);
    }

    /// Takes the steer's look at stream `stream` (its bytes and TCP_INFO)
    /// if one is due: its sender calls it between its writes, with its
    /// connection's `socket`. What the look costs is the steer's.
    pub fn look_if_due(&self, stream: usize, socket: &TcpStream) {
        let mut from = None;
        if self.looks.take_if_due(stream, || {
            from = Some(thread_cpu());
            let info = braid_cc::tcp_info(socket.as_fd()).ok()?;
            Some((self.bytes[stream].load(Ordering::Relaxed), info))
        }) {
            if let Some(f) = from {
                self.steered_since(f);
            }
        }
    }

    /// The looks the senders took since the last call, oldest first: when,
    /// which stream, its bytes and TCP_INFO.
    pub fn looks_taken(&self) -> Vec<(Instant, usize, (u64, TcpInfo))> {
        self.looks.take()
    }

    /// Runs `f` on every stream's current connection.
    pub fn for_each_socket(&self, mut f: impl FnMut(&TcpStream)) {
        for s in self.slots.lock().unwrap().iter() {
            if let Some(k) = &s.socket {
                f(k);
            }
        }
    }

    pub fn add(&self, stream: usize, n: u64) {
        self.bytes[stream].fetch_add(n, Ordering::Relaxed);
    }

    pub fn total(&self) -> u64 {
        self.bytes.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    fn sample(&self) -> Vec<(u64, TcpInfo)> {
        let mut slots = self.slots.lock().unwrap();
        let shown = self.shown.load(Ordering::Relaxed);
        slots[..shown]
            .iter_mut()
            .enumerate()
            .map(|(i, s)| {
                if let Some(info) = s
                    .socket
                    .as_ref()
                    .and_then(|k| braid_cc::tcp_info(k.as_fd()).ok())
                {
                    s.last = info;
                }
                (self.bytes[i].load(Ordering::Relaxed), s.last)
            })
            .collect()
    }

    /// Runs the interval reports until [`Telemetry::finish`].
    pub fn spawn_sampler(self: &Arc<Self>, interval: Duration) -> thread::JoinHandle<()> {
        let t = Arc::clone(self);
        thread::spawn(move || {
            let mut prev: Vec<u64> = vec![0; t.bytes.len()];
            let mut prev_t = 0.0;
            let mut next = t.start + interval;
            while !t.stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now < next {
                    thread::sleep((next - now).min(Duration::from_millis(50)));
                    continue;
                }
                next += interval;
                let el = t.start.elapsed().as_secs_f64();
                let samples = t.sample();
                let dt = (el - prev_t).max(1e-9);
                let cur: Vec<u64> = samples.iter().map(|s| s.0).collect();
                t.report(el, dt, &prev, &samples);
                prev = cur;
                // A stream that joins later starts from zero.
                prev.resize(t.bytes.len(), 0);
                prev_t = el;
            }
        })
    }

    fn report(&self, t: f64, dt: f64, prev: &[u64], samples: &[(u64, TcpInfo)]) {
        let total: u64 = samples.iter().map(|s| s.0).sum();
        let delta: u64 = samples
            .iter()
            .zip(prev)
            .map(|(s, p)| s.0.saturating_sub(*p))
            .sum();
        match self.output {
            Output::Quiet => {}
            Output::Json => {
                let streams = samples
                    .iter()
                    .zip(prev)
                    .enumerate()
                    .map(|(i, ((b, info), p))| StreamSample {
                        stream: i,
                        bytes: *b,
                        mbps: mbps(b.saturating_sub(*p), dt),
                        cwnd: info.cwnd,
                        ssthresh: info.ssthresh,
                        srtt_us: info.srtt_us,
                        rttvar_us: info.rttvar_us,
                        retransmits: info.total_retrans,
                        lost: info.lost,
                        delivery_rate: info.delivery_rate,
                        bytes_acked: info.bytes_acked,
                        busy_us: info.busy_us,
                        rwnd_limited_us: info.rwnd_limited_us,
                        sndbuf_limited_us: info.sndbuf_limited_us,
                    })
                    .collect();
                records::print(&Interval {
                    t: round3(t),
                    bytes: total,
                    mbps: mbps(delta, dt),
                    bottleneck_mbps: self.bottleneck_mbps(),
                    streams,
                });
            }
            Output::Human | Output::Verbose => {
                let expected = self.expected.load(Ordering::Relaxed);
                let line = progress_line(t, total, expected, mbps(delta, dt));
                let streams: Vec<String> = if self.output == Output::Verbose {
                    samples
                        .iter()
                        .zip(prev)
                        .enumerate()
                        .map(|(i, ((b, info), p))| {
                            format!(
                                "  stream {i:>3}: {:>12}  cwnd {:>5}  srtt {:>7.1} ms  retrans {}",
                                human_rate(mbps(b.saturating_sub(*p), dt)),
                                info.cwnd,
                                info.srtt_us as f64 / 1000.0,
                                info.total_retrans
                            )
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                match &self.bar {
                    // A session that ended has cleared its line for the summary.
                    Some(_) if self.stop.load(Ordering::Relaxed) => {}
                    Some(bar) => {
                        if expected > 0 {
                            if bar.length() != Some(expected) {
                                bar.set_style(bar_style("[{bar:24}] {msg}"));
                                bar.set_length(expected);
                            }
                            bar.set_position(total.min(expected));
                        }
                        for s in &streams {
                            bar.println(s);
                        }
                        bar.set_message(line);
                    }
                    None => {
                        let mut err = std::io::stderr().lock();
                        crate::console::settle(writeln!(err, "{line}"));
                        for s in &streams {
                            crate::console::settle(writeln!(err, "{s}"));
                        }
                    }
                }
            }
        }
    }

    /// Stops the sampler and builds the summary from every stream's last TCP_INFO.
    pub fn finish(&self, kind: &'static str, role: &'static str, mode: String) -> Summary {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let seconds = self.start.elapsed().as_secs_f64();
        let samples = self.sample();
        let slots = self.slots.lock().unwrap();
        let streams: Vec<StreamSummary> = samples
            .iter()
            .zip(slots.iter())
            .enumerate()
            .map(|(i, ((b, info), s))| {
                let (retransmits, data_segs_out) = s.totals(info);
                StreamSummary {
                    stream: i,
                    cc: s.cc.clone(),
                    bytes: *b,
                    mbps: mbps(*b, seconds),
                    retransmits,
                    data_segs_out,
                    connections: s.connections,
                    cwnd: info.cwnd,
                    srtt_us: info.srtt_us,
                    min_rtt_us: info.min_rtt_us,
                }
            })
            .collect();
        let bytes = streams.iter().map(|s| s.bytes).sum();
        let retransmits = streams.iter().map(|s| s.retransmits).sum();
        let data_segs_out = streams.iter().map(|s| s.data_segs_out).sum();
        Summary {
            kind,
            role,
            mode,
            seconds: round3(seconds),
            bytes,
            mbps: mbps(bytes, seconds),
            peer_bytes: None,
            retransmits,
            data_segs_out,
            loss_ratio: loss_ratio(retransmits, data_segs_out),
            cpu_seconds: round3(cpu_seconds()),
            steer_cpu_seconds: self.steer_cpu_seconds(),
            files: 0,
            requeued_blocks: 0,
            windows_repaired: None,
            sealed: "",
            bottleneck_mbps: self.bottleneck_mbps(),
            streams,
            transfer: None,
        }
    }
}

pub fn mbps(bytes: u64, seconds: f64) -> f64 {
    if seconds <= 0.0 {
        return 0.0;
    }
    round3(bytes as f64 * 8.0 / seconds / 1e6)
}

pub fn loss_ratio(retransmits: u64, segs: u64) -> f64 {
    if segs == 0 {
        0.0
    } else {
        (retransmits as f64 / segs as f64 * 1e6).round() / 1e6
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The line a terminal keeps in place: the words of [`progress_line`],
/// after a bar once the session's size is known (a bench has none).
fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(bar_style("{msg}"));
    bar
}

fn bar_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("a fixed template parses")
        .progress_chars("=> ")
}

/// "12.0 s  1.20 GB  800.0 Mb/s  45 %  ETA 14 s" (percentage and ETA when the total is known).
pub fn progress_line(t: f64, done: u64, expected: u64, rate_mbps: f64) -> String {
    let mut s = format!(
        "{t:>7.1} s  {:>10}  {:>12}",
        human_bytes(done),
        human_rate(rate_mbps)
    );
    if expected > 0 {
        let pct = done as f64 / expected as f64 * 100.0;
        s += &format!("  {pct:>5.1} %");
        if rate_mbps > 0.0 && done < expected {
            let eta = (expected - done) as f64 * 8.0 / (rate_mbps * 1e6);
            s += &format!("  ETA {eta:.0} s");
        }
    }
    s
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1000.0 && u < UNITS.len() - 1 {
        x /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{x:.2} {}", UNITS[u])
    }
}

/// A rate for people: "812.4 Mb/s", "105.86 Gb/s" (from 10 Gb/s on, where
/// five digits of Mb/s stop being read at a glance).
pub fn human_rate(mbps: f64) -> String {
    if mbps >= 10_000.0 {
        format!("{:.2} Gb/s", mbps / 1000.0)
    } else {
        format!("{mbps:.1} Mb/s")
    }
}

/// CPU time of this process, user and system.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time of the calling thread, user and system.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the struct we pass and nothing else.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steers_cpu_time_is_its_own_work_only() {
        let t = Telemetry::new(1, Output::Quiet);
        assert_eq!(t.steer_cpu_seconds(), None, "no steer ran");
        assert_eq!(
            t.finish("bench", "sender", "auto".into()).steer_cpu_seconds,
            None
        );
        // Work outside the steer is not counted; the steer's is.
        let spin = |d: Duration| {
            let start = thread_cpu();
            while thread_cpu() - start < d {
                std::hint::black_box(0u64);
            }
        };
        spin(Duration::from_millis(30));
        for _ in 0..2 {
            let from = thread_cpu();
            spin(Duration::from_millis(5));
            t.steered_since(from);
        }
        // Time asleep is no CPU time.
        let from = thread_cpu();
        thread::sleep(Duration::from_millis(20));
        t.steered_since(from);
        let s = t.steer_cpu_seconds().expect("a steer ran");
        assert!(
            (0.010..0.025).contains(&s),
            "{s} s counted for 10 ms of steering"
        );
        assert_eq!(
            t.finish("bench", "sender", "auto".into()).steer_cpu_seconds,
            Some(s)
        );
    }

    #[test]
    fn rates_are_scaled_for_reading() {
        assert_eq!(human_rate(812.44), "812.4 Mb/s");
        assert_eq!(human_rate(9999.9), "9999.9 Mb/s");
        assert_eq!(human_rate(105_857.9), "105.86 Gb/s");
    }

    #[test]
    fn progress_shows_percent_and_eta_when_the_total_is_known() {
        let s = progress_line(2.0, 500_000_000, 1_000_000_000, 400.0);
        assert!(
            s.contains("500.00 MB") && s.contains("50.0 %") && s.contains("ETA 10 s"),
            "{s}"
        );
        assert!(!progress_line(2.0, 5, 0, 1.0).contains('%'));
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1_500_000), "1.50 MB");
    }

    #[test]
    fn rates_and_ratios() {
        assert_eq!(mbps(125_000_000, 1.0), 1000.0);
        assert_eq!(mbps(1, 0.0), 0.0);
        assert_eq!(loss_ratio(5, 1000), 0.005);
        assert_eq!(loss_ratio(5, 0), 0.0);
    }

    #[test]
    fn a_receivers_word_no_link_could_carry_is_refused_and_the_last_good_one_stands() {
        let t = Telemetry::new(1, Output::Quiet);
        assert_eq!(t.bottleneck(), None);
        t.hear_bottleneck(12_500_000).unwrap();
        assert_eq!(t.bottleneck(), Some(12_500_000));
        for bad in [0, 10, u64::MAX] {
            let why = t.hear_bottleneck(bad).unwrap_err();
            assert!(why.contains(&bad.to_string()), "{why}");
            assert_eq!(t.bottleneck(), Some(12_500_000), "after {bad}");
        }
    }

    #[test]
    fn summary_sums_streams_and_counts_bytes() {
        let t = Telemetry::new(2, Output::Quiet);
        t.add(0, 100);
        t.add(1, 50);
        let s = t.finish("bench", "sender", "parallel".into());
        assert_eq!(s.bytes, 150);
        assert_eq!(s.streams.len(), 2);
        assert_eq!(s.streams[1].bytes, 50);
        let v: serde_json::Value = serde_json::from_str(&crate::records::line(&s)).unwrap();
        assert_eq!(v["type"], "summary");
        assert_eq!(v["version"], crate::records::VERSION);
    }

    #[test]
    fn every_connection_of_a_stream_is_paced_once_asked_and_a_new_one_again() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let first = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t = Telemetry::new(2, Output::Quiet);
        t.set_socket(0, &first);
        let cap = |s: &TcpStream| braid_cc::max_pacing_rate(s.as_fd()).unwrap();
        assert_eq!(cap(&first), u64::MAX, "not paced before it is asked");
        t.pace_connections();
        assert_eq!(cap(&first), u64::MAX - 1, "paced with no cap");
        // A cap the steer sets later is not undone by the next ask.
        t.with_socket(0, |s| braid_cc::set_max_pacing_rate(s.as_fd(), Some(1000)));
        t.pace_connections();
        assert_eq!(cap(&first), 1000);
        // The stream's new connection, and a second stream's, are paced at the next ask.
        let again = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let other = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        t.set_socket(0, &again);
        t.set_socket(1, &other);
        assert_eq!(cap(&again), u64::MAX);
        t.pace_connections();
        assert_eq!((cap(&again), cap(&other)), (u64::MAX - 1, u64::MAX - 1));
    }

    #[test]
    fn a_released_connection_closes_and_its_counts_are_kept_once() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut ours = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut theirs, _) = l.accept().unwrap();
        let t = Telemetry::new(1, Output::Quiet);
        t.set_socket(0, &ours);
        ours.write_all(&[7; 5000]).unwrap();
        let mut got = vec![0; 5000];
        theirs.read_exact(&mut got).unwrap();
        drop(ours);
        t.release(0);
        // Telemetry held the last handle: the peer sees the end now.
        theirs
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(theirs.read(&mut got).unwrap(), 0, "the connection closed");
        assert!(t.views()[0].1.is_none(), "no connection is sampled");
        let s = t.finish("bench", "sender", "parallel".into());
        let segs = s.streams[0].data_segs_out;
        assert!(
            segs >= 1,
            "the released connection's segments count: {segs}"
        );
        // Released again, or sampled again, nothing is counted twice.
        t.release(0);
        assert_eq!(t.finish("bench", "sender", "p".into()).data_segs_out, segs);
    }
}
