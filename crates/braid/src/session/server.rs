//! `braid serve`: answers send, get and bench. Control and data connections
//! share one port; a data connection names its session and proves it holds
//! that session's key. Once a session is open, the server does its half of
//! the opening exchange and hands it to `driver` as the accept side.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use braid_wire::seal::Channel;
use braid_wire::{
    auth, Kind, Message, Mode, SessionParams, FLAG_LINKS, FLAG_NAME_AS_DEST, FLAG_RESUME,
};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::files::manifest;
use crate::records::Summary;
use crate::session::conn::{self, Bell, Conn, Idle};
use crate::session::driver::{self, BenchRole, Run, Sending, Side};
use crate::session::engine::{self, Notes};
use crate::session::pacer::Pacer;
use crate::session::receive::{self, claims::Claims, RecvOptions, RecvShared};
use crate::session::sync;
use crate::session::{self, ManifestLimits, SocketOptions, Token};
use crate::steer::plan::{self, mode_name};
use crate::telemetry::{Output, Telemetry};

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
    /// Consents to unsealed sessions for clients that ask (`--plain`), on a
    /// link both ends trust; never the default.
    pub allow_plain: bool,
    pub limits: Limits,
    /// Stops the server and every session it runs.
    pub cancel: Cancel,
}

/// What the server grants, so that no client, authenticated or not, can
/// take its memory, its descriptors or its files from the others.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections open at once, control and data, authenticated or not.
    pub connections: usize,
    /// Connections that have not proven the token yet; a new one pushes
    /// the oldest out, so a flood of them cannot lock clients out.
    pub unauthenticated: usize,
    /// From accept to a proven token (control) or an accepted attach (data).
    pub handshake: Duration,
    /// A session's manifest: entries and bytes.
    pub manifest: ManifestLimits,
    /// Blocks of one session's files (this end keeps hash state per block).
    pub blocks: u64,
    /// Leftovers of a transfer untouched this long are removed.
    pub partial_ttl: Duration,
    /// A session whose client says nothing on any of its connections for
    /// this long is ended (a client waiting on this end says `Keepalive`).
    pub idle: Duration,
    /// Memory the manifests of all live sessions may hold together, in bytes
    /// (see `ENTRY_COST`): a session past it is told to come back later.
    pub manifests: usize,
    /// Whether a client's send may make symbolic links here (rsync's daemon
    /// has "munge symlinks" for the same worry): a link made below the root
    /// may name anything, and whoever reads through it later leaves the root.
    pub links: bool,
    /// Whether a client's send may give what it writes their owner and group
    /// (--owner, --group; the server must run as root): off unless asked,
    /// since a client could then make files, setuid ones among them, of any
    /// user here.
    pub owners: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connections: 512,
            unauthenticated: 64,
            handshake: Duration::from_secs(10),
            manifest: ManifestLimits::default(),
            blocks: receive::DEFAULT_MAX_BLOCKS,
            partial_ttl: receive::DEFAULT_PARTIAL_TTL,
            idle: crate::session::conn::IDLE,
            manifests: 1 << 30,
            links: true,
            owners: false,
        }
    }
}

/// An authenticated client asks for its session within this long.
const OPEN_WITHIN: Duration = Duration::from_secs(30);
/// Descriptors a connection holds (its socket, the writer's clone and, for a
/// data connection, telemetry's), and those kept back for files, the
/// listener and the standard streams.
const FDS_PER_CONNECTION: usize = 3;
const FDS_KEPT: usize = 256;

struct Entry {
    agreed: session::Agreed,
    /// The session's rule for silence, shared by every connection that attaches.
    idle: Idle,
    /// Streams that may attach: a sending server runs the count the client
    /// asked for (only a dialling end adds streams), a receiving one takes
    /// streams that join up to the engine's limit. An attach at or past it is
    /// refused before it is accepted.
    streams: usize,
    door: engine::Door,
    /// The highest attach counter seen per stream: a lower or equal one is a replay.
    counters: HashMap<u16, u64>,
}

type Registry = Arc<Mutex<HashMap<u64, Entry>>>;

/// Connections still in their handshake, oldest first, each with a handle
/// to close it when a newer one needs its place.
#[derive(Default)]
struct Pending {
    next: u64,
    queue: VecDeque<(u64, TcpStream)>,
}

/// What every connection's thread shares.
struct Shared {
    cfg: Config,
    manifests: Arc<Budget>,
    registry: Registry,
    pending: Mutex<Pending>,
    open: AtomicUsize,
    claims: Arc<Claims>,
    max_connections: usize,
}

impl Shared {
    /// Leaves the handshake queue (authenticated, or gone).
    fn settled(&self, id: u64) {
        self.pending.lock().unwrap().queue.retain(|(i, _)| *i != id);
    }
}

/// What one entry of a live session's manifest costs this end, above its
/// path: its place in the manifest and in the receiving or sending state
/// (about 380 bytes measured on x86_64; rounded up).
const ENTRY_COST: usize = 512;

/// Memory shared by every session, taken and given back by each.
struct Budget {
    used: AtomicUsize,
    limit: usize,
}

/// What one session holds of a budget, given back when dropped.
struct Held {
    budget: Arc<Budget>,
    n: usize,
}

impl Budget {
    /// The cost of a manifest of `paths`, if it fits beside the others'.
    fn take<'a>(
        self: &Arc<Self>,
        paths: impl ExactSizeIterator<Item = &'a str>,
        what: &str,
    ) -> Result<Held> {
        let entries = paths.len();
        let n = paths
            .map(|p| p.len() + ENTRY_COST)
            .fold(0usize, usize::saturating_add);
        let mut used = self.used.load(Ordering::SeqCst);
        loop {
            let after = used.saturating_add(n);
            if after > self.limit {
                return Err(Error::refused(
                    Code::Unavailable,
                    format!(
                        "the server holds {} of manifests for other sessions, and {what} of {} \
                         entries would pass its limit of {} (--max-manifests); try again later",
                        crate::telemetry::human_bytes(used as u64),
                        entries,
                        crate::telemetry::human_bytes(self.limit as u64)
                    ),
                ));
            }
            match self
                .used
                .compare_exchange(used, after, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    return Ok(Held {
                        budget: Arc::clone(self),
                        n,
                    })
                }
                Err(now) => used = now,
            }
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.n, Ordering::SeqCst);
    }
}

/// Gives the heap a session freed back to the system: a server that ran a
/// session of a million files should not hold its memory until it exits.
fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only releases free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Counts a connection open until dropped, and then wakes the accept loop
/// (which, stopping, waits for the last one).
struct OpenGuard<'a>(&'a AtomicUsize, &'a Bell);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
        self.1.ring();
    }
}

/// How long a stopping server waits for its sessions to journal what they
/// received (they stop at once; this is a bound, not a sleep).
const STOP_GRACE: Duration = Duration::from_millis(500);
/// The accept loop's wait when nothing but a connection, the stop signal or a
/// finished session can wake it.
const IDLE_WAIT: Duration = Duration::from_secs(3600);

/// Binds the port; `run` then serves on it.
pub struct Server {
    listener: TcpListener,
    cfg: Config,
}

/// Raises the soft descriptor limit to the hard one; returns the soft limit.
fn raise_fd_limit() -> usize {
    // SAFETY: get/setrlimit on a struct we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 1024;
        }
        if r.rlim_cur < r.rlim_max {
            let want = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                r.rlim_cur = r.rlim_max;
            }
        }
        r.rlim_cur.min(1 << 20) as usize
    }
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
        let fds = raise_fd_limit();
        let fit = fds.saturating_sub(FDS_KEPT) / FDS_PER_CONNECTION;
        let max_connections = self.cfg.limits.connections.min(fit.max(8));
        if max_connections < self.cfg.limits.connections && self.cfg.output != Output::Quiet {
            crate::errln!(
                "braid serve: at most {max_connections} connections at once: the descriptor limit \
                 is {fds} (ulimit -n)"
            );
        }
        let shared = Arc::new(Shared {
            manifests: Arc::new(Budget {
                used: AtomicUsize::new(0),
                limit: self.cfg.limits.manifests,
            }),
            cfg: self.cfg,
            registry: Arc::default(),
            pending: Mutex::default(),
            open: AtomicUsize::new(0),
            claims: Claims::new(),
            max_connections,
        });
        let (done_tx, done_rx) = mpsc::channel::<Result<()>>();
        // Rung by the stop signal, a finished session and a closed connection:
        // the loop sleeps in one poll with the listener, not on a timeout.
        let wake =
            Arc::new(Bell::new().map_err(|e| Error::io("creating the server's wake-up", e))?);
        let _on_cancel = shared.cfg.cancel.on_cancel({
            let wake = Arc::clone(&wake);
            move || wake.ring()
        });
        let started = Instant::now();
        let mut connected = false;
        let mut accept_errors = (Instant::now(), 0u64);
        loop {
            // Cleared before the checks: a ring after them wakes the poll below.
            wake.clear();
            if shared.cfg.cancel.is_cancelled() {
                let until = Instant::now() + STOP_GRACE;
                loop {
                    wake.clear();
                    let left = until.saturating_duration_since(Instant::now());
                    if shared.open.load(Ordering::SeqCst) == 0 || left.is_zero() {
                        break;
                    }
                    wake.wait(left);
                }
                return Err(Error::Interrupted);
            }
            let cfg = &shared.cfg;
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
            let wait = match cfg.wait.filter(|_| cfg.once && !connected) {
                Some(w) => w.saturating_sub(started.elapsed()),
                None => IDLE_WAIT,
            };
            if !crate::session::conn::readable_or(&self.listener, &wake, wait) {
                continue;
            }
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) => {
                    // Out of descriptors or memory: the listener stays readable, so
                    // wait rather than spin, and say so once a second, not per try.
                    accept_errors.1 += 1;
                    if accept_errors.0.elapsed() >= Duration::from_secs(1) {
                        if cfg.output != Output::Quiet {
                            crate::errln!(
                                "braid serve: accept: {e} ({} times in the last second)",
                                accept_errors.1
                            );
                        }
                        accept_errors = (Instant::now(), 0);
                    }
                    thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            connected = true;
            if shared.open.load(Ordering::SeqCst) >= shared.max_connections {
                refuse_full(stream, shared.max_connections);
                continue;
            }
            shared.open.fetch_add(1, Ordering::SeqCst);
            let id = {
                let mut p = shared.pending.lock().unwrap();
                p.next += 1;
                let id = p.next;
                if let Ok(handle) = stream.try_clone() {
                    p.queue.push_back((id, handle));
                }
                while p.queue.len() > cfg.limits.unauthenticated {
                    if let Some((_, oldest)) = p.queue.pop_front() {
                        let _ = oldest.shutdown(std::net::Shutdown::Both);
                    }
                }
                id
            };
            let (shared, done_tx, wake) = (Arc::clone(&shared), done_tx.clone(), Arc::clone(&wake));
            thread::spawn(move || {
                let _open = OpenGuard(&shared.open, &wake);
                let result = handle(stream, id, &shared);
                shared.settled(id);
                if let Some(result) = result {
                    if let Err(e) = &result {
                        if shared.cfg.output != Output::Quiet {
                            crate::errln!("braid serve: session failed: {e}");
                        }
                    }
                    let _ = done_tx.send(result);
                }
            });
        }
    }
}

/// Tells a connection over the limit why it is closed, without waiting on it.
fn refuse_full(stream: TcpStream, max: usize) {
    let _ = stream.set_nonblocking(true);
    let mut out = Vec::new();
    braid_wire::encode(
        &Message::Error {
            code: Code::Unavailable as u16,
            message: format!(
                "the server has {max} connections open, its limit (--max-connections); try again later"
            ),
        },
        &mut out,
    );
    let _ = (&stream).write_all(&out);
}

/// One accepted connection. Returns a session's result for a control connection.
fn handle(stream: TcpStream, id: u64, shared: &Shared) -> Option<Result<()>> {
    let limits = &shared.cfg.limits;
    let mut conn = Conn::new(stream).ok()?;
    conn.r.set_limit(session::UNAUTHENTICATED_FRAME);
    conn.r.set_deadline(Some(Instant::now() + limits.handshake));
    match conn.recv_opt() {
        Ok(Some(Message::Hello { version, nonce })) => {
            let _ = conn.stream().set_nodelay(true);
            Some(control(conn, version, nonce, id, shared))
        }
        Ok(Some(Message::Attach {
            session,
            stream,
            counter,
            mac,
        })) => {
            let accepted = {
                let mut registry = shared.registry.lock().unwrap();
                match registry.get_mut(&session) {
                    Some(e)
                        if auth::verify(
                            &auth::attach_proof(&e.agreed.key, session, stream, counter),
                            &mac,
                        ) =>
                    {
                        let last = e.counters.entry(stream).or_insert(0);
                        if counter <= *last {
                            Err(Error::Auth(
                                "an attach that was used already (a replay)".into(),
                            ))
                        } else if stream as usize >= e.streams {
                            Err(Error::refused(
                                Code::BadRequest,
                                format!("stream {stream}: the session has {} streams", e.streams),
                            ))
                        } else {
                            *last = counter;
                            Ok((e.door.clone(), e.agreed, e.idle.clone()))
                        }
                    }
                    _ => Err(Error::Auth(
                        "no such session, or a wrong session key".into(),
                    )),
                }
            };
            match accepted {
                Ok((door, agreed, idle)) => {
                    shared.settled(id);
                    conn.r.set_limit(session::DATA_FRAME);
                    conn.r.set_deadline(None);
                    let channel = Channel::Data { stream, counter };
                    conn.seal(agreed.keys(channel, false));
                    conn.set_idle(&idle);
                    door.admit(stream, conn, |c| {
                        c.send(&Message::Accepted { session }).is_ok()
                    });
                }
                Err(e) => conn.send_error(&e),
            }
            None
        }
        Ok(Some(m)) => {
            conn.send_error(&crate::proto::unexpected("a hello or an attach", &m));
            None
        }
        Ok(None) => None,
        Err(e) => {
            conn.send_error(&e);
            None
        }
    }
}

fn control(mut conn: Conn, version: u16, nonce: [u8; 16], id: u64, shared: &Shared) -> Result<()> {
    let cfg = &shared.cfg;
    let agreed = session::server_handshake(&mut conn, &cfg.token, version, nonce, cfg.allow_plain)?;
    shared.settled(id);
    conn.r.set_limit(braid_wire::MAX_FRAME);
    // An authenticated client that says nothing is dropped, not kept forever:
    // it opens a session at once, and the session may not go silent for long.
    let idle = Idle::new(cfg.limits.idle);
    conn.set_idle(&idle);
    conn.r.set_deadline(Some(Instant::now() + OPEN_WITHIN));
    let params = match conn.recv() {
        Ok(Message::Open(p)) => p,
        Ok(m) => {
            return conn.tell(Err(crate::proto::unexpected(
                "the session's parameters",
                &m,
            )))
        }
        Err(e) => return conn.tell(Err(e)),
    };
    conn.r.set_deadline(None);
    conn.tell(plan::check(&params).map_err(Error::Usage))?;
    let session = u64::from_be_bytes(session::random()?);
    let (door, rx) = engine::Arrivals::channel();
    shared.registry.lock().unwrap().insert(
        session,
        Entry {
            agreed,
            idle,
            streams: if driver::sends(params.kind, params.flags, false) {
                params.streams as usize
            } else {
                plan::MAX_STREAMS as usize
            },
            door,
            counters: HashMap::new(),
        },
    );
    let result = run_session(conn, &params, session, rx, shared);
    let result = result.map(|mut s| {
        s.sealed = agreed.suite.name();
        s
    });
    shared.registry.lock().unwrap().remove(&session);
    give_back_memory();
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
        Output::Json => crate::records::print(s),
        Output::Human | Output::Verbose => crate::errln!(
            "braid serve: {} {} ({}): {} in {:.1} s, {}, {}",
            s.kind,
            s.mode,
            s.role,
            crate::telemetry::human_bytes(s.bytes),
            s.seconds,
            crate::telemetry::human_rate(s.mbps),
            crate::telemetry::sealed_words(s.sealed)
        ),
        Output::Quiet => {}
    }
}

/// A send of one file whose destination names it (`FLAG_NAME_AS_DEST`):
/// its entry `DEST/NAME` becomes `DEST` unless DEST is a directory below
/// `root`, which then holds it as NAME. Anything else is left as sent.
fn name_as_dest(root: &Path, manifest: &mut [braid_wire::FileEntry]) {
    let [one] = manifest else { return };
    if one.is_dir() {
        return;
    }
    let Some((dest, _name)) = one.path.rsplit_once('/') else {
        return;
    };
    let is_dir = crate::files::beneath::Dir::open(root)
        .and_then(|r| r.meta(Path::new(dest)))
        .map(|m| m.is_some_and(|m| m.kind == crate::files::beneath::Kind::Dir));
    match is_dir {
        Ok(true) => {}
        Ok(false) => one.path = dest.to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => one.path = dest.to_owned(),
        // The checks that follow say what is wrong with the path.
        Err(_) => {}
    }
}

/// The lower of two optional rates.
fn lower(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn run_session(
    mut conn: Conn,
    p: &SessionParams,
    session: u64,
    rx: engine::Arrivals,
    shared: &Shared,
) -> Result<Summary> {
    let cfg = &shared.cfg;
    // Whichever of the two sets a rate limit, the sending server keeps to it.
    let limit_bps = lower(cfg.limit_bps, (p.limit_bps > 0).then_some(p.limit_bps));
    let n = p.streams as usize;
    let tel = Telemetry::new(n, Output::Quiet);
    let streams_notes = if cfg.output.human() {
        Notes::Stderr
    } else {
        Notes::Off
    };
    let sends = driver::sends(p.kind, p.flags, false);
    // Whichever end sends sets the controls, on accepted sockets too.
    let sending = if sends {
        let s = Sending::new(p, session, &cfg.pin_dir, p.mode == Mode::Auto);
        Some(conn.tell(s)?)
    } else {
        None
    };
    // --mode auto: the sending end steers its streams' strength.
    let mut steer = sending.as_ref().and_then(|_| driver::own_steer(p, false));
    let run = Run {
        tel: &tel,
        cancel: &cfg.cancel,
        notes: streams_notes,
        steer: steer.as_deref_mut(),
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
            let role = match &sending {
                Some(sending) => BenchRole::Send {
                    sending,
                    pacer: limit_bps.map(Pacer::new),
                },
                None => BenchRole::Receive,
            };
            driver::bench(&mut conn, Side::Accept(rx), role, p, run)?
        }
        Kind::Send => {
            let filter = sync::read_filter(&mut conn, p.flags);
            let asked = sync::Options::from_flags(p.flags, conn.tell(filter)?);
            let manifest = session::recv_manifest(&mut conn, cfg.limits.manifest);
            let mut manifest = conn.tell(manifest)?;
            if p.flags & FLAG_NAME_AS_DEST != 0 {
                name_as_dest(&cfg.root, &mut manifest);
            }
            let refused_link = (!cfg.limits.links)
                .then(|| manifest.iter().find(|f| f.is_link()))
                .flatten();
            if let Some(l) = refused_link {
                return conn.tell(Err(Error::refused(
                    Code::ForbiddenPath,
                    format!(
                        "{} is a symbolic link, and this server makes none (serve --refuse-links); \
                         send with -L (--copy-links) to send what the links name",
                        l.path
                    ),
                )));
            }
            conn.tell(asked.ids.check_receiving(cfg.limits.owners))?;
            let paths = manifest.iter().map(|f| f.path.as_str());
            let _held = conn.tell(shared.manifests.take(paths, "this send"))?;
            files = manifest.iter().filter(|f| f.is_file()).count();
            let extras = sync::receive_extras(
                &mut conn,
                &cfg.root,
                &manifest,
                &asked,
                p.flags & FLAG_LINKS != 0,
            )?;
            let opts = RecvOptions {
                max_blocks: cfg.limits.blocks,
                partial_ttl: cfg.limits.partial_ttl,
                sync: asked.receiving(extras.same),
                max_removals: cfg.limits.manifest.files,
                links: extras.links,
                owners: extras.owners,
                hard_links: extras.hard_links,
                ..RecvOptions::new(
                    p.flags & FLAG_RESUME != 0,
                    p.block_size,
                    Arc::clone(&shared.claims),
                )
            };
            // A manifest of many files is checked against the disk entry by entry.
            let shared = conn.w.speaking_while(conn::KEEPALIVE, || {
                RecvShared::new(&cfg.root, &manifest, &opts, tel.clone())
            });
            let shared = conn.tell(shared)?;
            conn.send(&Message::Accepted { session })?;
            engine::send_held(&mut conn, &shared)?;
            if asked.dry_run {
                // Says what it would remove, and ends: nothing moves.
                if asked.delete {
                    let would = shared.would_remove(&mut || conn.w.keepalive());
                    let paths = conn.tell(would)?;
                    sync::send_removed(&mut conn.w, &paths)?;
                }
                conn.send(&Message::Close { bytes: 0 })?;
                0
            } else {
                driver::receive_files(conn, Side::Accept(rx), &shared, n, run)?
            }
        }
        Kind::Get => {
            let filter = sync::read_filter(&mut conn, p.flags);
            let asked = sync::Options::from_flags(p.flags, conn.tell(filter)?);
            let wanted = session::recv_manifest(&mut conn, cfg.limits.manifest);
            let wanted: Vec<String> = conn.tell(wanted)?.into_iter().map(|f| f.path).collect();
            // The tree asked for is walked before its manifest is sent.
            let sources = conn.w.speaking_while(conn::KEEPALIVE, || {
                manifest::resolve_request(&cfg.root, &wanted, &asked.filter, asked.links)
            });
            let mut sources = conn.tell(sources)?;
            if asked.hard_links {
                manifest::mark_hard_links(&mut sources);
            }
            if sources.len() > cfg.limits.manifest.files {
                return conn.tell(Err(Error::refused(
                    Code::TooLarge,
                    format!(
                        "{} files and directories would pass this server's limit of {} a \
                         session (--max-files); ask for the tree in parts",
                        sources.len(),
                        cfg.limits.manifest.files
                    ),
                )));
            }
            let paths = sources.iter().map(|s| s.entry.path.as_str());
            let _held = conn.tell(shared.manifests.take(paths, "this get"))?;
            let blocks: u64 = sources
                .iter()
                .map(|s| s.entry.size.div_ceil(p.block_size as u64))
                .sum();
            if blocks > cfg.limits.blocks {
                return conn.tell(Err(Error::refused(
                    Code::TooLarge,
                    format!(
                        "{blocks} blocks would pass this server's limit of {} a session; \
                         use a larger --block-size",
                        cfg.limits.blocks
                    ),
                )));
            }
            files = sources.iter().filter(|s| s.entry.is_file()).count();
            conn.send(&Message::Accepted { session })?;
            let entries: Vec<_> = sources.iter().map(|s| s.entry.clone()).collect();
            session::send_manifest(&mut conn, &entries)?;
            if asked.checksum {
                let w = &mut conn.w;
                let summed = sync::sums(&mut sources, &mut || w.keepalive());
                conn.tell(summed)?;
                sync::send_sums(&mut conn, &sources)?;
            }
            sync::send_links(&mut conn, &sources)?;
            sync::send_owners(&mut conn, &sources, asked.ids)?;
            sync::send_hard_links(&mut conn, &sources)?;
            let answers = engine::read_answers(&mut conn, sources.len(), cfg.limits.blocks);
            let answers = conn.tell(answers)?;
            if asked.dry_run {
                conn.send(&Message::Close { bytes: 0 })?;
                0
            } else {
                let sending = sending.as_ref().expect("a get's server sends");
                let sent = driver::send_files(
                    conn,
                    Side::Accept(rx),
                    sending,
                    &sources,
                    &answers,
                    p,
                    limit_bps,
                    run,
                )?;
                requeued = sent.requeued;
                sent.peer
            }
        }
    };
    let mut summary = tel.finish(
        kind,
        if sends { "sender" } else { "receiver" },
        mode_name(p),
    );
    summary.peer_bytes = Some(peer);
    summary.files = files;
    summary.requeued_blocks = requeued;
    summary.windows_repaired = sending.as_ref().and_then(Sending::repaired_windows);
    Ok(summary)
}
