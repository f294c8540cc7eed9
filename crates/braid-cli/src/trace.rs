//! `braid cc trace` and `braid cc sink`: a bulk sender that shows what a
//! congestion control does to its windows, and the receiver it sends to.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use braid::records;
use braid::telemetry::round3;
use braid_cc::{Controls, SocketSettings, Strength};
use clap::Args;
use socket2::{Domain, Socket, Type};

const CHUNK: usize = 128 * 1024;

#[derive(Args)]
pub struct TraceArgs {
    /// The sink to send to, HOST:PORT.
    #[arg(long)]
    connect: SocketAddr,
    /// Congestion control of every stream (any the kernel has, e.g. reno, cubic, braid_frac).
    #[arg(long, default_value = "reno")]
    cc: String,
    /// Number of parallel streams.
    #[arg(short = 'n', long, default_value_t = 1)]
    streams: u32,
    /// How long to send, seconds.
    #[arg(short = 't', long, default_value_t = 10.0)]
    seconds: f64,
    /// Sampling interval of TCP_INFO, milliseconds.
    #[arg(long, default_value_t = 100)]
    interval_ms: u64,
    /// braid_frac: this stream's growth in thousandths of Reno's, 1..=1000.
    #[arg(long)]
    frac_cwnd: Option<u32>,
    /// braid_tcpp: the group's strength k >= 1.
    #[arg(long)]
    strength: Option<Strength>,
    /// braid_tcpp: an explicit group id (default: the destination address).
    #[arg(long)]
    group: Option<u64>,
    /// Print only the summaries, not every sample.
    #[arg(long)]
    summary_only: bool,
    /// Where the controls are pinned (for per-socket settings).
    #[arg(long, default_value = braid_cc::DEFAULT_PIN_DIR)]
    pin_dir: PathBuf,
}

#[derive(Args)]
pub struct SinkArgs {
    /// Address to listen on, HOST:PORT.
    #[arg(long)]
    listen: SocketAddr,
    /// Exit after this many seconds (default: run until killed).
    #[arg(long)]
    seconds: Option<f64>,
}

pub fn trace(a: TraceArgs) -> Result<()> {
    if a.streams == 0 || a.streams > 256 {
        bail!("--streams {} is out of range: 1..=256", a.streams);
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        bail!("--seconds must be a positive number of seconds");
    }
    let settings = SocketSettings {
        frac_cwnd: a.frac_cwnd,
        strength: a.strength,
        group_id: a.group,
    };
    let controls = if settings != SocketSettings::default() {
        Some(
            Controls::open(&a.pin_dir)
                .context("per-socket settings need the installed controls")?,
        )
    } else {
        None
    };

    let mut streams = Vec::new();
    for i in 0..a.streams {
        let sock = Socket::new(Domain::for_address(a.connect), Type::STREAM, None)
            .with_context(|| format!("creating stream {i}"))?;
        braid_cc::set_congestion_control(sock.as_fd(), &a.cc).with_context(|| {
            format!(
                "is {:?} registered? see /proc/sys/net/ipv4/tcp_available_congestion_control",
                a.cc
            )
        })?;
        // Settings go in before connect so that init sees the group.
        if let Some(c) = &controls {
            c.apply(sock.as_fd(), settings)?;
        }
        sock.connect(&a.connect.into())
            .with_context(|| format!("stream {i}: connecting to {}", a.connect))?;
        streams.push(TcpStream::from(sock));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(a.seconds);
    let writers: Vec<_> = streams
        .iter()
        .map(|s| {
            let mut s = s.try_clone().expect("cloning a socket handle");
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let buf = vec![0u8; CHUNK];
                while !stop.load(Ordering::Relaxed) {
                    if s.write_all(&buf).is_err() {
                        break;
                    }
                }
            })
        })
        .collect();

    let interval = Duration::from_millis(a.interval_ms.max(1));
    let mut next = start + interval;
    while next <= deadline {
        thread::sleep(next.saturating_duration_since(Instant::now()));
        if !a.summary_only {
            let t = start.elapsed().as_secs_f64();
            for (i, s) in streams.iter().enumerate() {
                let info = braid_cc::tcp_info(s.as_fd())?;
                records::print(&records::TraceSample {
                    t: round3(t),
                    stream: i,
                    cc: a.cc.clone(),
                    info,
                });
            }
        }
        next += interval;
    }
    thread::sleep(deadline.saturating_duration_since(Instant::now()));
    let elapsed = start.elapsed().as_secs_f64();
    let mut total = 0u64;
    let mut retrans = 0u64;
    for (i, s) in streams.iter().enumerate() {
        let info = braid_cc::tcp_info(s.as_fd())?;
        let applied = match &controls {
            Some(c) => c.socket_settings(s.as_fd())?,
            None => None,
        };
        let kernel_cc = braid_cc::congestion_control(s.as_fd())?;
        total += info.bytes_acked;
        retrans += info.total_retrans as u64;
        records::print(&records::TraceStream {
            stream: i,
            cc: kernel_cc,
            settings: applied,
            seconds: round3(elapsed),
            bytes_acked: info.bytes_acked,
            mbps: round3(info.bytes_acked as f64 * 8.0 / elapsed / 1e6),
            retransmits: info.total_retrans,
            info,
        });
    }
    records::print(&records::TraceTotal {
        streams: a.streams as usize,
        cc: a.cc.clone(),
        seconds: round3(elapsed),
        bytes_acked: total,
        mbps: round3(total as f64 * 8.0 / elapsed / 1e6),
        retransmits: retrans,
    });
    stop.store(true, Ordering::Relaxed);
    for s in &streams {
        // The measurement is over: reset rather than drain the send buffer, so
        // no orphaned socket lingers in the TCP-P group after we exit.
        let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
        // Unblocks a writer waiting for window space.
        let _ = s.shutdown(Shutdown::Both);
    }
    for w in writers {
        let _ = w.join();
    }
    Ok(())
}

pub fn sink(a: SinkArgs) -> Result<()> {
    let listener =
        TcpListener::bind(a.listen).with_context(|| format!("listening on {}", a.listen))?;
    if let Some(secs) = a.seconds {
        if !(secs.is_finite() && secs > 0.0) {
            bail!("--seconds must be a positive number of seconds");
        }
        thread::spawn(move || {
            thread::sleep(Duration::from_secs_f64(secs));
            std::process::exit(0);
        });
    }
    braid::errln!("braid sink: listening on {}", listener.local_addr()?);
    for conn in listener.incoming() {
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                braid::errln!("braid sink: accept: {e}");
                continue;
            }
        };
        thread::spawn(move || {
            let mut buf = vec![0u8; 256 * 1024];
            while let Ok(n) = conn.read(&mut buf) {
                if n == 0 {
                    break;
                }
            }
        });
    }
    Ok(())
}
