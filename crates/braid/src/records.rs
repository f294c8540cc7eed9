//! Every JSON line braid prints, as typed and versioned records: the one
//! contract between braid and its laboratory. Each line is an object
//! `{"type": T, "version": 6, ...}` whose `type` names one record across all
//! of braid's commands:
//!
//! | type | printed by | when |
//! |---|---|---|
//! | `interval` | `send`, `get`, `bench` with `--json` | every `-i` seconds |
//! | `event` | `send`, `get`, `bench` with `--json` | a stream lost, and dialled again |
//! | `steer` | `send`, `bench` with `--json`, at the sending end in `--mode auto` or `falcon` | at each change of its streams, phase or cap |
//! | `summary` | `send`, `get`, `bench`, `serve` with `--json` | once a session ends |
//! | `source` | `braid traffic udp` | at its end |
//! | `sink_interval` | `braid traffic sink` | per flow and interval of the sender's clock |
//! | `sink_summary` | `braid traffic sink` | per flow, at its end |
//! | `sink_malformed` | `braid traffic sink` | at its end, if datagrams were not braid's |
//! | `flows` | `braid traffic flows` | at its end |
//! | `rtt` | `braid traffic ping --samples` | per reply |
//! | `ping` | `braid traffic ping` | at its end |
//! | `trace_sample` | `braid cc trace` | per stream and interval |
//! | `trace_stream` | `braid cc trace` | per stream, at its end |
//! | `trace_total` | `braid cc trace` | at its end |
//! | `plan` | `braid plan --json` | once |
//! | `item` | `send`, `get` with `--json` | per entry of a `--dry-run` or with `--itemize`, per entry `--delete` removed |
//! | `skipped` | `send` with `--json` | per entry the listing leaves out (a socket, a broken link, ...) |
//! | `error` | `send`, `get`, `bench`, `serve`, `plan` with `--json` | once, when the command fails |
//!
//! `vectors/records.jsonl` holds one line of each, written by this module's
//! test; the laboratory's test parses the same file with its dataclasses
//! (python/braidlab/records.py), so a change on either side that the other
//! does not follow fails a fast test. A change of a record's fields raises
//! [`VERSION`].

use braid_cc::{SocketSettings, TcpInfo};
use serde::Serialize;

pub const VERSION: u32 = 6;

/// A record: its fields, and the `type` it is printed with.
pub trait Record: Serialize {
    const TYPE: &'static str;
}

/// One stream in the final summary.
#[derive(Clone, Debug, Serialize)]
pub struct StreamSummary {
    pub stream: usize,
    pub cc: String,
    pub bytes: u64,
    pub mbps: f64,
    pub retransmits: u64,
    pub data_segs_out: u64,
    pub connections: u32,
    pub cwnd: u32,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
}

/// The last line of `--json` (the `summary` record).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub kind: &'static str,
    /// "sender" or "receiver": which end this report is from.
    pub role: &'static str,
    pub mode: String,
    pub seconds: f64,
    /// Payload bytes this end moved.
    pub bytes: u64,
    pub mbps: f64,
    /// What the peer counted, when it told us.
    pub peer_bytes: Option<u64>,
    pub retransmits: u64,
    pub data_segs_out: u64,
    /// retransmits / data_segs_out (only meaningful on the sending end).
    pub loss_ratio: f64,
    pub cpu_seconds: f64,
    /// Of those, what the steer's ticks and looks took (`--mode auto`,
    /// `falcon`, at the sending end); null where no steer ran.
    pub steer_cpu_seconds: Option<f64>,
    pub files: usize,
    pub requeued_blocks: u64,
    /// Congestion windows braid's controls found out of bounds and put back
    /// during the transfer (sending end with braid's controls only).
    pub windows_repaired: Option<u32>,
    /// How the session's connections were sealed: `aes-256-gcm`,
    /// `chacha20-poly1305`, or `plain` where both ends agreed to no sealing.
    pub sealed: &'static str,
    /// The path's bottleneck, Mb/s of payload, as the receiving end's
    /// arrivals showed it (`path::dispersion`; at the sending end, the
    /// receiver's last word): null until it had enough of them.
    pub bottleneck_mbps: Option<f64>,
    pub streams: Vec<StreamSummary>,
    /// What a send or get did with each file (none for a bench).
    pub transfer: Option<Transfer>,
}

/// What a send or get did with its files, by what the receiver had.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Transfer {
    /// Moved whole.
    pub sent: usize,
    /// Continued from what an earlier session left.
    pub resumed: usize,
    /// Not moved: the receiver had them (same size and time, or with
    /// --checksum the same content).
    pub skipped: usize,
    /// Not moved: newer at the receiver (--update).
    pub kept: usize,
    /// Entries --delete removed at the receiver (or would).
    pub removed: u64,
    /// Nothing was written, moved or removed (--dry-run).
    pub dry_run: bool,
}

/// One entry of a `--dry-run` (what would happen to it), or one that
/// `--delete` removed.
#[derive(Clone, Debug, Serialize)]
pub struct Item {
    pub path: String,
    /// send, resume, skip, keep, dir, link, hardlink or remove.
    pub action: &'static str,
    /// Bytes that would move (send, resume).
    pub bytes: u64,
}

/// A command that failed, with `--json`: the message said on stderr too,
/// and the status the command exits with.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    pub message: String,
    pub exit_code: u8,
}

#[derive(Serialize)]
struct Line<'a, R> {
    #[serde(rename = "type")]
    ty: &'static str,
    version: u32,
    #[serde(flatten)]
    body: &'a R,
}

/// The record as one JSON line (without the newline).
pub fn line<R: Record>(r: &R) -> String {
    serde_json::to_string(&Line {
        ty: R::TYPE,
        version: VERSION,
        body: r,
    })
    .expect("a record serialises")
}

/// Prints the record on stdout as one line.
pub fn print<R: Record>(r: &R) {
    crate::outln!("{}", line(r));
}

/// One stream in an [`Interval`].
#[derive(Clone, Debug, Serialize)]
pub struct StreamSample {
    pub stream: usize,
    /// Payload bytes this end moved on the stream so far.
    pub bytes: u64,
    /// Over the last interval.
    pub mbps: f64,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub srtt_us: u32,
    pub rttvar_us: u32,
    pub retransmits: u32,
    pub lost: u32,
    /// Bytes per second, the kernel's latest sample.
    pub delivery_rate: u64,
    pub bytes_acked: u64,
    /// Time with data in flight, and of it the time the receiver's window and
    /// the sending socket's buffer held the stream, µs over its connection's life.
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
}

/// A session's progress, every interval.
#[derive(Clone, Debug, Serialize)]
pub struct Interval {
    /// Seconds since the session started.
    pub t: f64,
    pub bytes: u64,
    pub mbps: f64,
    /// The path's bottleneck as this end knows it now (see `Summary`).
    pub bottleneck_mbps: Option<f64>,
    pub streams: Vec<StreamSample>,
}

/// A stream lost (its blocks go to the others) or dialled again, or a
/// receiver's word on the bottleneck refused.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// `stream_lost`, `stream_redialled` or `bottleneck_refused`.
    pub event: &'static str,
    pub stream: usize,
    pub reason: String,
}

/// A steer's state each time it changes the streams (`--mode auto`, `--mode falcon`).
#[derive(Clone, Debug, Serialize)]
pub struct Steered {
    /// Seconds since the session's streams started.
    pub t: f64,
    /// Streams carrying data.
    pub streams: usize,
    /// Auto: the TCP-P group's strength k now.
    pub strength: Option<f64>,
    /// Auto: the queueing delay it answered (median sRTT above the smallest RTT seen).
    pub queue_ms: Option<f64>,
    /// Falcon: the utility of the probe that just ended.
    pub utility: Option<f64>,
    /// Auto: whether its latest question found others holding the queue
    /// (null before the first).
    pub shared: Option<bool>,
    /// Auto: the cap its streams' caps add up to, Mb/s (null while uncapped).
    pub share_mbps: Option<f64>,
    /// Auto: its phase (start, grow, full, yield, test, fair).
    pub phase: Option<&'static str>,
    /// Auto: the path's bottleneck it knows, Mb/s of payload (the receiving end's word).
    pub bottleneck_mbps: Option<f64>,
}

/// `braid traffic udp`'s account of what it sent.
#[derive(Clone, Debug, Serialize)]
pub struct Source {
    pub flow: u32,
    pub shape: String,
    pub seconds: f64,
    pub packets: u64,
    pub bytes: u64,
    /// Datagrams the kernel refused (a full socket buffer).
    pub not_sent: u64,
    pub mbps: f64,
    /// What the shape asked for over the same time.
    pub due_mbps: f64,
    pub worst_late_us: u64,
}

/// One flow's interval at the sink, by the sender's clock.
#[derive(Clone, Debug, Serialize)]
pub struct SinkInterval {
    /// `ADDRESS:PORT/FLOW`.
    pub flow: String,
    pub t: f64,
    pub packets: u64,
    pub bytes: u64,
    /// Sequence numbers missing from the interval (negative when late ones arrive).
    pub lost: i64,
    pub mbps: f64,
}

/// One flow at the sink, at its end.
#[derive(Clone, Debug, Serialize)]
pub struct SinkSummary {
    pub flow: String,
    pub packets: u64,
    pub bytes: u64,
    pub lost: u64,
    pub reordered: u64,
    /// What the sender says it sent, once its end marker arrived.
    pub sent: Option<u64>,
    pub loss_ratio: f64,
}

/// Datagrams the sink could not read as braid's.
#[derive(Clone, Debug, Serialize)]
pub struct SinkMalformed {
    pub datagrams: u64,
}

/// `braid traffic flows`' Poisson arrivals, at the end.
#[derive(Clone, Debug, Serialize)]
pub struct Flows {
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub offered_mbps: f64,
    pub mbps: f64,
    pub mean_completion_ms: f64,
}

/// One echo reply.
#[derive(Clone, Debug, Serialize)]
pub struct Rtt {
    pub seq: u64,
    /// When the request left, seconds since the first.
    pub t: f64,
    pub rtt_ms: f64,
}

/// `braid traffic ping`'s summary; the quantiles are absent without replies.
#[derive(Clone, Debug, Serialize)]
pub struct Ping {
    pub target: String,
    pub interval_ms: f64,
    pub size: usize,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub reordered: u64,
    pub late_sends: u64,
    pub min_ms: Option<f64>,
    pub median_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub mean_ms: Option<f64>,
}

/// One stream's TCP_INFO during `braid cc trace`.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSample {
    pub t: f64,
    pub stream: usize,
    /// The control asked for.
    pub cc: String,
    pub info: TcpInfo,
}

/// One stream at the end of `braid cc trace`.
#[derive(Clone, Debug, Serialize)]
pub struct TraceStream {
    pub stream: usize,
    /// The control the kernel reports for the socket.
    pub cc: String,
    /// braid-cc's settings of the socket, if it has its own.
    pub settings: Option<SocketSettings>,
    pub seconds: f64,
    pub bytes_acked: u64,
    pub mbps: f64,
    pub retransmits: u32,
    pub info: TcpInfo,
}

/// All streams at the end of `braid cc trace`.
#[derive(Clone, Debug, Serialize)]
pub struct TraceTotal {
    pub streams: usize,
    pub cc: String,
    pub seconds: f64,
    pub bytes_acked: u64,
    pub mbps: f64,
    pub retransmits: u64,
}

/// One mode's predicted rate in a [`Plan`].
#[derive(Clone, Debug, Serialize)]
pub struct PlanMode {
    /// The mode and its setting as `braid send` takes them (`combined --virtual-rtt 10`).
    pub mode: String,
    pub streams: u32,
    pub predicted_bps: f64,
}

/// What `braid plan` says of a path (see `advice`).
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub rate_bps: f64,
    pub rtt_s: f64,
    /// Packets lost per packet sent, not by the streams' own congestion.
    pub loss: f64,
    pub mss: f64,
    /// Measured by a probe, or given on the command line.
    pub measured: bool,
    /// Mathis' constant the predictions use.
    pub c: f64,
    /// The control whose streams single, parallel and auto are predicted
    /// for (reno, cubic, bbr); combined and TCP-P grow as Reno does.
    pub control: String,
    /// One such stream's bound under the path's loss; none where loss does
    /// not hold it back.
    pub one_stream_bps: Option<f64>,
    /// The fewest streams that fill the path.
    pub knee: u32,
    pub modes: Vec<PlanMode>,
    pub recommend_mode: String,
    pub recommend_streams: u32,
    pub reason: String,
}

macro_rules! records {
    ($($t:ty => $name:literal),* $(,)?) => {
        $(impl Record for $t {
            const TYPE: &'static str = $name;
        })*
    };
}

records! {
    Interval => "interval",
    Event => "event",
    Steered => "steer",
    Summary => "summary",
    Source => "source",
    SinkInterval => "sink_interval",
    SinkSummary => "sink_summary",
    SinkMalformed => "sink_malformed",
    Flows => "flows",
    Rtt => "rtt",
    Ping => "ping",
    TraceSample => "trace_sample",
    TraceStream => "trace_stream",
    TraceTotal => "trace_total",
    Plan => "plan",
    Item => "item",
    crate::files::manifest::Skipped => "skipped",
    Failure => "error",
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> TcpInfo {
        TcpInfo {
            cwnd: 42,
            ssthresh: 30,
            srtt_us: 68_000,
            rttvar_us: 900,
            min_rtt_us: 67_500,
            mss: 1448,
            total_retrans: 3,
            data_segs_out: 1000,
            bytes_acked: 1_444_000,
            bytes_sent: 1_448_000,
            bytes_retrans: 4344,
            delivery_rate: 12_500_000,
            delivered: 997,
            busy_us: 2_000_000,
            rwnd_limited_us: 10_000,
            sndbuf_limited_us: 150_000,
            ..TcpInfo::default()
        }
    }

    /// One line of every record, in the order of the table above.
    fn examples() -> Vec<String> {
        let stream = StreamSummary {
            stream: 0,
            cc: "braid_frac".into(),
            bytes: 5_000_000,
            mbps: 40.0,
            retransmits: 2,
            data_segs_out: 3500,
            connections: 1,
            cwnd: 20,
            srtt_us: 70_000,
            min_rtt_us: 68_000,
        };
        vec![
            line(&Interval {
                t: 1.0,
                bytes: 5_000_000,
                mbps: 40.0,
                bottleneck_mbps: Some(94.912),
                streams: vec![StreamSample {
                    stream: 0,
                    bytes: 5_000_000,
                    mbps: 40.0,
                    cwnd: 20,
                    ssthresh: 15,
                    srtt_us: 70_000,
                    rttvar_us: 1000,
                    retransmits: 2,
                    lost: 0,
                    delivery_rate: 5_000_000,
                    bytes_acked: 4_990_000,
                    busy_us: 1_000_000,
                    rwnd_limited_us: 0,
                    sndbuf_limited_us: 400_000,
                }],
            }),
            line(&Event {
                event: "stream_lost",
                stream: 1,
                reason: "the connection ended".into(),
            }),
            line(&Steered {
                t: 2.5,
                streams: 8,
                strength: Some(3.25),
                queue_ms: Some(1.5),
                utility: None,
                shared: Some(true),
                share_mbps: Some(11.75),
                phase: Some("fair"),
                bottleneck_mbps: Some(94.9),
            }),
            line(&Summary {
                kind: "send",
                role: "sender",
                mode: "combined-2".into(),
                seconds: 1.0,
                bytes: 5_000_000,
                mbps: 40.0,
                peer_bytes: Some(5_000_000),
                retransmits: 2,
                data_segs_out: 3500,
                loss_ratio: 2.0 / 3500.0,
                cpu_seconds: 0.05,
                steer_cpu_seconds: Some(0.002),
                files: 1,
                requeued_blocks: 0,
                windows_repaired: Some(0),
                sealed: "aes-256-gcm",
                bottleneck_mbps: None,
                streams: vec![stream],
                transfer: Some(Transfer {
                    sent: 1,
                    resumed: 0,
                    skipped: 2,
                    kept: 0,
                    removed: 1,
                    dry_run: false,
                }),
            }),
            line(&Source {
                flow: 0,
                shape: "Sine { min: 1000000, max: 10000000 }".into(),
                seconds: 10.0,
                packets: 4000,
                bytes: 5_760_000,
                not_sent: 0,
                mbps: 4.608,
                due_mbps: 4.61,
                worst_late_us: 120,
            }),
            line(&SinkInterval {
                flow: "10.0.0.1:40000/0".into(),
                t: 0.1,
                packets: 40,
                bytes: 57_600,
                lost: 1,
                mbps: 4.608,
            }),
            line(&SinkSummary {
                flow: "10.0.0.1:40000/0".into(),
                packets: 3990,
                bytes: 5_745_600,
                lost: 10,
                reordered: 0,
                sent: Some(4000),
                loss_ratio: 0.0025,
            }),
            line(&SinkMalformed { datagrams: 2 }),
            line(&Flows {
                started: 20,
                completed: 19,
                failed: 0,
                bytes: 1_900_000,
                seconds: 10.0,
                offered_mbps: 2.0,
                mbps: 1.52,
                mean_completion_ms: 180.5,
            }),
            line(&Rtt {
                seq: 7,
                t: 0.07,
                rtt_ms: 68.2,
            }),
            line(&Ping {
                target: "10.0.0.2".into(),
                interval_ms: 10.0,
                size: 1440,
                sent: 100,
                received: 99,
                lost: 1,
                reordered: 0,
                late_sends: 0,
                min_ms: Some(68.0),
                median_ms: Some(68.3),
                p99_ms: Some(70.1),
                max_ms: Some(71.0),
                mean_ms: Some(68.4),
            }),
            line(&TraceSample {
                t: 0.5,
                stream: 0,
                cc: "braid_tcpp".into(),
                info: info(),
            }),
            line(&TraceStream {
                stream: 0,
                cc: "braid_tcpp".into(),
                settings: Some(SocketSettings {
                    frac_cwnd: None,
                    strength: Some("1".parse().unwrap()),
                    group_id: Some(7),
                }),
                seconds: 10.0,
                bytes_acked: 1_444_000,
                mbps: 1.155,
                retransmits: 3,
                info: info(),
            }),
            line(&TraceTotal {
                streams: 1,
                cc: "braid_tcpp".into(),
                seconds: 10.0,
                bytes_acked: 1_444_000,
                mbps: 1.155,
                retransmits: 3,
            }),
            line(&crate::path::advice::advise(
                &crate::path::advice::PathFacts {
                    rate_bps: 100e6,
                    rtt_s: 0.068,
                    loss: 1e-5,
                    mss_bytes: 1448.0,
                    measured: false,
                    measured_knee: None,
                },
                crate::path::model::Response::Reno,
                crate::path::model::C_PERIODIC,
            )),
            line(&Item {
                path: "proj/src/a.rs".into(),
                action: "resume",
                bytes: 4096,
            }),
            line(&crate::files::manifest::Skipped {
                path: "proj/run/sock".into(),
                reason: "not a regular file".into(),
            }),
            line(&Failure {
                message: "the files need 8.39 MB and /srv has 5.24 MB free".into(),
                exit_code: 7,
            }),
        ]
    }

    #[test]
    fn every_record_matches_the_shared_vectors() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors/records.jsonl");
        let ours = examples().join("\n") + "\n";
        if std::env::var_os("BRAID_BLESS").is_some() {
            std::fs::write(&path, &ours).unwrap();
        }
        let theirs = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            ours, theirs,
            "braid's records changed: rewrite vectors/records.jsonl with BRAID_BLESS=1, \
             and follow in python/braidlab/records.py"
        );
    }

    #[test]
    fn every_type_is_named_once() {
        let mut seen = std::collections::HashSet::new();
        for l in examples() {
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            assert_eq!(v["version"], VERSION);
            assert!(seen.insert(v["type"].as_str().unwrap().to_owned()), "{l}");
        }
        assert_eq!(seen.len(), 18);
    }
}
