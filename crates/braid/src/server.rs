//! `braid serve`: answers send, get and bench. Control and data connections
//! share one port; a data connection names its session and proves it holds
//! that session's key.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use braid_wire::{auth, Kind, Message, SessionParams, FLAG_RESUME, FLAG_REVERSE};

use crate::bench;
use crate::client::mode_name;
use crate::conn::Conn;
use crate::engine::{self, Life, Notes, StreamEnd};
use crate::error::{Error, Result};
use crate::manifest;
use crate::pacer::Pacer;
use crate::plan;
use crate::receive::RecvShared;
use crate::send::SendShared;
use crate::session::{self, SocketOptions, Token};
use crate::telemetry::{Output, Summary, Telemetry};

#[derive(Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// Files are read and written only below this directory.
    pub root: PathBuf,
    pub token: Token,
    pub sock: SocketOptions,
    pub pin_dir: PathBuf,
    /// Json: one summary line per session on stdout; Human: one line on stderr.
    pub output: Output,
    /// Serve one session, then exit with its result.
    pub once: bool,
    /// With `once`: give up if no client has connected within this long.
    pub wait: Option<Duration>,
    pub limit_bps: Option<u64>,
}

struct Entry {
    key: [u8; 32],
    streams: Sender<(u16, Conn)>,
}

type Registry = Arc<Mutex<HashMap<u64, Entry>>>;

/// Binds the port; `run` then serves on it.
pub struct Server {
    listener: TcpListener,
    cfg: Config,
}

impl Server {
    pub fn bind(cfg: Config) -> Result<Server> {
        if !cfg.root.is_dir() {
            return Err(Error::Usage(format!(
                "the root {} is not a directory",
                cfg.root.display()
            )));
        }
        let listener = TcpListener::bind(cfg.listen)
            .map_err(|e| Error::io(format!("listening on {}", cfg.listen), e))?;
        Ok(Server { listener, cfg })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until killed, or with `once` until the first session ends (its result).
    pub fn run(self) -> Result<()> {
        let registry: Registry = Arc::default();
        let cfg = Arc::new(self.cfg);
        let (done_tx, done_rx) = mpsc::channel::<Result<()>>();
        let started = std::time::Instant::now();
        let mut connected = false;
        loop {
            if crate::engine::interrupted() {
                // Sessions see the flag within 50 ms and journal what they received.
                thread::sleep(Duration::from_millis(500));
                return Err(Error::Interrupted);
            }
            if cfg.once {
                if let Ok(r) = done_rx.try_recv() {
                    return r;
                }
                if let Some(w) = cfg.wait.filter(|w| !connected && started.elapsed() > *w) {
                    // A server started for one client (over ssh) must not outlive it.
                    return Err(Error::connect(
                        "waiting for the client",
                        std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("nobody connected within {} s", w.as_secs()),
                        ),
                    ));
                }
            }
            if !readable(&self.listener, 100) {
                continue;
            }
            connected = true;
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) => {
                    eprintln!("braid serve: accept: {e}");
                    continue;
                }
            };
            let (registry, cfg, done_tx) =
                (Arc::clone(&registry), Arc::clone(&cfg), done_tx.clone());
            thread::spawn(move || {
                if let Some(result) = handle(stream, &cfg, &registry) {
                    if let Err(e) = &result {
                        if cfg.output != Output::Quiet {
                            eprintln!("braid serve: session failed: {e}");
                        }
                    }
                    let _ = done_tx.send(result);
                }
            });
        }
    }
}

/// Waits up to `ms` for a connection to accept.
fn readable(l: &TcpListener, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(l),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

/// One accepted connection. Returns a session's result for a control connection.
fn handle(stream: TcpStream, cfg: &Config, registry: &Registry) -> Option<Result<()>> {
    // A connection that says nothing is dropped, not kept forever.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut conn = Conn::new(stream).ok()?;
    match conn.recv_opt() {
        Ok(Some(Message::Hello { version, nonce })) => {
            let _ = conn.stream().set_nodelay(true);
            Some(control(conn, version, nonce, cfg, registry))
        }
        Ok(Some(Message::Attach {
            session,
            stream,
            mac,
        })) => {
            let entry = registry
                .lock()
                .unwrap()
                .get(&session)
                .map(|e| (e.key, e.streams.clone()));
            match entry {
                Some((key, tx))
                    if auth::verify(&auth::attach_proof(&key, session, stream), &mac) =>
                {
                    let _ = conn.stream().set_read_timeout(None);
                    if conn.send(&Message::Accepted { session }).is_ok() {
                        let _ = tx.send((stream, conn));
                    }
                }
                _ => conn.send_error(&Error::Auth(
                    "no such session, or a wrong session key".into(),
                )),
            }
            None
        }
        Ok(Some(m)) => {
            conn.send_error(&session::unexpected("a hello or an attach", &m));
            None
        }
        Ok(None) => None,
        Err(e) => {
            conn.send_error(&e);
            None
        }
    }
}

fn control(
    mut conn: Conn,
    version: u16,
    nonce: [u8; 16],
    cfg: &Config,
    registry: &Registry,
) -> Result<()> {
    let key = session::server_handshake(&mut conn, &cfg.token, version, nonce)?;
    let params = match conn.recv()? {
        Message::Open(p) => p,
        m => return Err(session::unexpected("the session's parameters", &m)),
    };
    conn.tell(plan::check(&params).map_err(Error::Usage))?;
    let _ = conn.stream().set_read_timeout(None);
    let session = u64::from_be_bytes(session::random()?);
    let (tx, rx) = mpsc::channel();
    registry
        .lock()
        .unwrap()
        .insert(session, Entry { key, streams: tx });
    let result = run_session(conn, &params, session, rx, cfg);
    registry.lock().unwrap().remove(&session);
    match result {
        Ok(summary) => {
            report(cfg, &summary);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn report(cfg: &Config, s: &Summary) {
    match cfg.output {
        Output::Json => println!(
            "{}",
            serde_json::to_string(s).expect("a summary serialises")
        ),
        Output::Human => eprintln!(
            "braid serve: {} {} ({}): {} in {:.1} s, {:.1} Mb/s",
            s.kind,
            s.mode,
            s.role,
            crate::telemetry::human_bytes(s.bytes),
            s.seconds,
            s.mbps
        ),
        Output::Quiet => {}
    }
}

fn run_session(
    mut conn: Conn,
    p: &SessionParams,
    session: u64,
    rx: mpsc::Receiver<(u16, Conn)>,
    cfg: &Config,
) -> Result<Summary> {
    let n = p.streams as usize;
    let tel = Telemetry::new(n, Output::Quiet);
    let life = Life::default();
    let streams = life.streams(
        n,
        if cfg.output == Output::Human {
            Notes::Stderr
        } else {
            Notes::Off
        },
    );
    let controls = plan::stream_controls(p, session);
    let sending =
        matches!(p.kind, Kind::Get) || (p.kind == Kind::Bench && p.flags & FLAG_REVERSE != 0);
    let maps = if sending {
        session::open_controls(&controls, &cfg.pin_dir)
    } else {
        Ok(None)
    };
    let maps = conn.tell(maps)?;
    // Whichever end sends sets the controls, on accepted sockets too.
    let with_control = |i: usize, conn: &Conn| -> Result<()> {
        if sending {
            session::apply_control(conn.stream(), &controls[i], maps.as_ref())?;
        }
        Ok(())
    };
    let kind = match p.kind {
        Kind::Bench => "bench",
        Kind::Send => "send",
        Kind::Get => "get",
    };
    let mut files = 0;
    let mut requeued = 0;
    let peer = match p.kind {
        Kind::Bench => {
            conn.send(&Message::Accepted { session })?;
            let duration = Duration::from_millis(p.duration_ms as u64);
            let start = OnceLock::new();
            let pacer = cfg.limit_bps.map(Pacer::new);
            let work = |i: usize, c: Conn| {
                if sending {
                    if let Err(e) = with_control(i, &c) {
                        return StreamEnd::Fatal(e);
                    }
                    let deadline = *start.get_or_init(|| Instant::now() + duration);
                    bench::send(i, c, deadline, &tel, pacer.as_ref());
                } else {
                    bench::receive(i, c, &tel);
                }
                StreamEnd::Finished
            };
            thread::scope(|s| {
                streams.accept(s, rx, &work);
                let r = if sending {
                    bench::close_sending(
                        &mut conn,
                        &life,
                        n,
                        duration + Duration::from_secs(30),
                        &tel,
                    )
                } else {
                    bench::close_receiving(
                        &mut conn,
                        &life,
                        n,
                        duration + Duration::from_secs(30),
                        &tel,
                    )
                };
                life.end(r, &tel)
            })?
        }
        Kind::Send => {
            let manifest = match conn.recv()? {
                Message::Manifest { files } => files,
                m => return Err(session::unexpected("the manifest", &m)),
            };
            files = manifest.len();
            let resume = p.flags & FLAG_RESUME != 0;
            let shared = conn.tell(RecvShared::new(
                &cfg.root,
                &manifest,
                resume,
                p.block_size,
                tel.clone(),
            ))?;
            conn.send(&Message::Accepted { session })?;
            engine::send_held(&mut conn, &shared)?;
            let Conn { r, w } = conn;
            let w = Mutex::new(w);
            let work = engine::receive_work(&shared, &w);
            thread::scope(|s| {
                streams.accept(s, rx, &work);
                engine::drive_receiver(r, &w, &shared, &life)
            })?
        }
        Kind::Get => {
            let wanted: Vec<String> = match conn.recv()? {
                Message::Manifest { files } => files.into_iter().map(|f| f.path).collect(),
                m => return Err(session::unexpected("the paths to get", &m)),
            };
            let sources = conn.tell(manifest::resolve_request(&cfg.root, &wanted))?;
            files = sources.len();
            conn.send(&Message::Accepted { session })?;
            conn.send(&Message::Manifest {
                files: sources.iter().map(|s| s.entry.clone()).collect(),
            })?;
            let held = engine::read_ranges(&mut conn, sources.len())?;
            let (tx, ev) = engine::events();
            let shared = SendShared::new(
                &sources,
                &held,
                p.block_size,
                n,
                tx.clone(),
                tel.clone(),
                cfg.limit_bps,
            )?;
            let send = engine::send_work(&shared);
            let work = |i: usize, c: Conn| match with_control(i, &c) {
                Ok(()) => send(i, c),
                Err(e) => StreamEnd::Fatal(e),
            };
            let r = thread::scope(|s| {
                streams.accept(s, rx, &work);
                let r = engine::drive_sender(conn, &sources, tx, ev, &shared, &life, Notes::Off);
                if r.is_err() {
                    shared.abort();
                }
                life.end(r, &tel)
            })?;
            requeued = shared.requeued();
            r
        }
    };
    let mut summary = tel.finish(
        kind,
        if sending { "sender" } else { "receiver" },
        mode_name(p),
    );
    summary.peer_bytes = Some(peer);
    summary.files = files;
    summary.requeued_blocks = requeued;
    Ok(summary)
}
