//! The client's side of `send`, `get` and `bench`: it opens the control
//! connection and does its half of the opening exchange, then hands the
//! session to `driver` as the dial side (it dials every data stream, and a
//! lost one again).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use braid_wire::{
    FileEntry, Kind, Message, SessionParams, FLAG_LINKS, FLAG_NAME_AS_DEST, FLAG_RESUME,
};

use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::files::manifest::{self, Links};
use crate::proto::steer::{Steer, StreamControl};
use crate::proto::Answer;
use crate::records::Summary;
use crate::records::{Item, Transfer};
use crate::session::conn::{self, Conn, Idle};
use crate::session::driver::{self, BenchRole, Run, Sending, Side};
use crate::session::engine::{self, Notes};
use crate::session::pacer::Pacer;
use crate::session::receive::{claims::Claims, RecvOptions, RecvShared};
use crate::session::sync::{self, Removed, Would};
use crate::session::{self, Agreed, ManifestLimits, SocketOptions, Token};
use crate::steer::plan::{self, mode_name};
use crate::telemetry::{Output, Telemetry};

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
    /// Asks for an unsealed session (a trusted link; the server must allow it).
    pub plain: bool,
    /// What a send or get does with what the receiver has (filters,
    /// --update, --checksum, --dry-run, --delete).
    pub sync: sync::Options,
}

/// A steer a session borrows while it runs.
pub type SharedSteer = Arc<Mutex<dyn Steer>>;

impl Config {
    /// The session's parameters as sent in `Open`, the rate limit with them.
    fn open_params(&self, kind: Kind) -> SessionParams {
        let mut p = self.params.clone();
        p.kind = kind;
        p.limit_bps = self.limit_bps.unwrap_or(0);
        if kind != Kind::Bench {
            p.flags |= self.sync.flags();
        }
        p
    }
}

/// JSON output tells of lost streams as event lines; the live display on stderr.
fn notes(output: Output) -> Notes {
    match output {
        Output::Json => Notes::Json,
        Output::Human | Output::Verbose => Notes::Stderr,
        Output::Quiet => Notes::Off,
    }
}

struct Opened {
    ctrl: Conn,
    agreed: Agreed,
    addr: SocketAddr,
    /// The session's rule for silence, on every one of its connections.
    idle: Idle,
}

fn open(cfg: &Config) -> Result<Opened> {
    plan::check(&cfg.params).map_err(Error::Usage)?;
    let mut last = None;
    for addr in session::resolve(&cfg.target)? {
        match session::connect(addr, &SocketOptions::default(), None) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                let mut ctrl = Conn::new(s).map_err(|e| Error::io("cloning a socket", e))?;
                let agreed = session::client_handshake(&mut ctrl, &cfg.token, cfg.plain)?;
                let idle = Idle::new(conn::IDLE);
                ctrl.set_idle(&idle);
                return Ok(Opened {
                    ctrl,
                    agreed,
                    addr,
                    idle,
                });
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("resolve returns at least one address"))
}

/// Where this end sends, a mode that needs braid's controls and cannot have
/// them stops here, before a server is asked for a session.
fn check_sending(cfg: &Config, sends: bool) -> Result<()> {
    if sends {
        let controls = plan::stream_controls(&cfg.params, 0);
        session::open_controls(&controls, &cfg.pin_dir)?;
        for cc in controls.iter().filter_map(|c| c.cc.as_deref()) {
            session::check_control(cc)?;
        }
    }
    Ok(())
}

/// `cfg`, checked once (`check_sending`) for every session of a `kind` it opens.
pub fn resolved(cfg: Config, kind: Kind) -> Result<Config> {
    check_sending(&cfg, driver::sends(kind, cfg.params.flags, true))?;
    Ok(cfg)
}

/// The session's number and the parameters its sender runs.
fn accepted(ctrl: &mut Conn, cfg: &Config) -> Result<(u64, SessionParams)> {
    match ctrl.recv()? {
        Message::Accepted { session } => Ok((session, cfg.params.clone())),
        m => Err(crate::proto::unexpected("the session's acceptance", &m)),
    }
}

/// The sending end's controls, its streams a TCP-P group of their own (a
/// number drawn here: the controls come before the session's acceptance,
/// for the streams dialled early); a caller's steer may set any later.
fn controls(cfg: &Config) -> Result<Sending> {
    let group = u64::from_be_bytes(session::random()?);
    Sending::new(&cfg.params, group, &cfg.pin_dir, cfg.steer.is_some())
}

/// Begins (`early`) or makes stream `i`'s connection, with its control
/// where this end sends.
fn dial_stream<T>(
    sending: Option<&Sending>,
    i: usize,
    dial: impl FnOnce(Option<(&StreamControl, Option<&braid_cc::Controls>)>) -> Result<T>,
) -> Result<T> {
    let control = sending.map(|s| (s.control(i), s.maps()));
    dial(control.as_ref().map(|(c, maps)| (c, *maps)))
}

/// The first streams' connections, begun before the session is accepted
/// so that their TCP handshakes run during that round trip; each is taken
/// by its stream's first dial. One that failed, or that the server closed
/// meanwhile, is dialled again as any stream is.
struct Early(Mutex<Vec<Option<session::Dialing>>>);

impl Early {
    fn none() -> Early {
        Early(Mutex::new(Vec::new()))
    }

    fn begin(cfg: &Config, addr: SocketAddr, n: usize, sending: Option<&Sending>) -> Early {
        let dialing = (0..n)
            .map(|i| dial_stream(sending, i, |c| session::begin_connect(addr, &cfg.sock, c)).ok())
            .collect();
        Early(Mutex::new(dialing))
    }

    fn take(&self, i: usize) -> Option<std::net::TcpStream> {
        let dialing = self.0.lock().unwrap().get_mut(i)?.take()?;
        dialing.finish()
    }
}

fn dialer<'a>(
    cfg: &'a Config,
    addr: SocketAddr,
    agreed: Agreed,
    idle: Idle,
    session: u64,
    sending: Option<&'a Sending>,
    early: Early,
) -> impl Fn(usize) -> Result<Conn> + Sync + 'a {
    // Every attach of the session carries a counter the server has not seen.
    let counter = AtomicU64::new(0);
    move |i| {
        let s = match early.take(i) {
            Some(s) => s,
            None => dial_stream(sending, i, |c| session::connect(addr, &cfg.sock, c))?,
        };
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        // A sending stream's blocks follow its attach without a round trip.
        let mut conn = session::attach(s, session, i as u16, n, &agreed, sending.is_some())?;
        conn.set_idle(&idle);
        Ok(conn)
    }
}

/// A session's steer: the caller's (locked while the session runs), else
/// `--mode auto`'s or `--mode falcon`'s own; a receiving end has none.
enum SessionSteer<'a> {
    Caller(MutexGuard<'a, dyn Steer + 'static>),
    Own(Box<dyn Steer>),
    Off,
}

impl<'a> SessionSteer<'a> {
    fn new(cfg: &'a Config, sends: bool) -> Self {
        match (&cfg.steer, sends) {
            (_, false) => SessionSteer::Off,
            (Some(shared), true) => SessionSteer::Caller(shared.lock().unwrap()),
            (None, true) => match driver::own_steer(&cfg.params, true) {
                Some(own) => SessionSteer::Own(own),
                None => SessionSteer::Off,
            },
        }
    }

    fn get(&mut self) -> Option<&mut (dyn Steer + 'static)> {
        match self {
            SessionSteer::Caller(g) => Some(&mut **g),
            SessionSteer::Own(b) => Some(&mut **b),
            SessionSteer::Off => None,
        }
    }
}

/// `braid bench`: memory to memory for the session's duration.
pub fn bench(cfg: &Config) -> Result<Summary> {
    let sends = driver::sends(Kind::Bench, cfg.params.flags, true);
    check_sending(cfg, sends)?;
    let mut o = open(cfg)?;
    o.ctrl
        .send_or_reason(&Message::Open(cfg.open_params(Kind::Bench)))?;
    let sending = if sends { Some(controls(cfg)?) } else { None };
    let n = if sends {
        plan::initial_streams(&cfg.params)
    } else {
        cfg.params.streams as usize
    };
    let early = Early::begin(cfg, o.addr, n, sending.as_ref());
    let (session, ran) = accepted(&mut o.ctrl, cfg)?;
    let tel = Telemetry::new(n, cfg.output);
    let sampler = tel.spawn_sampler(cfg.interval);
    let dial = dialer(
        cfg,
        o.addr,
        o.agreed,
        o.idle.clone(),
        session,
        sending.as_ref(),
        early,
    );
    let role = match &sending {
        Some(sending) => BenchRole::Send {
            sending,
            pacer: cfg.limit_bps.map(Pacer::new),
        },
        None => BenchRole::Receive,
    };
    let mut steer = SessionSteer::new(cfg, sends);
    let run = Run {
        tel: &tel,
        cancel: &cfg.cancel,
        notes: notes(cfg.output),
        steer: steer.get(),
    };
    let peer = driver::bench(&mut o.ctrl, Side::Dial(&dial), role, &cfg.params, run);
    let mut summary = tel.finish(
        "bench",
        if sends { "sender" } else { "receiver" },
        mode_name(&ran),
    );
    let _ = sampler.join();
    summary.peer_bytes = Some(peer?);
    summary.windows_repaired = sending.as_ref().and_then(Sending::repaired_windows);
    summary.sealed = o.agreed.suite.name();
    Ok(summary)
}

/// Whether a send's destination may name its file, as scp and rsync read
/// `f HOST:dir/new.txt`: the listing is one regular file, and the
/// destination is not the root and does not end in `/` (which, as for
/// rsync, means a directory). The receiver still puts the file inside if
/// the path is a directory there.
fn names_the_file(files: &[manifest::Source], dest: &str) -> bool {
    let trimmed = dest.trim_start_matches("./");
    matches!(files, [one] if !one.entry.is_dir())
        && !dest.ends_with('/')
        && !matches!(trimmed, "" | "." | "..")
}

/// An asked path's last component and the local name it arrives under.
type Rename = Option<(String, String)>;

/// Where a `get` writes, as `cp` and scp read a local target: an existing
/// directory holds what arrives under its own names; otherwise one remote
/// path is written as the target itself (a file renamed, or a tree's top),
/// and several (or a target ending in `/`) go into a directory made for
/// them, as `send` makes the remote one. Returns the directory to receive
/// into, the asked path's last component and the name that replaces it (if
/// renamed), and whether the directory was made here.
fn local_target(remote: &[String], local: &Path) -> Result<(PathBuf, Rename, bool)> {
    if local.is_dir() {
        return Ok((local.to_owned(), None, false));
    }
    let shown = local.display();
    let parent = match local.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(Error::Usage(format!(
            "{} is not a directory, so {shown} cannot be made there",
            parent.display()
        )));
    }
    let trailing = local.as_os_str().to_string_lossy().ends_with('/');
    let one = match remote {
        [only] => manifest::asked_name(only),
        _ => None,
    };
    match (one, local.file_name().and_then(|n| n.to_str())) {
        (Some(from), Some(to)) if !trailing => {
            Ok((parent, Some((from.to_owned(), to.to_owned())), false))
        }
        _ if local.exists() => Err(Error::Usage(format!("{shown} is not a directory"))),
        _ => {
            std::fs::create_dir(local).map_err(|e| Error::io(format!("making {shown}"), e))?;
            Ok((local.to_owned(), None, true))
        }
    }
}

/// Renames the offered entries of one asked path, named by its last
/// component `from`, to `to`: `from` itself and everything below it.
fn rename_top(files: &mut [FileEntry], from: &str, to: &str) {
    for f in files {
        if f.path == from {
            f.path = to.to_owned();
        } else if let Some(rest) = f.path.strip_prefix(from).and_then(|r| r.strip_prefix('/')) {
            f.path = format!("{to}/{rest}");
        }
    }
}

/// `braid send`: files and directories to `dest` below the server's root.
pub fn send(cfg: &Config, sources: &[PathBuf], dest: &str) -> Result<Summary> {
    let (mut files, skipped) = manifest::list(sources, dest, &cfg.sync.filter, cfg.sync.links)?;
    if cfg.sync.hard_links {
        manifest::mark_hard_links(&mut files);
    }
    for s in &skipped {
        match cfg.output {
            Output::Json => crate::records::print(s),
            Output::Human | Output::Verbose => crate::errln!("braid: skipping {s}"),
            Output::Quiet => {}
        }
    }
    let dry = cfg.sync.dry_run;
    if !dry {
        check_sending(cfg, true)?;
    }
    // Read before the session opens, so the server is not kept waiting.
    if cfg.sync.checksum {
        sync::sums(&mut files, &mut || Ok(()))?;
    }
    let mut o = open(cfg)?;
    let mut params = cfg.open_params(Kind::Send);
    if names_the_file(&files, dest) {
        params.flags |= FLAG_NAME_AS_DEST;
    }
    if files.iter().any(|s| s.link.is_some()) {
        params.flags |= FLAG_LINKS;
    }
    o.ctrl.send_or_reason(&Message::Open(params))?;
    sync::send_filter(&mut o.ctrl, &cfg.sync.filter)?;
    let entries: Vec<FileEntry> = files.iter().map(|s| s.entry.clone()).collect();
    session::send_manifest(&mut o.ctrl, &entries)?;
    if cfg.sync.checksum {
        sync::send_sums(&mut o.ctrl, &files)?;
    }
    sync::send_links(&mut o.ctrl, &files)?;
    sync::send_owners(&mut o.ctrl, &files, cfg.sync.ids)?;
    sync::send_hard_links(&mut o.ctrl, &files)?;
    let n = plan::initial_streams(&cfg.params);
    let (sending, early) = if dry {
        (None, Early::none())
    } else {
        let sending = controls(cfg)?;
        let early = Early::begin(cfg, o.addr, n, Some(&sending));
        (Some(sending), early)
    };
    let (session, _) = accepted(&mut o.ctrl, cfg)?;
    // A receiver holds at most a range per block it could have written.
    let answers = engine::read_answers(
        &mut o.ctrl,
        files.len(),
        crate::session::receive::DEFAULT_MAX_BLOCKS,
    )?;
    if dry {
        let removed = read_dry_end(&mut o.ctrl, cfg.sync.delete)?;
        let tel = Telemetry::new(0, cfg.output);
        return Ok(dry_run(
            cfg, &tel, "send", "sender", &entries, &answers, removed,
        ));
    }
    let sending = sending.expect("the controls of a send that is no dry run");
    let tel = Telemetry::new(n, cfg.output);
    let sampler = tel.spawn_sampler(cfg.interval);
    let Opened {
        ctrl,
        agreed,
        addr,
        idle,
    } = o;
    let dial = dialer(cfg, addr, agreed, idle, session, Some(&sending), early);
    let mut steer = SessionSteer::new(cfg, true);
    let run = Run {
        tel: &tel,
        cancel: &cfg.cancel,
        notes: notes(cfg.output),
        steer: steer.get(),
    };
    let sent = driver::send_files(
        ctrl,
        Side::Dial(&dial),
        &sending,
        &files,
        &answers,
        &cfg.params,
        cfg.limit_bps,
        run,
    );
    let mut summary = tel.finish("send", "sender", mode_name(&cfg.params));
    let _ = sampler.join();
    let sent = sent?;
    summary.peer_bytes = Some(sent.peer);
    summary.requeued_blocks = sent.requeued;
    summary.windows_repaired = sending.repaired_windows();
    summary.sealed = agreed.suite.name();
    account(&mut summary, &entries, &answers, sent.removed.count, false);
    if cfg.sync.itemize {
        items(cfg, &entries, &answers, "");
    }
    tell_removed(cfg, &sent.removed.shown, sent.removed.count);
    Ok(summary)
}

/// The summary's account of the files: what became of each (from the
/// receiver's answers), what --delete removed, and how many files a dry run
/// listed or a transfer verified (one the receiver kept was not verified:
/// it is not the sender's).
fn account(
    summary: &mut Summary,
    entries: &[FileEntry],
    answers: &[Answer],
    removed: u64,
    dry_run: bool,
) {
    let t = Transfer {
        removed,
        dry_run,
        ..tally(entries, answers)
    };
    let listed = entries.iter().filter(|e| e.is_file()).count();
    summary.files = if dry_run { listed } else { listed - t.kept };
    summary.transfer = Some(t);
}

/// What the receiver did with each file, from its answers.
fn tally(entries: &[FileEntry], answers: &[Answer]) -> Transfer {
    let mut t = Transfer::default();
    for (e, a) in entries.iter().zip(answers) {
        match Would::of(e, a) {
            Would::Send => t.sent += 1,
            Would::Resume(_) => t.resumed += 1,
            Would::Skip => t.skipped += 1,
            Would::Keep => t.kept += 1,
            Would::Dir | Would::Link | Would::HardLink => {}
        }
    }
    t
}

/// A dry run's end at the sending client: what the server would remove,
/// then its `Close`.
fn read_dry_end(ctrl: &mut Conn, delete: bool) -> Result<Removed> {
    let mut removed = Removed::default();
    loop {
        match ctrl.recv()? {
            Message::Removed { paths, more } if delete => removed.add(paths, more),
            Message::Close { .. } if !delete || removed.whole => return Ok(removed),
            m => return Err(crate::proto::unexpected("the end of a dry run", &m)),
        }
    }
}

/// What a dry run says: each entry's fate (and each removal), then a
/// summary that moved nothing.
fn dry_run(
    cfg: &Config,
    tel: &Arc<Telemetry>,
    kind: &'static str,
    role: &'static str,
    entries: &[FileEntry],
    answers: &[Answer],
    removed: Removed,
) -> Summary {
    items(cfg, entries, answers, "would ");
    for p in &removed.shown {
        item(cfg, p, "remove", 0, "would ");
    }
    if removed.count > removed.shown.len() as u64 {
        crate::errln!(
            "braid: and {} more would be removed",
            removed.count - removed.shown.len() as u64
        );
    }
    let mut summary = tel.finish(kind, role, mode_name(&cfg.params));
    account(&mut summary, entries, answers, removed.count, true);
    summary
}

/// Each entry's fate, a line (after `prefix`) or an `item` record each:
/// a dry run's (`would`) and `--itemize`'s.
fn items(cfg: &Config, entries: &[FileEntry], answers: &[Answer], prefix: &str) {
    for (e, a) in entries.iter().zip(answers) {
        let would = Would::of(e, a);
        let bytes = match would {
            Would::Send => e.size,
            Would::Resume(held) => e.size - held,
            _ => 0,
        };
        item(cfg, &e.path, would.word(), bytes, prefix);
    }
}

fn item(cfg: &Config, path: &str, action: &'static str, bytes: u64, prefix: &str) {
    match cfg.output {
        Output::Json => crate::records::print(&Item {
            path: path.to_owned(),
            action,
            bytes,
        }),
        Output::Human | Output::Verbose => {
            let size = if bytes > 0 {
                format!("  ({})", crate::telemetry::human_bytes(bytes))
            } else {
                String::new()
            };
            crate::outln!("{prefix}{action:<6} {path}{size}")
        }
        Output::Quiet => {}
    }
}

/// What --delete removed at the receiver, as a user reads it.
fn tell_removed(cfg: &Config, shown: &[String], count: u64) {
    for p in shown {
        match cfg.output {
            Output::Json => crate::records::print(&Item {
                path: p.clone(),
                action: "remove",
                bytes: 0,
            }),
            Output::Human | Output::Verbose => crate::outln!("removed {p}"),
            Output::Quiet => {}
        }
    }
    if count > shown.len() as u64 && cfg.output.human() {
        crate::outln!("removed {} more", count - shown.len() as u64);
    }
}

/// `braid get`: files and directories below the server's root into `local`.
pub fn get(cfg: &Config, remote: &[String], local: &Path) -> Result<Summary> {
    let (into, rename, made) = local_target(remote, local)?;
    let got = get_into(cfg, remote, &into, rename);
    if made && (got.is_err() || cfg.sync.dry_run) {
        // Made for this get and left empty by its failure (or a dry run):
        // not left behind.
        let _ = std::fs::remove_dir(&into);
    }
    got
}

fn get_into(cfg: &Config, remote: &[String], local: &Path, rename: Rename) -> Result<Summary> {
    cfg.sync.ids.check_receiving(true)?;
    let mut o = open(cfg)?;
    let mut params = cfg.open_params(Kind::Get);
    let carries_links = cfg.sync.links != Links::Skip;
    if carries_links {
        params.flags |= FLAG_LINKS;
    }
    o.ctrl.send_or_reason(&Message::Open(params))?;
    sync::send_filter(&mut o.ctrl, &cfg.sync.filter)?;
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
    let n = cfg.params.streams as usize;
    let early = if cfg.sync.dry_run {
        Early::none()
    } else {
        Early::begin(cfg, o.addr, n, None)
    };
    let (session, ran) = accepted(&mut o.ctrl, cfg)?;
    let files = session::recv_manifest(&mut o.ctrl, ManifestLimits::default())
        .and_then(|f| manifest::check_offer(remote, &f).map(|_| f));
    let mut files = o.ctrl.tell(files)?;
    if let Some((from, to)) = rename {
        rename_top(&mut files, &from, &to);
    }
    let extras = sync::receive_extras(&mut o.ctrl, local, &files, &cfg.sync, carries_links)?;
    let tel = Telemetry::new(n, cfg.output);
    let opts = RecvOptions {
        sync: cfg.sync.receiving(extras.same),
        links: extras.links,
        owners: extras.owners,
        hard_links: extras.hard_links,
        ..RecvOptions::new(
            cfg.params.flags & FLAG_RESUME != 0,
            cfg.params.block_size,
            Claims::new(),
        )
    };
    // The manifest is checked against the disk entry by entry.
    let shared = o.ctrl.w.speaking_while(conn::KEEPALIVE, || {
        RecvShared::new(local, &files, &opts, tel.clone())
    });
    let shared = o.ctrl.tell(shared)?;
    let answers = shared.answers();
    engine::send_held(&mut o.ctrl, &shared)?;
    if cfg.sync.dry_run {
        let would = shared.would_remove(&mut || o.ctrl.w.keepalive());
        let removed = Removed::from_paths(o.ctrl.tell(would)?);
        match o.ctrl.recv()? {
            Message::Close { .. } => {}
            m => return Err(crate::proto::unexpected("the end of a dry run", &m)),
        }
        return Ok(dry_run(
            cfg, &tel, "get", "receiver", &files, &answers, removed,
        ));
    }
    let sampler = tel.spawn_sampler(cfg.interval);
    let dial = dialer(cfg, o.addr, o.agreed, o.idle.clone(), session, None, early);
    let run = Run {
        tel: &tel,
        cancel: &cfg.cancel,
        notes: notes(cfg.output),
        steer: None,
    };
    let res = driver::receive_files(o.ctrl, Side::Dial(&dial), &shared, n, run);
    let mut summary = tel.finish("get", "receiver", mode_name(&ran));
    let _ = sampler.join();
    let peer = res?;
    summary.peer_bytes = Some(peer);
    summary.sealed = o.agreed.suite.name();
    let removed = shared.removed();
    account(&mut summary, &files, &answers, removed.len() as u64, false);
    if cfg.sync.itemize {
        items(cfg, &files, &answers, "");
    }
    tell_removed(cfg, &removed, removed.len() as u64);
    Ok(summary)
}
