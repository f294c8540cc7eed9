//! The handshake, and the sockets of a session: connecting, attaching, and
//! giving each sending socket its congestion control.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Duration;

use braid_cc::{Controls, SocketSettings};
use braid_wire::{auth, FileEntry, Message, VERSION};
use socket2::{Domain, Socket, Type};

use crate::conn::Conn;
use crate::error::{Code, Error, Result};
use crate::plan::StreamControl;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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
        Ok(Token(crate::receive::hex(&raw).into_bytes()))
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

/// Client side: proves the token, checks the server's proof, returns the session key.
pub fn client_handshake(conn: &mut Conn, token: &Token) -> Result<[u8; 32]> {
    let nonce_c: [u8; 16] = random()?;
    conn.send(&Message::Hello {
        version: VERSION,
        nonce: nonce_c,
    })?;
    let nonce_s = match conn.recv()? {
        Message::Challenge { version, nonce } if version == VERSION => nonce,
        Message::Challenge { version, .. } => {
            return Err(Error::Protocol(format!(
                "the server speaks protocol {version}, this braid {VERSION}"
            )))
        }
        m => return Err(unexpected("a challenge", &m)),
    };
    conn.send(&Message::Proof {
        mac: auth::client_proof(&token.0, &nonce_c, &nonce_s),
    })?;
    match conn.recv() {
        Ok(Message::Welcome { mac })
            if auth::verify(&auth::server_proof(&token.0, &nonce_c, &nonce_s), &mac) =>
        {
            Ok(auth::session_key(&token.0, &nonce_c, &nonce_s))
        }
        Ok(Message::Welcome { .. }) => Err(Error::Auth(format!(
            "{} does not hold our token",
            conn.r.peer
        ))),
        Ok(m) => Err(unexpected("a welcome", &m)),
        Err(Error::Remote { code, message }) if code == Code::Auth as u16 => {
            Err(Error::Auth(message))
        }
        Err(e) => Err(e),
    }
}

/// Server side, after the client's `Hello`.
pub fn server_handshake(
    conn: &mut Conn,
    token: &Token,
    version: u16,
    nonce_c: [u8; 16],
) -> Result<[u8; 32]> {
    if version != VERSION {
        let e = Error::Protocol(format!(
            "the client speaks protocol {version}, this server {VERSION}"
        ));
        conn.w.send(&Message::Error {
            code: Code::Version as u16,
            message: e.to_string(),
        })?;
        return Err(e);
    }
    let nonce_s: [u8; 16] = random()?;
    conn.send(&Message::Challenge {
        version: VERSION,
        nonce: nonce_s,
    })?;
    match conn.recv()? {
        Message::Proof { mac }
            if auth::verify(&auth::client_proof(&token.0, &nonce_c, &nonce_s), &mac) => {}
        Message::Proof { .. } => {
            let e = Error::Auth(format!("{} presented a wrong token", conn.r.peer));
            conn.w.send(&Message::Error {
                code: Code::Auth as u16,
                message: "wrong token".into(),
            })?;
            return Err(e);
        }
        m => return Err(unexpected("a proof", &m)),
    }
    conn.send(&Message::Welcome {
        mac: auth::server_proof(&token.0, &nonce_c, &nonce_s),
    })?;
    Ok(auth::session_key(&token.0, &nonce_c, &nonce_s))
}

pub(crate) fn unexpected(wanted: &str, got: &Message) -> Error {
    let name = format!("{got:?}");
    let name = name.split([' ', '(', '{']).next().unwrap_or("?").to_owned();
    Error::Protocol(format!("expected {wanted}, got {name}"))
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
    sock.connect_timeout(&addr.into(), CONNECT_TIMEOUT)
        .map_err(|e| Error::connect(format!("connecting to {addr}"), e))?;
    Ok(sock.into())
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
        braid_cc::set_congestion_control(sock.as_fd(), cc).map_err(|e| {
            Error::Usage(format!(
                "congestion control {cc:?} cannot be set ({e}); is it in /proc/sys/net/ipv4/tcp_available_congestion_control? \
                 braid's own controls need `braid cc install`"
            ))
        })?;
    }
    Ok(())
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
/// `stream`; `counter` is new for every attach of the session.
pub fn attach(
    stream: TcpStream,
    session: u64,
    index: u16,
    counter: u64,
    key: &[u8; 32],
) -> Result<Conn> {
    let _ = stream.set_nodelay(false);
    let mut conn = Conn::new(stream).map_err(|e| Error::io("cloning a socket", e))?;
    conn.send(&Message::Attach {
        session,
        stream: index,
        counter,
        mac: auth::attach_proof(key, session, index, counter),
    })?;
    match conn.recv()? {
        Message::Accepted { session: s } if s == session => Ok(conn),
        m => Err(unexpected("the stream's acceptance", &m)),
    }
}

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
