//! `braid serve`, `braid send`, `braid get`, `braid bench`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use braid::cancel::Cancel;
use braid::files::filter::{Filter, Rule};
use braid::files::manifest::Links;
use braid::records::Summary;
use braid::session::bootstrap::{self, PortRange, Ssh};
use braid::session::client::{self, Config};
use braid::session::server::{self, Server};
use braid::session::sync;
use braid::session::{SocketOptions, Token};
use braid::telemetry::Output;
use braid::{target, Error, Result};
use braid_cc::Strength;
use braid_link::spec::parse_rate;
use braid_wire::{Kind, Mode, SessionParams, FLAG_RESUME, FLAG_REVERSE};
use clap::{Args, ValueEnum};

/// The most streams auto and falcon open unless told. By RFC 9438's response
/// function one CUBIC stream moves about 100 Mb/s at 200 ms under random loss
/// of 1e-5, and about 580 Mb/s under 1e-6: 32 fill 3 Gb/s on the first such
/// path and 10 Gb/s on the second.
const MOST_STREAMS: u16 = 32;
/// The streams of the fixed modes unless told.
const FIXED_STREAMS: u16 = 4;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// One stream, the system's default control (or --cc).
    Single,
    /// N streams, all with --cc.
    Parallel,
    /// Stream 0 Reno, the rest braid_frac growing as if their RTT were --virtual-rtt times longer.
    Combined,
    /// N braid_tcpp streams in one group that takes what --strength TCP flows take.
    Tcpp,
    /// Streams of CUBIC (or --cc; the host's default where CUBIC cannot be set), as many as the path rewards while
    /// nobody else is on it (up to N), --fair-share ordinary flows' worth while others share
    /// it. The default; needs nothing of braid's controls, nor root.
    Auto,
    /// Streams of --cc whose number braid searches for as Falcon does (a gradient over n of
    /// throughput / 1.02^n - 10 x throughput x loss), from 1 up to N; a baseline for auto.
    Falcon,
}

#[derive(Args, Clone)]
pub struct SessionArgs {
    /// How the sending end runs its streams [default: auto].
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Number of parallel streams; for auto and falcon, the most they may open
    /// [default: 32 for auto and falcon, 4 for the others].
    #[arg(short = 'n', long)]
    streams: Option<u16>,
    /// Control of every stream in single, parallel, falcon and auto mode (reno, cubic, bbr,
    /// braid_stcp, braid_hstcp, braid_htcp) [default: auto's streams run cubic where it may be
    /// set, the others the host's default].
    #[arg(long, default_value = "", hide_default_value = true)]
    cc: String,
    /// Combined mode: the fractional streams' virtual-RTT multiplier m (frac_cwnd = 1000/m).
    #[arg(long, default_value_t = 10.0)]
    virtual_rtt: f64,
    /// TCP-P mode: the group's strength k (it takes what k TCP flows take).
    #[arg(long, default_value = "1")]
    strength: Strength,
    /// Auto mode: how many ordinary flows' share to keep to while others share the path
    /// (0: yield entirely, one stream at a few packets a round trip while they are there).
    #[arg(long, default_value = "1", value_parser = parse_fair_share)]
    fair_share: u32,
    /// Bytes per block (file transfers), e.g. 1M.
    #[arg(long, default_value = "1M", value_parser = parse_size)]
    block_size: u64,
    /// SO_SNDBUF/SO_RCVBUF in bytes (default: the kernel's autotuning).
    #[arg(long, value_parser = parse_size)]
    window: Option<u64>,
    /// A rate limit for the whole session, in bits (200mbit, 1gbit, 100Mb/s) or bytes (50MB/s) per second.
    #[arg(long, value_parser = parse_rate)]
    limit: Option<u64>,
    /// JSON lines on stdout: interval records, for send and get an `item` record for each
    /// entry at the end (sent, resumed, skipped, kept), and a final summary.
    #[arg(long)]
    json: bool,
    /// Print nothing but errors: no progress, no summary.
    #[arg(short = 'q', long, conflicts_with = "json")]
    quiet: bool,
    /// More detail: a line per stream at each interval (cwnd, sRTT, retransmits) and, for send
    /// and get, a line for each entry at the end (as --itemize).
    #[arg(short = 'v', long, conflicts_with_all = ["json", "quiet"])]
    verbose: bool,
    /// Reporting interval in seconds.
    #[arg(short = 'i', long, default_value_t = 1.0)]
    interval: f64,
    /// A file holding the token (default: $BRAID_TOKEN).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Where braid's controls are pinned.
    #[arg(long, default_value = braid_cc::DEFAULT_PIN_DIR)]
    pin_dir: PathBuf,
    /// Start the far end over ssh: when nothing listens there (auto), always, or never.
    #[arg(long, value_enum, default_value = "auto")]
    ssh: SshWhen,
    /// The ssh command and its options, as rsync -e takes them ("ssh -p 2222 -i key").
    #[arg(short = 'e', long, default_value = "ssh")]
    rsh: String,
    /// braid on the far end, for a start over ssh.
    #[arg(long, default_value = "braid")]
    remote_braid: String,
    /// The ports a server started over ssh may listen on (a firewall's opening), LOW-HIGH.
    #[arg(long, value_name = "LOW-HIGH")]
    port_range: Option<PortRange>,
    /// Ask for an unsealed session: after the handshake nothing is encrypted or
    /// authenticated. Only for measurements on a link you trust; the server must allow it
    /// (braid serve --allow-plain), and every report says so.
    #[arg(long)]
    plain: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SshWhen {
    Auto,
    Always,
    Never,
}

#[derive(Args)]
pub struct BenchArgs {
    /// The server: HOST[:PORT].
    host: String,
    /// Seconds to send.
    #[arg(short = 't', long, default_value_t = 10.0)]
    time: f64,
    /// The server sends, this end receives.
    #[arg(short = 'R', long)]
    reverse: bool,
    #[command(flatten)]
    s: SessionArgs,
}

#[derive(Args)]
pub struct SendArgs {
    /// Files and directories, then the destination HOST[:PORT]:DIR below the server's root.
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    paths: Vec<String>,
    /// Skip files the receiver holds whole (same size and mtime). A partial copy of the same source is continued with or without it.
    #[arg(long)]
    resume: bool,
    #[command(flatten)]
    sync: SyncArgs,
    #[command(flatten)]
    s: SessionArgs,
}

#[derive(Args)]
pub struct GetArgs {
    /// HOST[:PORT]:PATH (more PATHs may follow as HOST:PATH of the same host), then the local directory.
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    paths: Vec<String>,
    /// Skip files this end holds whole (same size and mtime). A partial copy of the same source is continued with or without it.
    #[arg(long)]
    resume: bool,
    #[command(flatten)]
    sync: SyncArgs,
    #[command(flatten)]
    s: SessionArgs,
}

/// rsync's ways with what the receiving end has.
#[derive(Args)]
#[command(next_help_heading = "Filters and sync")]
pub struct SyncArgs {
    /// Leave out what PATTERN matches (a glob: `*` within a name, `**` across `/`, a trailing `/` for directories only, a leading `/` anchored at the listing's top; otherwise matched at any depth). Repeatable; with --include, the first rule that matches decides.
    #[arg(long, value_name = "PATTERN")]
    exclude: Vec<String>,
    /// Keep what PATTERN matches even where a later --exclude would leave it out.
    #[arg(long, value_name = "PATTERN")]
    include: Vec<String>,
    /// Say what would be sent, resumed, skipped, kept and removed; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Keep files that are newer at the receiver.
    #[arg(long, short = 'u')]
    update: bool,
    /// Skip files the receiver holds with the same content (size and BLAKE3; both ends read every such file first), whatever their time; send the others whole.
    #[arg(long, short = 'c')]
    checksum: bool,
    /// Make the destination a mirror: remove what the sent directories hold there and the sender does not (what --exclude leaves out is kept).
    #[arg(long)]
    delete: bool,
    /// At the end, a line (or with --json an `item` record) for each entry: sent, resumed, skipped or kept.
    #[arg(long)]
    itemize: bool,
    /// Send what the symbolic links below a directory name, files and trees (rsync -L), instead
    /// of the links themselves (the default, rsync -l). A get's server never follows a link.
    #[arg(long, short = 'L')]
    copy_links: bool,
    /// Give what arrives the sender's owner, by user id (rsync -o with --numeric-ids), and keep
    /// its setuid bit. The receiver must run as root; a server, started with --keep-owners.
    #[arg(long, short = 'o')]
    owner: bool,
    /// Give what arrives the sender's group, by group id, and keep its setgid bit (rsync -g with
    /// --numeric-ids); as --owner, for the receiver.
    #[arg(long, short = 'g')]
    group: bool,
    /// Keep hard links (rsync -H): a file listed under more than one name moves once, and its
    /// other names are made at the receiver as hard links to it.
    #[arg(long, short = 'H')]
    hard_links: bool,
}

impl SyncArgs {
    /// The options, the filter's rules in the order given on the command line;
    /// `every_entry` (-v, --json) lists each entry at the end, as --itemize.
    fn options(&self, m: Option<&clap::ArgMatches>, every_entry: bool) -> Result<sync::Options> {
        let at = |id: &str, n: usize| -> Vec<usize> {
            m.and_then(|m| m.indices_of(id))
                .map(|i| i.collect())
                .unwrap_or_else(|| (0..n).collect())
        };
        let mut rules: Vec<(usize, bool, &String)> = Vec::new();
        for (include, id, given) in [
            (true, "include", &self.include),
            (false, "exclude", &self.exclude),
        ] {
            rules.extend(
                at(id, given.len())
                    .into_iter()
                    .zip(given)
                    .map(|(i, p)| (i, include, p)),
            );
        }
        rules.sort_by_key(|r| r.0);
        let rules = rules
            .into_iter()
            .map(|(_, include, p)| {
                Rule::new(include, p).map_err(|e| {
                    let flag = if include { "--include" } else { "--exclude" };
                    Error::Usage(format!("{flag} {p}: {e}"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(sync::Options {
            filter: Filter::new(rules).map_err(Error::Usage)?,
            update: self.update,
            checksum: self.checksum,
            dry_run: self.dry_run,
            delete: self.delete,
            itemize: self.itemize || every_entry,
            links: if self.copy_links {
                Links::Follow
            } else {
                Links::Keep
            },
            ids: sync::Ids {
                owner: self.owner,
                group: self.group,
            },
            hard_links: self.hard_links,
        })
    }
}

#[derive(Args)]
pub struct ServeArgs {
    /// Address and port to listen on; data streams use the same port.
    #[arg(
        long,
        default_value = "0.0.0.0:5420",
        conflicts_with = "listen_reached"
    )]
    listen: SocketAddr,
    /// Listen only on the address an ssh client reached this host at ($SSH_CONNECTION), on a
    /// port of --port-range or any free one: how a server started over ssh listens.
    #[arg(long)]
    listen_reached: bool,
    /// Listen on the first free port of LOW-HIGH (a firewall's opening) instead of --listen's port.
    #[arg(long, value_name = "LOW-HIGH")]
    port_range: Option<PortRange>,
    /// Files are read and written only below this directory (required: a server that
    /// others may write to is never the current directory by accident).
    #[arg(long)]
    root: PathBuf,
    /// Serve one session, then exit with its result.
    #[arg(long)]
    once: bool,
    /// With --once: give up if no client connects within this many seconds.
    #[arg(long, requires = "once")]
    wait: Option<u64>,
    /// One JSON summary line per session on stdout.
    #[arg(long)]
    json: bool,
    /// A file holding the token, - for stdin (default: $BRAID_TOKEN, else a fresh one is printed).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// SO_SNDBUF/SO_RCVBUF in bytes (default: the kernel's autotuning).
    #[arg(long, value_parser = parse_size)]
    window: Option<u64>,
    /// A rate limit per session when this end sends, in bits (1gbit, 100Mb/s) or bytes (50MB/s) per second.
    #[arg(long, value_parser = parse_rate)]
    limit: Option<u64>,
    /// Where braid's controls are pinned.
    #[arg(long, default_value = braid_cc::DEFAULT_PIN_DIR)]
    pin_dir: PathBuf,
    /// Connections open at once, control and data (also capped by the descriptor limit).
    #[arg(long, default_value_t = server::Limits::default().connections)]
    max_connections: usize,
    /// Connections that have not proven the token; a new one pushes out the oldest.
    #[arg(long, default_value_t = server::Limits::default().unauthenticated)]
    max_unauthenticated: usize,
    /// Seconds a connection has to prove the token (or attach) after it is accepted.
    #[arg(long, default_value_t = server::Limits::default().handshake.as_secs_f64())]
    handshake_timeout: f64,
    /// Files and directories in one session's manifest.
    #[arg(long, default_value_t = server::Limits::default().manifest.files)]
    max_files: usize,
    /// Bytes of one session's manifest (its paths and fields), e.g. 256M.
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    max_manifest: u64,
    /// Memory the manifests of all live sessions may hold together, e.g. 1G (about 0.5 KB
    /// an entry and its path); a session past it is told to try again later.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    max_manifests: u64,
    /// Blocks of one session's files (hash state is kept per block); a client
    /// over it is told to use a larger --block-size.
    #[arg(long, default_value_t = server::Limits::default().blocks)]
    max_blocks: u64,
    /// Hours after which an abandoned transfer's part files are removed.
    #[arg(long, default_value_t = server::Limits::default().partial_ttl.as_secs() / 3600)]
    partial_ttl: u64,
    /// Seconds a session may say nothing on any of its connections before it is ended
    /// (clients that wait say so every 10 s; at least 30).
    #[arg(long, default_value_t = server::Limits::default().idle.as_secs())]
    idle_timeout: u64,
    /// Allow unsealed sessions to clients that ask for one (--plain), for measurements on
    /// a link both ends trust. Sessions are sealed unless both ends agree.
    #[arg(long)]
    allow_plain: bool,
    /// Refuse a send that holds symbolic links (the client is told to send with -L, what
    /// they name, instead): no link a client makes here can lead out of the root.
    #[arg(long)]
    refuse_links: bool,
    /// Let a client's send (--owner, --group) give what it writes here the owner and group it
    /// names, setuid and setgid bits kept: only for clients trusted with every user's files.
    /// Needs root; off by default, when such a send is refused.
    #[arg(long)]
    keep_owners: bool,
}

/// The process's stop signal: every session this command runs holds it.
pub(crate) fn cancel() -> Cancel {
    static CANCEL: OnceLock<Cancel> = OnceLock::new();
    CANCEL.get_or_init(Cancel::new).clone()
}

/// The write end of the pipe a signal handler tells, or -1.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    if SIGNALLED.swap(true, Ordering::SeqCst) {
        // A second Ctrl-C: the user does not want to wait for the journal.
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(braid::error::exit::INTERRUPTED as libc::c_int) };
    }
    let fd = SIGNAL_PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) of one byte from a static is async-signal-safe.
        unsafe { libc::write(fd, b"!".as_ptr().cast(), 1) };
    }
}

/// SIGINT and SIGTERM stop the session cleanly: the receiving end journals what it holds
/// (so --resume moves only the rest), the sending end tells its peer. The handler only
/// writes to a pipe; a thread reading it fires the cancel, which wakes every session.
fn stop_on_signals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills the two descriptors we pass.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        let (read_fd, write_fd) = (fds[0], fds[1]);
        SIGNAL_PIPE.store(write_fd, Ordering::SeqCst);
        let c = cancel();
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            // SAFETY: a read into a local buffer from the pipe this thread owns.
            while unsafe { libc::read(read_fd, b.as_mut_ptr().cast(), 1) } < 0 {}
            c.cancel();
        });
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the handler only touches atomics, write(2) and _exit.
            unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        }
    });
}

/// `--fair-share`, in thousandths of a flow: 0 (yield entirely) or a strength (1 and up).
fn parse_fair_share(s: &str) -> Result<u32, String> {
    match s.trim().parse::<f64>() {
        Ok(0.0) => Ok(0),
        Ok(k) if k.is_finite() => s
            .parse::<Strength>()
            .map(Strength::milli)
            .map_err(|_| braid::steer::plan::fair_share_range(k)),
        _ => Err(format!(
            "{s:?} is not a number of flows (0 to yield entirely, or 1 and up)"
        )),
    }
}

/// Sizes in bytes: k, M, G are powers of 1024 ("1M" = 1048576).
fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_lowercase() {
                'k' => 1u64 << 10,
                'm' => 1 << 20,
                'g' => 1 << 30,
                _ => return Err(format!("{s:?}: unknown suffix {c:?} (k, M or G)")),
            };
            (&s[..i], m)
        }
        _ => (s, 1),
    };
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a size"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{s:?} must be above 0"));
    }
    Ok((n * mult as f64) as u64)
}

pub(crate) fn token(file: &Option<PathBuf>) -> Result<Option<Token>> {
    if let Some(f) = file {
        let t = if f.as_os_str() == "-" {
            let mut t = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                .map_err(|e| Error::io("reading the token from stdin", e))?;
            t
        } else {
            std::fs::read_to_string(f)
                .map_err(|e| Error::io(format!("reading the token file {}", f.display()), e))?
        };
        return Token::new(t.trim().as_bytes().to_vec()).map(Some);
    }
    match std::env::var("BRAID_TOKEN") {
        Ok(t) if !t.is_empty() => Token::new(t.into_bytes()).map(Some),
        _ => Ok(None),
    }
}

impl SessionArgs {
    /// The mode asked for, or the default.
    fn mode(&self) -> ModeArg {
        self.mode.unwrap_or(ModeArg::Auto)
    }
}

/// Falcon's search adds and removes streams, and only the end that dials them can.
fn only_where_the_client_sends(s: &SessionArgs, what: &str) -> Result<()> {
    if matches!(s.mode, Some(ModeArg::Falcon)) {
        return Err(Error::Usage(format!(
            "--mode falcon searches over the streams the client dials while it sends: use it \
             with send or bench, not {what}"
        )));
    }
    Ok(())
}

fn params(s: &SessionArgs, kind: Kind) -> Result<SessionParams> {
    let mode = match s.mode() {
        ModeArg::Single => Mode::Single,
        ModeArg::Parallel => Mode::Parallel,
        ModeArg::Combined => Mode::Combined,
        ModeArg::Tcpp => Mode::Tcpp,
        ModeArg::Auto => Mode::Auto,
        ModeArg::Falcon => Mode::Falcon,
    };
    if !(s.virtual_rtt.is_finite() && (1.0..=1000.0).contains(&s.virtual_rtt)) {
        return Err(Error::Usage(format!(
            "--virtual-rtt {} is out of range: 1..=1000",
            s.virtual_rtt
        )));
    }
    let streams = match s.mode() {
        ModeArg::Single => 1,
        ModeArg::Auto | ModeArg::Falcon => s.streams.unwrap_or(MOST_STREAMS),
        _ => s.streams.unwrap_or(FIXED_STREAMS),
    };
    let block_size = u32::try_from(s.block_size)
        .map_err(|_| Error::Usage(format!("--block-size {} is too large", s.block_size)))?;
    Ok(SessionParams {
        kind,
        mode,
        streams,
        cc: s.cc.clone(),
        frac_cwnd: (1000.0 / s.virtual_rtt).round() as u16,
        strength_milli: if matches!(s.mode(), ModeArg::Auto) {
            s.fair_share
        } else {
            s.strength.milli()
        },
        duration_ms: 0,
        block_size,
        flags: 0,
        limit_bps: 0,
    })
}

/// The session's configuration, and whether the user gave a token (read once: it may be stdin).
/// Its sending end's controls are checked here, once (`client::resolved`), though
/// `with_far_end` may try a second server.
fn config(s: &SessionArgs, target: String, params: SessionParams) -> Result<(Config, bool)> {
    let given = token(&s.token_file)?;
    let had_token = given.is_some();
    // Without a token of our own only a far end we start ourselves can be reached.
    let token = match given {
        Some(t) => t,
        None if s.ssh != SshWhen::Never => Token::generate()?,
        None => {
            return Err(Error::Usage(
                "no token: set BRAID_TOKEN or pass --token-file (braid serve prints one)".into(),
            ))
        }
    };
    if !(s.interval.is_finite() && s.interval >= 0.01) {
        return Err(Error::Usage("--interval must be at least 0.01 s".into()));
    }
    let window = s.window.map(|w| w as usize);
    if let Some(w) = window.and_then(braid::session::window_warning) {
        braid::errln!("braid: warning: {w}");
    }
    let kind = params.kind;
    let cfg = Config {
        target,
        token,
        params,
        sock: SocketOptions { window },
        pin_dir: s.pin_dir.clone(),
        output: match (s.json, s.quiet, s.verbose) {
            (true, _, _) => Output::Json,
            (_, true, _) => Output::Quiet,
            (_, _, true) => Output::Verbose,
            _ => Output::Human,
        },
        interval: Duration::from_secs_f64(s.interval),
        limit_bps: s.limit,
        cancel: cancel(),
        steer: None,
        plain: s.plain,
        sync: Default::default(),
    };
    Ok((client::resolved(cfg, kind)?, had_token))
}

/// Runs `session` against the server at `cfg.target`. When nothing listens there (or with
/// --ssh always) it starts `braid serve --once` over ssh on `login` with `root` as its root and a
/// fresh token, and runs `session` against that; the flag tells `session` which it talks to.
fn with_far_end<T>(
    s: &SessionArgs,
    (mut cfg, had_token): (Config, bool),
    login: &str,
    root: Option<&str>,
    session: impl Fn(&Config, bool) -> Result<T>,
) -> Result<T> {
    if s.ssh != SshWhen::Always {
        match session(&cfg, false) {
            Err(e) if e.is_refused() && s.ssh == SshWhen::Auto => braid::errln!(
                "braid: nothing listens at {}; starting braid serve on {login} over ssh",
                cfg.target
            ),
            Err(e) if !had_token && !e.is_refused() => {
                return Err(Error::Usage(format!(
                    "{e} (no token given: set BRAID_TOKEN or pass --token-file; braid serve prints one)"
                )))
            }
            other => return other,
        }
    }
    let root = root.ok_or_else(|| {
        Error::Usage("over ssh the paths of one get must be all absolute or all relative".into())
    })?;
    let ssh = Ssh {
        command: s.rsh.split_whitespace().map(String::from).collect(),
        remote_braid: s.remote_braid.clone(),
        wait: Duration::from_secs(60),
        allow_plain: s.plain,
        port_range: s.port_range,
    };
    cfg.token = Token::generate()?;
    let far = bootstrap::start(&ssh, login, root, &cfg.token)?;
    let host = cfg
        .target
        .rsplit_once(':')
        .map_or_else(String::new, |(h, _)| h.to_owned());
    cfg.target = format!("{host}:{}", far.port);
    match session(&cfg, true) {
        Ok(v) => {
            far.finish(Duration::from_secs(30))?;
            Ok(v)
        }
        Err(e) => {
            far.abandon();
            Err(e)
        }
    }
}

fn print_summary(s: &Summary, a: &SessionArgs) {
    if a.json {
        braid::records::print(s);
        return;
    }
    if a.quiet {
        return;
    }
    if let Some(t) = s.transfer.as_ref().filter(|t| t.dry_run) {
        braid::outln!(
            "dry run: {} would be sent, {} resumed, {} skipped (the receiver has them), {} kept \
             (newer there), {} removed; nothing was written",
            t.sent,
            t.resumed,
            t.skipped,
            t.kept,
            t.removed
        );
        return;
    }
    braid::outln!(
        "{} {} ({}): {} in {:.2} s = {}, {} retransmits of {} segments, {:.2} CPU s, {}",
        s.kind,
        s.mode,
        s.role,
        braid::telemetry::human_bytes(s.bytes),
        s.seconds,
        braid::telemetry::human_rate(s.mbps),
        s.retransmits,
        s.data_segs_out,
        s.cpu_seconds,
        braid::telemetry::sealed_words(s.sealed)
    );
    if s.files > 0 {
        braid::outln!(
            "  {} verified (BLAKE3), {} sent again after a lost stream",
            counted(s.files as u64, "file"),
            counted(s.requeued_blocks, "block")
        );
    }
    if let Some(t) = &s.transfer {
        braid::outln!(
            "  {} sent, {} resumed, {} skipped (the receiver had them), {} kept (newer there), \
             {} removed",
            t.sent,
            t.resumed,
            t.skipped,
            t.kept,
            t.removed
        );
    }
    for st in &s.streams {
        braid::outln!(
            "  stream {:>3} {:<11} {:>10}  {:>12}  retrans {:>6}  srtt {:.1} ms",
            st.stream,
            st.cc,
            braid::telemetry::human_bytes(st.bytes),
            braid::telemetry::human_rate(st.mbps),
            st.retransmits,
            st.srtt_us as f64 / 1000.0
        );
    }
}

/// "1 file", "3 files".
fn counted(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A running `braid serve` reads and writes only below its root: an
/// absolute path there would quietly mean something else. Where nothing
/// listens, the connection's refusal is returned, so that a far end is
/// started over ssh (with the path's own root) as usual.
fn below_root(path: &str, target: &str) -> Result<()> {
    if path.starts_with('/') {
        for addr in braid::session::resolve(target)? {
            if let Err(e) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10)) {
                let e = Error::connect(format!("connecting to {addr}"), e);
                if e.is_refused() {
                    return Err(e);
                }
            }
        }
        return Err(Error::Usage(format!(
            "{path} is absolute, but a running braid serve works only below its --root: \
             write it relative to that root (or use --ssh always to start a server whose root is /)"
        )));
    }
    Ok(())
}

pub fn bench(a: BenchArgs) -> Result<()> {
    stop_on_signals();
    let remote = target::parse(&a.host, false).map_err(Error::Usage)?;
    let mut p = params(&a.s, Kind::Bench)?;
    if !(a.time.is_finite() && a.time > 0.0 && a.time <= 86_400.0) {
        return Err(Error::Usage(format!(
            "-t {} is out of range: (0, 86400] seconds",
            a.time
        )));
    }
    p.duration_ms = (a.time * 1000.0).round().max(1.0) as u32;
    if a.reverse {
        only_where_the_client_sends(&a.s, "bench --reverse")?;
        p.flags |= FLAG_REVERSE;
    }
    let cfg = config(&a.s, remote.addr, p)?;
    let s = with_far_end(&a.s, cfg, &remote.login, Some("."), |cfg, _| {
        client::bench(cfg)
    })?;
    print_summary(&s, &a.s);
    Ok(())
}

pub fn send(a: SendArgs, m: Option<&clap::ArgMatches>) -> Result<()> {
    stop_on_signals();
    let (dest, sources) = a.paths.split_last().expect("clap requires two paths");
    let remote = target::parse(dest, true).map_err(Error::Usage)?;
    let mut p = params(&a.s, Kind::Send)?;
    if a.resume {
        p.flags |= FLAG_RESUME;
    }
    let mut cfg = config(&a.s, remote.addr, p)?;
    cfg.0.sync = a.sync.options(m, a.s.verbose || a.s.json)?;
    let sources: Vec<PathBuf> = sources.iter().map(PathBuf::from).collect();
    let dest = remote.path.as_deref().unwrap_or("");
    let (root, below) = bootstrap::root_and_path(dest);
    // A server we start has the path's root as its root; a running one has a root of its own.
    let s = with_far_end(&a.s, cfg, &remote.login, Some(&root), |cfg, ours| {
        if !ours {
            below_root(dest, &cfg.target)?;
        }
        client::send(cfg, &sources, if ours { &below } else { dest })
    })?;
    print_summary(&s, &a.s);
    Ok(())
}

pub fn get(a: GetArgs, m: Option<&clap::ArgMatches>) -> Result<()> {
    stop_on_signals();
    if a.sync.copy_links {
        return Err(Error::Usage(
            "--copy-links is for send: a server sends links as links and never follows one".into(),
        ));
    }
    let (local, remotes) = a.paths.split_last().expect("clap requires two paths");
    let mut first: Option<target::Remote> = None;
    let mut paths = Vec::new();
    for r in remotes {
        let remote = target::parse(r, true).map_err(Error::Usage)?;
        if first.as_ref().is_some_and(|f| f.addr != remote.addr) {
            return Err(Error::Usage(
                "every PATH of one get must come from the same server".into(),
            ));
        }
        paths.push(remote.path.clone().expect("parse with_path returns a path"));
        first.get_or_insert(remote);
    }
    let remote = first.expect("at least one remote");
    only_where_the_client_sends(&a.s, "get")?;
    let mut p = params(&a.s, Kind::Get)?;
    if a.resume {
        p.flags |= FLAG_RESUME;
    }
    let split: Vec<(String, String)> = paths.iter().map(|p| bootstrap::root_and_path(p)).collect();
    let root = split
        .iter()
        .all(|(r, _)| *r == split[0].0)
        .then(|| split[0].0.clone());
    let below: Vec<String> = split.into_iter().map(|(_, b)| b).collect();
    let mut cfg = config(&a.s, remote.addr.clone(), p)?;
    cfg.0.sync = a.sync.options(m, a.s.verbose || a.s.json)?;
    let local = PathBuf::from(local);
    let s = with_far_end(&a.s, cfg, &remote.login, root.as_deref(), |cfg, ours| {
        if !ours {
            paths.iter().try_for_each(|p| below_root(p, &cfg.target))?;
        }
        client::get(cfg, if ours { &below } else { &paths }, &local)
    })?;
    print_summary(&s, &a.s);
    Ok(())
}

fn limits(a: &ServeArgs) -> Result<server::Limits> {
    if !(a.handshake_timeout.is_finite() && a.handshake_timeout > 0.0) {
        return Err(Error::Usage(
            "--handshake-timeout must be above 0 seconds".into(),
        ));
    }
    if a.max_connections == 0 || a.max_unauthenticated == 0 || a.max_files == 0 || a.max_blocks == 0
    {
        return Err(Error::Usage(
            "--max-connections, --max-unauthenticated, --max-files and --max-blocks must be above 0"
                .into(),
        ));
    }
    if a.idle_timeout < 3 * braid::session::conn::KEEPALIVE.as_secs() {
        return Err(Error::Usage(format!(
            "--idle-timeout {} is too short: clients that wait say so every {} s; at least {}",
            a.idle_timeout,
            braid::session::conn::KEEPALIVE.as_secs(),
            3 * braid::session::conn::KEEPALIVE.as_secs()
        )));
    }
    // SAFETY: geteuid has no preconditions.
    if a.keep_owners && unsafe { libc::geteuid() } != 0 {
        return Err(Error::Usage(
            "--keep-owners needs a server that runs as root: no other user may give files owners"
                .into(),
        ));
    }
    Ok(server::Limits {
        idle: Duration::from_secs(a.idle_timeout),
        manifests: usize::try_from(a.max_manifests).unwrap_or(usize::MAX),
        connections: a.max_connections,
        unauthenticated: a.max_unauthenticated,
        handshake: Duration::from_secs_f64(a.handshake_timeout),
        manifest: braid::session::ManifestLimits {
            files: a.max_files,
            bytes: usize::try_from(a.max_manifest).unwrap_or(usize::MAX),
        },
        blocks: a.max_blocks,
        partial_ttl: Duration::from_secs(a.partial_ttl.saturating_mul(3600)),
        links: !a.refuse_links,
        owners: a.keep_owners,
    })
}

pub fn serve(a: ServeArgs) -> Result<()> {
    stop_on_signals();
    let token = match token(&a.token_file)? {
        Some(t) => t,
        None => {
            let t = Token::generate()?;
            braid::errln!(
                "braid serve: token {} (clients: export BRAID_TOKEN={})",
                t.as_str(),
                t.as_str()
            );
            t
        }
    };
    let window = a.window.map(|w| w as usize);
    if let Some(w) = window.and_then(braid::session::window_warning) {
        braid::errln!("braid serve: warning: {w}");
    }
    let limits = limits(&a)?;
    let mut listen = a.listen;
    if a.listen_reached {
        let said = std::env::var("SSH_CONNECTION").map_err(|_| {
            Error::Usage("--listen-reached needs $SSH_CONNECTION, which sshd sets".into())
        })?;
        listen = SocketAddr::new(bootstrap::reached_addr(&said).map_err(Error::Usage)?, 0);
    }
    let ports: Vec<u16> = match a.port_range {
        Some(r) => (r.low..=r.high).collect(),
        None => vec![listen.port()],
    };
    let cancel = cancel();
    let config = |port: u16| server::Config {
        listen: SocketAddr::new(listen.ip(), port),
        root: a.root.clone(),
        token: token.clone(),
        sock: SocketOptions { window },
        pin_dir: a.pin_dir.clone(),
        output: if a.json { Output::Json } else { Output::Human },
        once: a.once,
        wait: a.wait.map(Duration::from_secs),
        limit_bps: a.limit,
        allow_plain: a.allow_plain,
        cancel: cancel.clone(),
        limits: limits.clone(),
    };
    // The first port of the range that is free; a port in use is no error while others are left.
    let mut bound = Err(Error::Usage("an empty port range".into()));
    for &port in &ports {
        bound = Server::bind(config(port));
        match &bound {
            Err(e) if ports.len() > 1 && e.is_addr_in_use() => continue,
            _ => break,
        }
    }
    let srv = match bound {
        Err(e) if ports.len() > 1 && e.is_addr_in_use() => {
            return Err(Error::Usage(format!(
                "every port of --port-range {} is in use on {}",
                a.port_range.expect("a range"),
                listen.ip()
            )))
        }
        other => other?,
    };
    braid::errln!("braid serve: listening on {}", srv.local_addr());
    srv.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("64k").unwrap(), 65536);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert!(parse_size("12x").unwrap_err().contains("suffix"));
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn fair_shares() {
        assert_eq!(parse_fair_share("0").unwrap(), 0);
        assert_eq!(parse_fair_share("0.0").unwrap(), 0);
        assert_eq!(parse_fair_share("1").unwrap(), 1000);
        assert_eq!(parse_fair_share("2.5").unwrap(), 2500);
        let e = parse_fair_share("0.5").unwrap_err();
        assert!(
            e.contains("fair share 0.5") && e.contains("yield entirely"),
            "{e}"
        );
        assert!(parse_fair_share("-1").unwrap_err().contains("out of range"));
        assert!(parse_fair_share("many")
            .unwrap_err()
            .contains("not a number"));
        assert!(parse_fair_share("inf")
            .unwrap_err()
            .contains("not a number"));
    }
}
