//! A session as it runs: here the handshake, and the sockets of a session
//! (connecting, attaching, giving each sending socket its congestion
//! control); `conn` frames and sealed records on a socket; `client` and
//! `server` each do their half of the opening exchange; `driver` runs one
//! session's streams and loop, `engine` the stream lives and the control
//! loops; `send` and `receive` are each end's files; `bench` the memory
//! mode; `pacer` the rate limit; `bootstrap` the far end started over ssh;
//! `sync` rsync's ways with what the receiver has (filters, --update,
//! --checksum, --dry-run, --delete).

pub mod bench;
pub mod bootstrap;
pub mod client;
pub mod conn;
pub mod driver;
pub mod engine;
pub mod pacer;
pub mod receive;
pub mod send;
pub mod server;
pub mod stamp;
pub mod sync;

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use braid_cc::{Controls, SocketSettings};
use braid_wire::seal::{Channel, Keys, Offer, Suite};
use braid_wire::{auth, FileEntry, Message, VERSION};
use socket2::{Domain, Socket, Type};

use crate::error::{Code, Error, Result};
use crate::proto::steer::StreamControl;
use crate::proto::unexpected;
use crate::session::conn::{Conn, Welcome};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A server answers a Hello at once; a client waits this long for what it
/// says in the clear (the time a server gives a client to prove the token,
/// `server::Limits`), so a listener that accepts and says nothing does not
/// hold it for ever.
const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// Before a peer proves the token, frames are at most this large (a Hello,
/// a Challenge, a Proof, a Welcome and an Attach are under 60 bytes, an
/// Error a sentence).
pub const UNAUTHENTICATED_FRAME: u32 = 1024;

/// The secret both ends share; it never crosses the wire.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl Token {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self> {
        let bytes = bytes.into();
        if bytes.len() < 8 {
            return Err(Error::Usage("a token must be at least 8 bytes".into()));
        }
        Ok(Token(bytes))
    }

    /// A fresh random token, as hex, for `braid serve` to print.
    pub fn generate() -> Result<Self> {
        let raw: [u8; 16] = random()?;
        Ok(Token(crate::files::treehash::hex(&raw).into_bytes()))
    }

    pub fn as_str(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

pub(crate) fn random<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::getrandom(&mut b).map_err(|e| {
        Error::io(
            "reading the system's random source",
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(b)
}

/// What a handshake agreed: the session's key and how its records are sealed.
#[derive(Clone, Copy)]
pub struct Agreed {
    pub key: [u8; 32],
    pub suite: Suite,
}

impl Agreed {
    /// The keys of one of the session's connections, at the client or the server.
    pub fn keys(&self, channel: Channel, client: bool) -> Keys {
        Keys::new(&self.key, self.suite, channel, client)
    }
}

/// Client side: proves the token and offers how to seal (`plain`: the user
/// asked for an unsealed session), chooses the suite from its offer and the
/// server's announcement as the server does, and seals what it sends from
/// here on, so the session's first message follows the proof without waiting
/// (a round trip sooner); what it reads is sealed once the server's
/// `Welcome` proves the token too (the connection's first read,
/// `Conn::seal_awaiting`). An unsealed session waits for the Welcome here:
/// nothing crosses in the clear before the server proved the token.
pub fn client_handshake(conn: &mut Conn, token: &Token, plain: bool) -> Result<Agreed> {
    let nonce_c: [u8; 16] = random()?;
    conn.r.set_limit(UNAUTHENTICATED_FRAME);
    conn.send(&Message::Hello {
        version: VERSION,
        nonce: nonce_c,
    })?;
    conn.r.set_deadline(Some(Instant::now() + HELLO_WITHIN));
    let (nonce_s, suites) = match conn.recv() {
        Ok(Message::Challenge {
            version,
            nonce,
            suites,
        }) if version == VERSION => (nonce, Offer(suites)),
        Ok(Message::Challenge { version, .. }) => {
            return Err(Error::Protocol(format!(
                "the server speaks protocol {version}, this braid {VERSION}: \
                 run the same version of braid at both ends"
            )))
        }
        Ok(m) => return Err(unexpected("a challenge", &m)),
        Err(Error::Remote { code, message }) if code == Code::Version as u16 => {
            return Err(Error::Protocol(format!(
                "{message}: run the same version of braid at both ends"
            )))
        }
        Err(e) if e.is_timeout() => {
            return Err(Error::connect(
                format!("waiting for {} to answer braid's hello", conn.r.peer),
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "no answer within {} s: is a braid server listening there?",
                        HELLO_WITHIN.as_secs()
                    ),
                ),
            ))
        }
        Err(e) => return Err(e),
    };
    let offer = Offer::here(plain);
    let Some(suite) = offer.choose(suites) else {
        let e = Error::Remote {
            code: Code::BadRequest as u16,
            message: no_suite(offer).into(),
        };
        conn.send_error(&e);
        return Err(e);
    };
    conn.send(&Message::Proof {
        mac: auth::client_proof(&token.0, &nonce_c, &nonce_s, offer.0, suites.0),
        offer: offer.0,
    })?;
    let agreed = Agreed {
        key: auth::session_key(&token.0, &nonce_c, &nonce_s),
        suite,
    };
    let keys = agreed.keys(Channel::Control, true);
    let welcome = Welcome {
        mac: auth::server_proof(&token.0, &nonce_c, &nonce_s, offer.0, suites.0, suite as u8),
        suite,
        open: keys.recv,
    };
    conn.seal_awaiting(keys.send, welcome);
    if suite == Suite::Plain {
        conn.r.await_welcome()?;
    }
    // From here the session's rule for silence bounds every wait, the
    // Welcome's too (`client::open`).
    conn.r.set_deadline(None);
    Ok(agreed)
}

/// Why a client's offer and a server's suites have no suite in common.
fn no_suite(offer: Offer) -> &'static str {
    if offer.asks_plain() {
        "the client asked for an unsealed session (--plain), which this server does not \
         allow (braid serve --allow-plain)"
    } else {
        "the client offers no way of sealing that this server knows"
    }
}

/// Server side, after the client's `Hello`: announces how it can seal
/// (`allow_plain`: this server consents to unsealed sessions a client asks
/// for), checks the client's proof, proves the token, and seals the
/// connection with the suite both ends chose.
pub fn server_handshake(
    conn: &mut Conn,
    token: &Token,
    version: u16,
    nonce_c: [u8; 16],
    allow_plain: bool,
) -> Result<Agreed> {
    if version != VERSION {
        let e = Error::Protocol(format!(
            "the client speaks protocol {version}, this server {VERSION}"
        ));
        conn.w.send(&Message::Error {
            code: Code::Version as u16,
            message: format!("the server speaks protocol {VERSION}, the client {version}"),
        })?;
        return Err(e);
    }
    let nonce_s: [u8; 16] = random()?;
    let suites = Offer::here(allow_plain);
    conn.send(&Message::Challenge {
        version: VERSION,
        nonce: nonce_s,
        suites: suites.0,
    })?;
    let offer = match conn.recv()? {
        Message::Proof { mac, offer }
            if auth::verify(
                &auth::client_proof(&token.0, &nonce_c, &nonce_s, offer, suites.0),
                &mac,
            ) =>
        {
            Offer(offer)
        }
        Message::Proof { .. } => {
            let e = Error::Auth(format!("{} presented a wrong token", conn.r.peer));
            conn.w.send(&Message::Error {
                code: Code::Auth as u16,
                message: "wrong token".into(),
            })?;
            return Err(e);
        }
        m => return Err(unexpected("a proof", &m)),
    };
    let Some(suite) = offer.choose(suites) else {
        return conn.tell(Err(Error::refused(Code::BadRequest, no_suite(offer))));
    };
    conn.send(&Message::Welcome {
        mac: auth::server_proof(&token.0, &nonce_c, &nonce_s, offer.0, suites.0, suite as u8),
        suite: suite as u8,
    })?;
    let agreed = Agreed {
        key: auth::session_key(&token.0, &nonce_c, &nonce_s),
        suite,
    };
    conn.seal(agreed.keys(Channel::Control, false));
    Ok(agreed)
}

/// Resolves HOST:PORT, the first address that answers wins.
pub fn resolve(target: &str) -> Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = target
        .to_socket_addrs()
        .map_err(|e| Error::connect(format!("resolving {target}"), e))?
        .collect();
    if addrs.is_empty() {
        return Err(Error::Usage(format!("{target} resolves to no address")));
    }
    Ok(addrs)
}

/// Socket options a session applies to every stream.
#[derive(Clone, Debug, Default)]
pub struct SocketOptions {
    /// SO_SNDBUF/SO_RCVBUF in bytes; `None` leaves the kernel's autotuning on.
    pub window: Option<usize>,
}

/// Connects one stream; `control` is set before connecting when this end sends.
pub fn connect(
    addr: SocketAddr,
    opts: &SocketOptions,
    control: Option<(&StreamControl, Option<&Controls>)>,
) -> Result<TcpStream> {
    let sock = stream_socket(addr, opts, control)?;
    sock.connect_timeout(&addr.into(), CONNECT_TIMEOUT)
        .map_err(|e| Error::connect(format!("connecting to {addr}"), e))?;
    Ok(sock.into())
}

/// A stream's socket with its options and control, not yet connected.
fn stream_socket(
    addr: SocketAddr,
    opts: &SocketOptions,
    control: Option<(&StreamControl, Option<&Controls>)>,
) -> Result<Socket> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)
        .map_err(|e| Error::io("creating a TCP socket", e))?;
    if let Some(w) = opts.window {
        sock.set_send_buffer_size(w)
            .map_err(|e| Error::io("setting SO_SNDBUF", e))?;
        sock.set_recv_buffer_size(w)
            .map_err(|e| Error::io("setting SO_RCVBUF", e))?;
    }
    if let Some((c, controls)) = control {
        apply_control(&sock, c, controls)?;
    }
    Ok(sock)
}

/// A stream's connection begun before its session is accepted, so that its
/// TCP handshake runs during the control connection's last round trip
/// rather than after it (`begin_connect`, then `finish`).
pub struct Dialing {
    sock: Socket,
    began: std::time::Instant,
}

/// Begins connecting one stream as [`connect`] does, without waiting.
pub fn begin_connect(
    addr: SocketAddr,
    opts: &SocketOptions,
    control: Option<(&StreamControl, Option<&Controls>)>,
) -> Result<Dialing> {
    let sock = stream_socket(addr, opts, control)?;
    sock.set_nonblocking(true)
        .map_err(|e| Error::io("making a socket non-blocking", e))?;
    match sock.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(Error::connect(format!("connecting to {addr}"), e)),
    }
    Ok(Dialing {
        sock,
        began: std::time::Instant::now(),
    })
}

impl Dialing {
    /// The connection once its handshake is done (within the time a
    /// [`connect`] has); `None` where it cannot serve: the handshake failed,
    /// or the server already gave up on it. A server says nothing on a data
    /// connection before its Attach, so anything to read there (its close,
    /// after its limit for a handshake) is that.
    pub fn finish(self) -> Option<TcpStream> {
        let left = CONNECT_TIMEOUT.saturating_sub(self.began.elapsed());
        if !conn::writable(&self.sock, left) || !matches!(self.sock.take_error(), Ok(None)) {
            return None;
        }
        if conn::readable(&self.sock, Duration::ZERO) {
            return None;
        }
        self.sock.set_nonblocking(false).ok()?;
        Some(self.sock.into())
    }
}

/// Gives a socket its control. Settings go in first, so that the control's
/// init (which reads them) sees them, also on an accepted socket whose
/// control is switched after the handshake.
pub fn apply_control(
    sock: impl AsFd,
    c: &StreamControl,
    controls: Option<&Controls>,
) -> Result<()> {
    if c.settings != SocketSettings::default() {
        let controls = controls
            .ok_or_else(|| Error::Usage("per-stream settings need braid's controls".into()))?;
        controls.apply(sock.as_fd(), c.settings).map_err(|e| {
            Error::io(
                "applying braid-cc settings",
                std::io::Error::other(e.to_string()),
            )
        })?;
    }
    if let Some(cc) = &c.cc {
        // A peer may name the control; a name the kernel does not have is
        // refused here, before a privileged setsockopt could load a module
        // called tcp_<name> for it.
        check_control(cc)?;
        braid_cc::set_congestion_control(sock.as_fd(), cc).map_err(|e| {
            Error::Usage(format!(
                "congestion control {cc:?} cannot be set ({e}); is it in /proc/sys/net/ipv4/tcp_available_congestion_control? \
                 braid's own controls need `braid cc install`"
            ))
        })?;
    }
    Ok(())
}

/// Refuses a congestion control this kernel does not have.
pub fn check_control(cc: &str) -> Result<()> {
    let known = braid_cc::available_controls().unwrap_or_default();
    if known.iter().any(|k| k == cc) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "congestion control {cc:?} is not among this kernel's ({}); braid's own controls \
         need `braid cc install`",
        known.join(" ")
    )))
}

/// The control auto's streams run when none is named: CUBIC, Linux's default
/// and the loss-based growth auto's steer is built on (a queue that an ask can
/// drain, one ordinary flow's share beside others), where this kernel has it
/// and this process may set it; else the host's default (None). A host whose
/// default is another control (BBR, say) still gets what the steer expects.
pub fn auto_control() -> Option<String> {
    const PREFERRED: &str = "cubic";
    // The kernel decides who may set which control (tcp_allowed_congestion_control,
    // CAP_NET_ADMIN): ask it on a socket of our own rather than guess.
    let probe = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    braid_cc::set_congestion_control(probe.as_fd(), PREFERRED).ok()?;
    Some(PREFERRED.to_owned())
}

/// braid-cc's maps, when a session's controls need per-socket settings.
pub fn open_controls(controls: &[StreamControl], pin_dir: &Path) -> Result<Option<Controls>> {
    if controls
        .iter()
        .all(|c| c.settings == SocketSettings::default())
    {
        return Ok(None);
    }
    Controls::open(pin_dir)
        .map(Some)
        .map_err(|e| Error::Usage(format!("this mode needs braid's controls: {e}")))
}

/// Warns when a requested window is above what the kernel will grant.
pub fn window_warning(window: usize) -> Option<String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
    };
    let (wmax, rmax) = (
        read("/proc/sys/net/core/wmem_max")?,
        read("/proc/sys/net/core/rmem_max")?,
    );
    let cap = wmax.min(rmax);
    (window > cap).then(|| {
        format!(
            "a window of {window} bytes is capped by net.core.wmem_max={wmax} / rmem_max={rmax}; \
             raise them (sysctl -w) or leave --window out for autotuning"
        )
    })
}

/// Client side: a data connection that joins session `session` as
/// `stream`; `counter` is new for every attach of the session. The attach
/// crosses in the clear with its proof; the server's acceptance is the first
/// sealed record, with keys of this connection alone.
///
/// A stream that sends (`sends`) does not wait for the acceptance: its
/// blocks follow the attach at once and the acceptance is checked as the
/// first frame back, which saves a round trip at the start of every stream
/// (on a long path, a tenth of a second of the first one's slow start). A
/// refusal then ends the stream at its first read, as a lost one, and its
/// blocks go again as any lost stream's do; a server that refuses reads
/// none of them.
pub fn attach(
    stream: TcpStream,
    session: u64,
    index: u16,
    counter: u64,
    agreed: &Agreed,
    sends: bool,
) -> Result<Conn> {
    let _ = stream.set_nodelay(false);
    let mut conn = Conn::new(stream).map_err(|e| Error::io("cloning a socket", e))?;
    conn.send(&Message::Attach {
        session,
        stream: index,
        counter,
        mac: auth::attach_proof(&agreed.key, session, index, counter),
    })?;
    conn.r.set_limit(DATA_FRAME);
    conn.seal(agreed.keys(
        Channel::Data {
            stream: index,
            counter,
        },
        true,
    ));
    conn.r.expect_acceptance(session);
    if !sends {
        conn.r.await_acceptance()?;
    }
    Ok(conn)
}

/// The largest frame a data connection takes: its frames are block headers,
/// acknowledgements, a detach or an error, so a peer cannot make one hold a
/// large frame.
pub const DATA_FRAME: u32 = 64 << 10;

/// A manifest frame carries at most this many bytes of entries; more go in
/// further frames.
const MANIFEST_CHUNK: usize = 1 << 20;

/// Sends `files` as one or more `Manifest` frames.
pub fn send_manifest(conn: &mut Conn, files: &[FileEntry]) -> Result<()> {
    let mut start = 0;
    loop {
        let (mut end, mut bytes) = (start, 0);
        while end < files.len()
            && (end == start || bytes + files[end].path.len() + 22 <= MANIFEST_CHUNK)
        {
            bytes += files[end].path.len() + 22;
            end += 1;
        }
        conn.send_or_reason(&Message::Manifest {
            files: files[start..end].to_vec(),
            more: end < files.len(),
        })?;
        if end >= files.len() {
            return Ok(());
        }
        start = end;
    }
}

/// What a peer may list in one manifest.
#[derive(Clone, Copy, Debug)]
pub struct ManifestLimits {
    pub files: usize,
    /// Bytes of the entries (their paths and fixed fields) over all frames.
    pub bytes: usize,
}

impl Default for ManifestLimits {
    fn default() -> Self {
        ManifestLimits {
            files: 1_000_000,
            bytes: 256 << 20,
        }
    }
}

/// Receives a manifest sent by [`send_manifest`], refusing one past `limits`.
pub fn recv_manifest(conn: &mut Conn, limits: ManifestLimits) -> Result<Vec<FileEntry>> {
    let mut files = Vec::new();
    let mut bytes = 0usize;
    loop {
        match conn.recv()? {
            Message::Manifest {
                files: mut part,
                more,
            } => {
                bytes += part.iter().map(|f| f.path.len() + 22).sum::<usize>();
                files.append(&mut part);
                if files.len() > limits.files {
                    return Err(Error::refused(
                        Code::TooLarge,
                        format!(
                            "the manifest lists more than {} files, this end's limit (--max-files); \
                             send the tree in parts",
                            limits.files
                        ),
                    ));
                }
                if bytes > limits.bytes {
                    return Err(Error::refused(
                        Code::TooLarge,
                        format!(
                            "the manifest passes {} bytes, this end's limit (--max-manifest); \
                             send the tree in parts",
                            limits.bytes
                        ),
                    ));
                }
                if !more {
                    return Ok(files);
                }
            }
            m => return Err(unexpected("the manifest", &m)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn a_connection_begun_early_is_finished_once_its_handshake_is_done() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let early =
            begin_connect(l.local_addr().unwrap(), &SocketOptions::default(), None).unwrap();
        let (mut there, _) = l.accept().unwrap();
        let mut s = early.finish().expect("connected");
        // A blocking stream from here on, as a dialled one.
        s.write_all(b"attach").unwrap();
        let mut got = [0u8; 6];
        there.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"attach");
        there.write_all(b"ok").unwrap();
        let mut back = [0u8; 2];
        s.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"ok");
    }

    // The server says nothing on a data connection before the Attach: a
    // connection it closed, or one that never connected, is not handed out.
    #[test]
    fn a_connection_begun_early_that_the_server_closed_or_refused_is_not_used() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let early = begin_connect(addr, &SocketOptions::default(), None).unwrap();
        drop(l.accept().unwrap());
        assert!(
            conn::readable(&early.sock, Duration::from_secs(5)),
            "the close arrives"
        );
        assert!(early.finish().is_none(), "closed by the server");

        drop(l);
        // Refused at once, or once the handshake is answered.
        if let Ok(early) = begin_connect(addr, &SocketOptions::default(), None) {
            assert!(early.finish().is_none(), "refused");
        }
    }
}
