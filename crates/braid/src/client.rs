//! The client's side of `send`, `get` and `bench`: it opens the control
//! connection, then dials every data stream (and dials a lost one again).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use braid_cc::Controls;
use braid_cc::Strength;
use braid_wire::{FileEntry, Kind, Message, Mode, FLAG_RESUME, FLAG_REVERSE};

use crate::auto::Auto;
use crate::bench;
use crate::cancel::Cancel;
use crate::conn::Conn;
use crate::engine::{self, Hooks, Life, Notes, SteerHook, StreamEnd};
use crate::error::{Error, Result};
use crate::falcon::Falcon;
use crate::manifest;
use crate::pacer::Pacer;
use crate::plan::{self, mode_name, StreamControl};
use crate::proto::steer::Steer;
use crate::ranges::RangeSet;
use crate::receive::{claims::Claims, RecvOptions, RecvShared};
use crate::send::SendShared;
use crate::session::{self, ManifestLimits, SocketOptions, Token};
use crate::telemetry::{Output, Summary, Telemetry};
use braid_wire::SessionParams;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Everything a client session needs.
#[derive(Clone)]
pub struct Config {
    /// HOST:PORT of `braid serve`.
    pub target: String,
    pub token: Token,
    pub params: SessionParams,
    pub sock: SocketOptions,
    pub pin_dir: PathBuf,
    pub output: Output,
    pub interval: Duration,
    /// Bits per second for the whole session, at whichever end sends.
    pub limit_bps: Option<u64>,
    /// Stops the session; the CLI fires it on Ctrl-C.
    pub cancel: Cancel,
    /// Changes the streams and their controls while a send runs.
    pub steer: Option<SharedSteer>,
}

/// A steer a session borrows while it runs.
pub type SharedSteer = Arc<Mutex<dyn Steer>>;

/// The sending end's controls: one per stream (a stream that joins takes the
/// last one's unless told otherwise), and braid-cc's maps if settings need them.
struct Sending {
    controls: Mutex<Vec<StreamControl>>,
    maps: Option<Controls>,
}

impl Sending {
    fn control(&self, i: usize) -> StreamControl {
        let c = self.controls.lock().unwrap();
        c.get(i).or(c.last()).cloned().unwrap_or_default()
    }

    /// Gives stream `i` a control: on its live socket, and on its later connections.
    fn apply(&self, tel: &Telemetry, i: usize, control: &StreamControl) -> Result<()> {
        self.set(i, control);
        tel.with_socket(i, |sock| {
            session::apply_control(sock, control, self.maps.as_ref())
        })
        .unwrap_or(Ok(()))
    }

    /// Stream `i`'s control from now on.
    fn set(&self, i: usize, control: &StreamControl) {
        let mut c = self.controls.lock().unwrap();
        while c.len() <= i {
            let last = c.last().cloned().unwrap_or_default();
            c.push(last);
        }
        c[i] = control.clone();
    }
}

impl Config {
    /// The session's parameters as sent in `Open`, the rate limit with them.
    fn open_params(&self, kind: Kind) -> SessionParams {
        let mut p = self.params.clone();
        p.kind = kind;
        p.limit_bps = self.limit_bps.unwrap_or(0);
        p
    }
}

/// JSON output tells of lost streams as event lines; the live display on stderr.
fn notes(output: Output) -> Notes {
    match output {
        Output::Json => Notes::Json,
        Output::Human => Notes::Stderr,
        Output::Quiet => Notes::Off,
    }
}

struct Opened {
    ctrl: Conn,
    key: [u8; 32],
    addr: SocketAddr,
}

fn open(cfg: &Config) -> Result<Opened> {
    plan::check(&cfg.params).map_err(Error::Usage)?;
    let mut last = None;
    for addr in session::resolve(&cfg.target)? {
        match session::connect(addr, &SocketOptions::default(), None) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                let mut ctrl = Conn::new(s).map_err(|e| Error::io("cloning a socket", e))?;
                let key = session::client_handshake(&mut ctrl, &cfg.token)?;
                return Ok(Opened { ctrl, key, addr });
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("resolve returns at least one address"))
}

fn accepted(ctrl: &mut Conn) -> Result<u64> {
    match ctrl.recv()? {
        Message::Accepted { session } => Ok(session),
        m => Err(session::unexpected("the session's acceptance", &m)),
    }
}

fn controls(cfg: &Config, session: u64) -> Result<Sending> {
    let c = plan::stream_controls(&cfg.params, session);
    // A steer may give any stream braid-cc settings later: open the maps if they are there.
    let maps = match session::open_controls(&c, &cfg.pin_dir)? {
        None if cfg.steer.is_some() => Controls::open(&cfg.pin_dir).ok(),
        maps => maps,
    };
    Ok(Sending {
        controls: Mutex::new(c),
        maps,
    })
}

fn dialer<'a>(
    cfg: &'a Config,
    addr: SocketAddr,
    key: [u8; 32],
    session: u64,
    sending: Option<&'a Sending>,
) -> impl Fn(usize) -> Result<Conn> + Sync + 'a {
    // Every attach of the session carries a counter the server has not seen.
    let counter = AtomicU64::new(0);
    move |i| {
        let control = sending.map(|s| s.control(i));
        let control = control
            .as_ref()
            .zip(sending)
            .map(|(c, s)| (c, s.maps.as_ref()));
        let s = session::connect(addr, &cfg.sock, control)?;
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        session::attach(s, session, i as u16, n, &key)
    }
}

/// The steer of `--mode auto` or `--mode falcon`, unless the caller brought its own.
fn own_steer(cfg: &Config, session: u64) -> Option<Box<dyn Steer>> {
    let p = &cfg.params;
    match p.mode {
        _ if cfg.steer.is_some() => None,
        Mode::Auto => Some(Box::new(Auto::new(
            session,
            p.streams as usize,
            Strength::from_milli(p.strength_milli).unwrap_or(Strength::ONE),
        ))),
        Mode::Falcon => Some(Box::new(Falcon::new(
            plan::initial_streams(p),
            p.streams as usize,
        ))),
        _ => None,
    }
}

/// The session's steer: the caller's, or its own.
fn steer_of<'a>(
    guard: &'a mut Option<std::sync::MutexGuard<'_, dyn Steer + 'static>>,
    own: &'a mut Option<Box<dyn Steer>>,
) -> Option<&'a mut (dyn Steer + 'static)> {
    match guard {
        Some(g) => Some(&mut **g),
        None => own.as_deref_mut(),
    }
}

/// `braid bench`: memory to memory for the session's duration.
pub fn bench(cfg: &Config) -> Result<Summary> {
    let mut o = open(cfg)?;
    o.ctrl
        .send_or_reason(&Message::Open(cfg.open_params(Kind::Bench)))?;
    let session = accepted(&mut o.ctrl)?;
    let reverse = cfg.params.flags & FLAG_REVERSE != 0;
    // A receiving client dials what it asked for; a sending one may start with
    // fewer and let its steer add and remove streams.
    let n = if reverse {
        cfg.params.streams as usize
    } else {
        plan::initial_streams(&cfg.params)
    };
    let sending = if reverse {
        None
    } else {
        Some(controls(cfg, session)?)
    };
    let tel = Telemetry::new(n, cfg.output);
    let sampler = tel.spawn_sampler(cfg.interval);
    let life = Life::new(&cfg.cancel);
    let streams = life.streams(n, notes(cfg.output));
    let duration = Duration::from_millis(cfg.params.duration_ms as u64);
    let deadline = Instant::now() + duration;
    let pacer = cfg.limit_bps.map(Pacer::new);
    let dial = dialer(cfg, o.addr, o.key, session, sending.as_ref());
    // Streams below `active` send; each one's flag says whether its thread still runs.
    let active = AtomicUsize::new(n);
    let running: Vec<AtomicBool> = (0..plan::MAX_STREAMS as usize)
        .map(|i| AtomicBool::new(i < n))
        .collect();
    let wanted = |i: usize| i < active.load(Ordering::SeqCst);
    let send_work = |i: usize, conn: Conn| {
        bench::send(
            i,
            conn,
            deadline,
            &tel,
            pacer.as_ref(),
            &cfg.cancel,
            &|| wanted(i),
        );
        running[i].store(false, Ordering::SeqCst);
        StreamEnd::Finished
    };
    let recv_work = |i: usize, conn: Conn| {
        bench::receive(i, conn, &tel, &cfg.cancel, &life.done);
        StreamEnd::Finished
    };
    let mut own = own_steer(cfg, session);
    let mut guard = cfg.steer.as_ref().map(|s| s.lock().unwrap());
    let steer = steer_of(&mut guard, &mut own).filter(|_| !reverse);
    let apply = |i: usize, c: &StreamControl| match &sending {
        Some(sending) => sending.apply(&tel, i, c),
        None => Ok(()),
    };
    let (stop_steer, steer_stop) = std::sync::mpsc::channel::<()>();
    let peer = thread::scope(|s| -> Result<u64> {
        let work: &(dyn Fn(usize, Conn) -> StreamEnd + Sync) =
            if reverse { &recv_work } else { &send_work };
        streams.dial(s, &dial, work);
        let (streams, dial, active, running) = (&streams, &dial, &active, &running);
        let set_streams = move |k: usize| {
            if Instant::now() >= deadline {
                return;
            }
            let k = k.clamp(1, running.len());
            active.store(k, Ordering::SeqCst);
            for (i, r) in running.iter().enumerate().take(k) {
                if !r.swap(true, Ordering::SeqCst) {
                    streams.dial_one(s, i, dial, work);
                }
            }
        };
        if let Some(steer) = steer {
            let notes = notes(cfg.output);
            let (tel, apply, wanted) = (&tel, &apply, &wanted);
            s.spawn(move || {
                let hook = engine::BenchSteer {
                    tel,
                    wanted,
                    apply,
                    streams: Some(&set_streams),
                };
                engine::steer_bench(&steer_stop, steer, &hook, notes)
            });
        }
        let _stop_steer = stop_steer;
        let wait = duration + Duration::from_secs(30);
        let r = if reverse {
            bench::close_receiving(&mut o.ctrl, &life, wait, &tel)
        } else {
            bench::close_sending(&mut o.ctrl, &life, n, wait, &tel)
        };
        life.end(r, &tel)
    });
    let mut summary = tel.finish(
        "bench",
        if reverse { "receiver" } else { "sender" },
        mode_name(&cfg.params),
    );
    let _ = sampler.join();
    if let Some(e) = life.abort.take() {
        return Err(e);
    }
    summary.peer_bytes = Some(peer?);
    Ok(summary)
}

/// `braid send`: files and directories to `dest` below the server's root.
pub fn send(cfg: &Config, sources: &[PathBuf], dest: &str) -> Result<Summary> {
    let (files, skipped) = manifest::list(sources, dest)?;
    if cfg.output != Output::Json {
        for s in &skipped {
            eprintln!("braid: skipping {s}");
        }
    }
    let mut o = open(cfg)?;
    o.ctrl
        .send_or_reason(&Message::Open(cfg.open_params(Kind::Send)))?;
    let entries: Vec<FileEntry> = files.iter().map(|s| s.entry.clone()).collect();
    session::send_manifest(&mut o.ctrl, &entries)?;
    let session = accepted(&mut o.ctrl)?;
    // A receiver holds at most a range per block it could have written.
    let held = engine::read_ranges(&mut o.ctrl, files.len(), crate::receive::DEFAULT_MAX_BLOCKS)?;
    let sending = controls(cfg, session)?;
    run_sender(cfg, o, session, &files, &held, Some(&sending), "send")
}

fn run_sender(
    cfg: &Config,
    o: Opened,
    session: u64,
    files: &[manifest::Source],
    held: &[RangeSet],
    sending: Option<&Sending>,
    kind: &'static str,
) -> Result<Summary> {
    let n = plan::initial_streams(&cfg.params);
    let tel = Telemetry::new(n, cfg.output);
    let (tx, rx) = engine::events();
    let shared = SendShared::new(
        files,
        held,
        cfg.params.block_size,
        n,
        tx.clone(),
        tel.clone(),
        cfg.limit_bps,
    )?;
    let sampler = tel.spawn_sampler(cfg.interval);
    let life = Life::new(&cfg.cancel);
    let streams = life.streams(n, notes(cfg.output));
    let Opened { ctrl, key, addr } = o;
    let dial = dialer(cfg, addr, key, session, sending);
    let work = engine::send_work(&shared);
    // A steer's new control reaches the stream's live socket, and its later ones.
    let apply = |i: usize, c: &StreamControl| match sending {
        Some(sending) => sending.apply(&shared.tel, i, c),
        None => Ok(()),
    };
    let mut own = own_steer(cfg, session);
    let mut guard = cfg.steer.as_ref().map(|s| s.lock().unwrap());
    let steer = steer_of(&mut guard, &mut own);
    let r = thread::scope(|s| {
        streams.dial(s, &dial, &work);
        let open = |i: usize| streams.dial_one(s, i, &dial, &work);
        let hooks = Hooks {
            open: Some(&open),
            steer: steer.map(|steer| SteerHook {
                steer,
                apply: &apply,
            }),
        };
        let r = engine::drive_sender(
            ctrl,
            files,
            tx,
            rx,
            &shared,
            &life,
            notes(cfg.output),
            hooks,
        );
        if r.is_err() {
            shared.abort();
        }
        life.end(r, &tel)
    });
    let mut summary = tel.finish(kind, "sender", mode_name(&cfg.params));
    let _ = sampler.join();
    let peer = r?;
    summary.peer_bytes = Some(peer);
    summary.files = files.iter().filter(|s| !s.entry.is_dir()).count();
    summary.requeued_blocks = shared.requeued();
    Ok(summary)
}

/// `braid get`: files and directories below the server's root into `local`.
pub fn get(cfg: &Config, remote: &[String], local: &Path) -> Result<Summary> {
    if !local.is_dir() {
        return Err(Error::Usage(format!(
            "{} is not a directory",
            local.display()
        )));
    }
    let mut o = open(cfg)?;
    o.ctrl
        .send_or_reason(&Message::Open(cfg.open_params(Kind::Get)))?;
    let wanted: Vec<FileEntry> = remote
        .iter()
        .map(|p| FileEntry {
            path: p.clone(),
            size: 0,
            mode: 0,
            mtime_ns: 0,
        })
        .collect();
    session::send_manifest(&mut o.ctrl, &wanted)?;
    let session = accepted(&mut o.ctrl)?;
    let files = session::recv_manifest(&mut o.ctrl, ManifestLimits::default());
    let files = o.ctrl.tell(files)?;
    let n = cfg.params.streams as usize;
    let tel = Telemetry::new(n, cfg.output);
    let opts = RecvOptions::new(
        cfg.params.flags & FLAG_RESUME != 0,
        cfg.params.block_size,
        Claims::new(),
    );
    let shared = o
        .ctrl
        .tell(RecvShared::new(local, &files, &opts, tel.clone()))?;
    engine::send_held(&mut o.ctrl, &shared)?;
    let sampler = tel.spawn_sampler(cfg.interval);
    let life = Life::new(&cfg.cancel);
    let streams = life.streams(n, notes(cfg.output));
    let dial = dialer(cfg, o.addr, o.key, session, None);
    let Conn { r, w } = o.ctrl;
    let w = Mutex::new(w);
    let work = engine::receive_work(&shared, &w);
    let res = thread::scope(|s| {
        streams.dial(s, &dial, &work);
        engine::drive_receiver(r, &w, &shared, &life)
    });
    let mut summary = tel.finish("get", "receiver", mode_name(&cfg.params));
    let _ = sampler.join();
    let peer = res?;
    summary.peer_bytes = Some(peer);
    summary.files = files.iter().filter(|f| !f.is_dir()).count();
    Ok(summary)
}
