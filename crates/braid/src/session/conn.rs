//! Frames over a TCP stream: the I/O half of braid-wire.
//!
//! A connection starts in the clear for its handshake (Hello to Welcome on a
//! control connection, Attach on a data connection) and is then sealed
//! ([`Conn::seal`]; a client seals what it sends right behind its proof and
//! what it reads once the server's `Welcome` checks, [`Conn::seal_awaiting`]):
//! from there on every byte either way travels in the
//! records of `braid_wire::seal`, frames and block data alike, and a record
//! that does not open ends the connection with [`Error::Tampered`] before
//! anything it carried is used.

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use braid_wire::seal::{Keys, Opened, Opener, SealError, Sealer, DATA, DATA_AT, END, MAX_RECORD};
use braid_wire::{auth, decode, encode, Message, MAX_FRAME};

use crate::error::{Code, Error, Result};
use crate::path::dispersion::Dispersion;
use crate::session::stamp::Stamper;

/// One connection, read through a buffer and written frame by frame.
pub struct Conn {
    pub r: FrameReader,
    pub w: FrameWriter,
}

/// A guess at the kind of server that began its answer with `b`.
fn what_it_is(b: &[u8]) -> &'static str {
    if b.starts_with(b"SSH-") {
        "looks like an ssh server and "
    } else if b.starts_with(b"HTTP/") || b.starts_with(b"<") {
        "looks like a web server and "
    } else if b.starts_with(b"\x16\x03") {
        "looks like a TLS server and "
    } else {
        ""
    }
}

/// Bytes as a user can read them: quoted text where they are printable
/// ASCII, else hex.
fn shown(b: &[u8]) -> String {
    let text = b
        .iter()
        .all(|&c| c.is_ascii_graphic() || c == b' ' || c == b'\r' || c == b'\n' || c == b'\t');
    if text {
        format!("{:?}", String::from_utf8_lossy(b))
    } else {
        let hex: Vec<String> = b.iter().map(|c| format!("{c:02x}")).collect();
        format!("with the bytes {}", hex.join(" "))
    }
}

/// How long an end waits on a session that says nothing, on any of its
/// connections, before it gives the session up (the server's is a limit of
/// its own). Far above any round trip, and several keepalives long.
pub const IDLE: Duration = Duration::from_secs(60);
/// An end with nothing else to say on the control connection for this long
/// says `Keepalive`: an end busy hashing or publishing is not silent.
pub const KEEPALIVE: Duration = Duration::from_secs(10);
/// A blocked read or write wakes this often to look at the session's silence.
const SLICE: Duration = Duration::from_secs(2);

/// A session's rule for silence: a read or write that has waited `limit`,
/// while the session heard nothing for as long on any connection, fails.
#[derive(Clone, Debug)]
pub struct Idle {
    pub heard: Arc<Heard>,
    pub limit: Duration,
}

impl Idle {
    pub fn new(limit: Duration) -> Idle {
        Idle {
            heard: Heard::new(),
            limit,
        }
    }

    /// A wait that began at `began` has lasted too long, and so has the silence.
    fn expired(&self, began: Instant) -> bool {
        began.elapsed() >= self.limit && self.heard.silent_for() >= self.limit
    }

    fn error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the peer said nothing for {} s on any of the session's connections",
                self.limit.as_secs()
            ),
        )
    }
}

/// When a session last heard from its peer, on any of its connections.
#[derive(Debug)]
pub struct Heard {
    base: Instant,
    /// Milliseconds after `base`.
    at: AtomicU64,
}

impl Heard {
    pub fn new() -> Arc<Heard> {
        Arc::new(Heard {
            base: Instant::now(),
            at: AtomicU64::new(0),
        })
    }

    fn touch(&self) {
        let ms = self.base.elapsed().as_millis() as u64;
        self.at.fetch_max(ms, Ordering::Relaxed);
    }

    /// How long since the peer was last heard.
    pub fn silent_for(&self) -> Duration {
        let at = Duration::from_millis(self.at.load(Ordering::Relaxed));
        self.base.elapsed().saturating_sub(at)
    }
}

/// The receiving half of a connection.
pub struct FrameReader {
    reader: BufReader<Wire>,
    /// `None` while the handshake's frames cross in the clear.
    open: Option<Opener>,
    /// The last record's body, opened in place; its unread data is `rec[at..end]`.
    rec: Vec<u8>,
    at: usize,
    end: usize,
    /// The peer's sealed end arrived: a clean end of the stream.
    ended: bool,
    frame: Vec<u8>,
    pub peer: String,
    /// The largest frame accepted: small until the peer has authenticated,
    /// and on data connections, which carry only small frames besides data.
    limit: u32,
    /// Reads fail once this passes (the whole handshake, not each read).
    deadline: Option<Instant>,
    idle: Option<Idle>,
    /// A data stream that sends before its acceptance arrives: the session
    /// its first frame must accept (see `session::attach`).
    accepting: Option<u64>,
    /// A client that sealed what it sends before the server proved the
    /// token: the `Welcome` its first frame must be.
    welcome: Option<Box<Welcome>>,
}

/// The server's `Welcome` a client awaits, and the records it opens.
pub struct Welcome {
    /// The server's proof over the handshake (`braid_wire::auth::server_proof`).
    pub mac: [u8; 32],
    /// The suite the client chose, which the server must name.
    pub suite: braid_wire::seal::Suite,
    pub open: Opener,
}

/// A connection's socket as its reader reads it: plainly, or with each read
/// stamped for the session's view of the bottleneck.
struct Wire {
    stream: TcpStream,
    stamper: Option<Stamper>,
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.stamper {
            Some(s) => s.read(&self.stream, buf),
            None => self.stream.read(buf),
        }
    }
}

/// A frame buffer grows by at most this much ahead of the bytes that came:
/// a header announcing 16 MiB costs 16 MiB only once they have arrived.
const GROW: usize = 1 << 20;

/// The sending half of a connection.
pub struct FrameWriter {
    writer: TcpStream,
    /// `None` while the handshake's frames cross in the clear.
    seal: Option<Sealer>,
    /// The record being filled: its data goes at `rec[DATA_AT..]`.
    rec: Vec<u8>,
    /// Data bytes in `rec` so far.
    fill: usize,
    /// A sealed record not wholly written yet (a bench's write that timed
    /// out): `rec[staged.0..staged.1]`.
    staged: (usize, usize),
    out: Vec<u8>,
    pub peer: String,
    idle: Option<Idle>,
    /// When a frame last went out whole: a keepalive is due `KEEPALIVE` after.
    last_sent: Instant,
}

/// Why reading the plaintext stream stopped.
enum Fault {
    Io(io::Error),
    Seal(SealError),
    /// The stream ended inside a record, or without the peer's sealed end.
    Cut(&'static str),
}

impl Conn {
    pub fn new(stream: TcpStream) -> io::Result<Self> {
        let peer = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "peer".into());
        let writer = stream.try_clone()?;
        Ok(Conn {
            r: FrameReader {
                reader: BufReader::with_capacity(
                    256 * 1024,
                    Wire {
                        stream,
                        stamper: None,
                    },
                ),
                open: None,
                rec: Vec::new(),
                at: 0,
                end: 0,
                ended: false,
                frame: Vec::new(),
                peer: peer.clone(),
                limit: MAX_FRAME,
                deadline: None,
                idle: None,
                accepting: None,
                welcome: None,
            },
            w: FrameWriter {
                writer,
                seal: None,
                rec: Vec::new(),
                fill: 0,
                staged: (0, 0),
                out: Vec::new(),
                peer,
                idle: None,
                last_sent: Instant::now(),
            },
        })
    }

    /// From now on a read or write that waits `idle.limit` while the session
    /// is silent as long fails, and whatever arrives here counts as heard.
    pub fn set_idle(&mut self, idle: &Idle) {
        self.r.idle = Some(idle.clone());
        self.w.idle = Some(idle.clone());
        if self.r.deadline.is_none() {
            let _ = self.stream().set_read_timeout(Some(SLICE));
        }
        let _ = self.stream().set_write_timeout(Some(SLICE));
        idle.heard.touch();
    }

    /// From now on everything either way is sealed with `keys`.
    pub fn seal(&mut self, keys: Keys) {
        self.r.open = Some(keys.recv);
        self.w.seal_with(keys.send);
    }

    /// From now on what this end sends is sealed with `send`; what it reads
    /// is once the peer's first frame is the `welcome` awaited, and until
    /// then nothing else is read.
    pub fn seal_awaiting(&mut self, send: Sealer, welcome: Welcome) {
        self.w.seal_with(send);
        self.r.welcome = Some(Box::new(welcome));
    }

    pub fn stream(&self) -> &TcpStream {
        &self.w.writer
    }

    pub fn send(&mut self, m: &Message) -> Result<()> {
        self.w.send(m)
    }

    pub fn recv(&mut self) -> Result<Message> {
        self.r.recv()
    }

    pub fn recv_opt(&mut self) -> Result<Option<Message>> {
        self.r.recv_opt()
    }

    /// Tells the peer why we stop; best effort, the connection may be gone.
    pub fn send_error(&mut self, e: &Error) {
        self.w.send_error(e)
    }

    /// Sends `m`; if the peer has closed the connection, what it said before
    /// closing (its `Error` frame) is the error rather than a broken pipe.
    pub fn send_or_reason(&mut self, m: &Message) -> Result<()> {
        match self.w.send(m) {
            Err(e @ Error::Connect { .. }) => {
                self.r
                    .set_deadline(Some(Instant::now() + Duration::from_secs(2)));
                let reason = match self.r.recv_opt() {
                    Ok(Some(Message::Error { code, message })) => Error::Remote { code, message },
                    // Its refusal of the handshake, met awaiting its Welcome.
                    Err(r @ (Error::Auth(_) | Error::Remote { .. })) => r,
                    _ => e,
                };
                self.r.set_deadline(None);
                Err(reason)
            }
            r => r,
        }
    }

    /// Passes `r` through, telling the peer first if it is an error.
    pub fn tell<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.send_error(e);
        }
        r
    }
}

impl FrameWriter {
    pub fn stream(&self) -> &TcpStream {
        &self.writer
    }

    /// From now on what this end sends is sealed with `s`.
    fn seal_with(&mut self, s: Sealer) {
        self.seal = Some(s);
        self.rec = vec![0; MAX_RECORD];
    }

    fn fail(&self, e: io::Error) -> Error {
        Error::connect(format!("sending to {}", self.peer), e)
    }

    pub fn send(&mut self, m: &Message) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        encode(m, &mut out);
        let sent = if self.seal.is_some() {
            self.put(&out).and_then(|_| self.flush())
        } else {
            self.writer.write_all(&out).map_err(|e| self.fail(e))
        };
        self.out = out;
        if sent.is_ok() {
            self.last_sent = Instant::now();
        }
        sent
    }

    /// Says `Keepalive` if nothing went out for `KEEPALIVE`.
    pub fn keepalive(&mut self) -> Result<()> {
        if self.last_sent.elapsed() >= KEEPALIVE {
            self.send(&Message::Keepalive)?;
        }
        Ok(())
    }

    /// When the next keepalive is due.
    pub fn keepalive_at(&self) -> Instant {
        self.last_sent + KEEPALIVE
    }

    /// Runs `work`, which does not touch this connection, and says
    /// `Keepalive` every `every` meanwhile, from a thread of its own: a long
    /// step before any message is due (a receiver checking a manifest of
    /// many files against its disk, a server walking the tree a get asks
    /// for) is not silence to the peer. A keepalive that cannot be sent
    /// stops them; the connection's next message meets the same error.
    pub fn speaking_while<T>(&mut self, every: Duration, work: impl FnOnce() -> T) -> T {
        use std::sync::mpsc::{channel, RecvTimeoutError};
        let (done, finished) = channel::<()>();
        std::thread::scope(|s| {
            let w = &mut *self;
            s.spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = finished.recv_timeout(every) {
                    if w.send(&Message::Keepalive).is_err() {
                        break;
                    }
                }
            });
            let out = work();
            drop(done);
            out
        })
    }

    /// Writes `rec[a..b]` whole. A write the peer does not take for long
    /// fails once the session has been silent as long (see [`Idle`]).
    fn write_rec(&mut self, a: usize, b: usize) -> Result<()> {
        let began = Instant::now();
        let mut at = a;
        while at < b {
            match self.writer.write(&self.rec[at..b]) {
                Ok(0) => return Err(self.fail(io::ErrorKind::WriteZero.into())),
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => match &self.idle {
                    Some(idle) if !idle.expired(began) => {}
                    Some(idle) => return Err(self.fail(idle.error())),
                    None => return Err(self.fail(e)),
                },
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(())
    }

    /// Sends bytes already encoded as frames, as they are (a hand-made
    /// frame, say), sealed as any frame is.
    pub fn send_encoded(&mut self, frames: &[u8]) -> Result<()> {
        if self.seal.is_none() {
            return self.writer.write_all(frames).map_err(|e| self.fail(e));
        }
        self.put(frames)?;
        self.flush()
    }

    /// Appends plaintext to the record being filled, sealing and writing
    /// each one that fills up.
    fn put(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let k = bytes.len().min(braid_wire::seal::MAX_DATA - self.fill);
            let at = DATA_AT + self.fill;
            self.rec[at..at + k].copy_from_slice(&bytes[..k]);
            self.fill += k;
            bytes = &bytes[k..];
            if self.fill == braid_wire::seal::MAX_DATA {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Seals what the record holds as one of kind `kind`, and stages it.
    fn seal_record(&mut self, kind: u8) -> Result<()> {
        let sealer = self
            .seal
            .as_mut()
            .expect("data frames cross only once the connection is sealed");
        let n = sealer
            .seal(&mut self.rec, kind, self.fill)
            .map_err(|e| Error::Protocol(format!("sealing for {}: {e}", self.peer)))?;
        self.fill = 0;
        self.staged = (0, n);
        Ok(())
    }

    /// Seals and writes whatever the record holds.
    fn flush(&mut self) -> Result<()> {
        if self.fill == 0 {
            return Ok(());
        }
        self.seal_record(DATA)?;
        let (a, b) = std::mem::take(&mut self.staged);
        self.write_rec(a, b)
    }

    /// Sends a frame and then `len` bytes of data, each piece of which
    /// `fill(piece, at)` writes straight into the record that carries it
    /// (`at` counts from the data's start): no copy of a block, and no buffer
    /// of a block's size. `fill` is handed the connection's socket too, to
    /// read its state between two records' writes. An error of `fill`'s is
    /// returned as it is (inner); the connection is then mid-frame and must
    /// be given up.
    pub fn send_block<E>(
        &mut self,
        header: &Message,
        len: usize,
        mut fill: impl FnMut(&mut [u8], u64, &TcpStream) -> std::result::Result<(), E>,
    ) -> Result<std::result::Result<(), E>> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        encode(header, &mut out);
        let put = self.put(&out);
        self.out = out;
        put?;
        let mut done = 0;
        while done < len {
            let k = (len - done).min(braid_wire::seal::MAX_DATA - self.fill);
            let at = DATA_AT + self.fill;
            if let Err(e) = fill(&mut self.rec[at..at + k], done as u64, &self.writer) {
                return Ok(Err(e));
            }
            self.fill += k;
            done += k;
            if self.fill == braid_wire::seal::MAX_DATA {
                self.flush()?;
            }
        }
        self.flush()?;
        Ok(Ok(()))
    }

    /// Seals a record of `n` zero bytes (a bench's data) for
    /// [`FrameWriter::write_staged`] to write.
    pub fn stage_zeros(&mut self, n: usize) -> Result<()> {
        debug_assert_eq!(self.staged.0, self.staged.1, "the last record is written");
        let n = n.min(braid_wire::seal::MAX_DATA);
        self.rec[DATA_AT..DATA_AT + n].fill(0);
        self.fill = n;
        self.seal_record(DATA)
    }

    /// One write of the staged record's rest: the bytes of it still to go,
    /// which is 0 once it is wholly written. A timeout leaves the rest staged.
    pub fn write_staged(&mut self) -> io::Result<usize> {
        let (a, b) = self.staged;
        if a < b {
            let k = self.writer.write(&self.rec[a..b])?;
            if k == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.staged.0 += k;
        }
        Ok(self.staged.1 - self.staged.0)
    }

    /// The clean end of this direction: the sealed end, so the peer can tell
    /// it from a connection cut short, then a half close. Behind a record cut
    /// short (a bench's last write) no end can follow: only the half close.
    pub fn finish(&mut self) {
        let whole = self.staged.0 == self.staged.1;
        if whole && self.seal.is_some() && self.seal_record(END).is_ok() {
            let (a, b) = std::mem::take(&mut self.staged);
            let _ = self.write_rec(a, b);
        }
        let _ = self.writer.shutdown(std::net::Shutdown::Write);
    }

    /// Tells the peer why we stop; best effort, the connection may be gone.
    pub fn send_error(&mut self, e: &Error) {
        let (code, message) = e.to_wire();
        let _ = self.send(&Message::Error { code, message });
    }
}

impl FrameReader {
    pub fn stream(&self) -> &TcpStream {
        &self.reader.get_ref().stream
    }

    /// From now on each read of this connection's socket counts its bytes'
    /// arrival in `window` (`path::dispersion`). Reads must follow the bytes
    /// promptly for it to see the bottleneck: a receiving stream's own.
    pub fn stamp(&mut self, window: Arc<Mutex<Dispersion>>) -> io::Result<()> {
        let wire = self.reader.get_mut();
        wire.stamper = Some(Stamper::new(&wire.stream, window)?);
        Ok(())
    }

    /// Plaintext received and not yet taken, and bytes read from the socket
    /// and not yet opened.
    pub fn buffered(&self) -> usize {
        (self.end - self.at) + self.reader.buffer().len()
    }

    /// Whether a message has begun to arrive within `timeout`.
    pub fn wait_readable(&self, timeout: Duration) -> bool {
        self.buffered() > 0 || readable(self.stream(), timeout)
    }

    /// As [`FrameReader::wait_readable`], and returns early (false) when
    /// `bell` rings.
    pub fn wait_readable_or(&self, bell: &Bell, timeout: Duration) -> bool {
        self.buffered() > 0 || readable_or(self.stream(), bell, timeout)
    }

    /// Frames above `limit` bytes are refused before any is read; an
    /// unauthenticated peer gets a small one.
    pub fn set_limit(&mut self, limit: u32) {
        self.limit = limit.min(MAX_FRAME);
    }

    /// Every read fails once `deadline` passes: a peer sending a byte now and
    /// then cannot hold a handshake open. `None`: no deadline.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
        if deadline.is_none() {
            let slice = self.idle.as_ref().map(|_| SLICE);
            let _ = self.reader.get_ref().stream.set_read_timeout(slice);
        }
    }

    /// For a loop that polls rather than reads: the session's silence, if a
    /// wait that began at `began` has lasted too long under its rule.
    pub fn idle_error(&self, began: Instant) -> Option<Error> {
        let idle = self.idle.as_ref()?;
        idle.expired(began)
            .then(|| Error::connect(format!("waiting for {}", self.peer), idle.error()))
    }

    /// One read of raw bytes, bounded by the deadline if there is one, else
    /// by the session's rule for silence if it has one.
    fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.reader.get_ref().stream.set_read_timeout(Some(left))?;
            return self.reader.read(buf);
        }
        let began = Instant::now();
        loop {
            match self.reader.read(buf) {
                Err(e) if timed_out(&e) => match &self.idle {
                    Some(idle) if !idle.expired(began) => {}
                    Some(idle) => return Err(idle.error()),
                    None => return Err(e),
                },
                r => return r,
            }
        }
    }

    /// Fills `buf` with raw bytes unless the stream ends first; returns how much came.
    fn fill_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut at = 0;
        while at < buf.len() {
            match self.read_raw(&mut buf[at..]) {
                Ok(0) => break,
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(at)
    }

    /// Reads and opens the next record; false at the peer's sealed end.
    fn next_record(&mut self) -> std::result::Result<bool, Fault> {
        let mut header = [0u8; 4];
        match self.fill_raw(&mut header).map_err(Fault::Io)? {
            0 => return Err(Fault::Cut("the connection ended without its sealed end")),
            4 => {}
            _ => return Err(Fault::Cut("the connection ended inside a record")),
        }
        let open = self.open.as_ref().expect("called once sealed");
        let len = open.body_len(header).map_err(Fault::Seal)?;
        let mut rec = std::mem::take(&mut self.rec);
        rec.resize(len, 0);
        let got = self.fill_raw(&mut rec);
        let opened = match got {
            Ok(k) if k == len => {
                let open = self.open.as_mut().expect("called once sealed");
                open.open(header, &mut rec).map_err(Fault::Seal)
            }
            Ok(_) => Err(Fault::Cut("the connection ended inside a record")),
            Err(e) => Err(Fault::Io(e)),
        };
        self.rec = rec;
        if let Some(idle) = &self.idle {
            idle.heard.touch();
        }
        match opened? {
            Opened::Data(r) => {
                (self.at, self.end) = (r.start, r.end);
                Ok(true)
            }
            Opened::End => {
                self.ended = true;
                Ok(false)
            }
        }
    }

    /// Makes sure some plaintext is at hand: false at the clean end.
    fn more(&mut self) -> std::result::Result<bool, Fault> {
        while self.at == self.end {
            if self.ended || !self.next_record()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Up to `buf.len()` bytes of plaintext: 0 only at the clean end.
    fn read_plain(&mut self, buf: &mut [u8]) -> std::result::Result<usize, Fault> {
        if self.open.is_none() {
            let n = loop {
                match self.read_raw(buf) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => break r.map_err(Fault::Io)?,
                }
            };
            return Ok(n);
        }
        if !self.more()? {
            return Ok(0);
        }
        let n = buf.len().min(self.end - self.at);
        buf[..n].copy_from_slice(&self.rec[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }

    /// Fills `buf` with plaintext unless the stream ends first; returns how much came.
    fn fill(&mut self, buf: &mut [u8]) -> std::result::Result<usize, Fault> {
        let mut at = 0;
        while at < buf.len() {
            match self.read_plain(&mut buf[at..]) {
                Ok(0) => break,
                Ok(n) => at += n,
                Err(Fault::Io(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(at)
    }

    fn error(&self, f: Fault) -> Error {
        match f {
            Fault::Io(e) if timed_out(&e) && e.get_ref().is_some() => {
                Error::connect(format!("waiting for {}", self.peer), e)
            }
            Fault::Io(e) if timed_out(&e) => Error::connect(
                format!("waiting for {}", self.peer),
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nothing arrived within the time allowed",
                ),
            ),
            Fault::Io(e) => Error::connect(format!("receiving from {}", self.peer), e),
            Fault::Seal(e) => Error::Tampered(format!("from {}: {e}", self.peer)),
            Fault::Cut(why) => Error::connect(
                format!("receiving from {}", self.peer),
                io::Error::new(io::ErrorKind::UnexpectedEof, why),
            ),
        }
    }

    /// The stream ended inside a frame: in the handshake a peer that does not
    /// speak the protocol; once sealed, a connection cut short (lost, as a
    /// dropped one is).
    fn cut_frame(&self) -> Error {
        if self.open.is_none() {
            return Error::Protocol(format!(
                "{} closed the connection inside a frame",
                self.peer
            ));
        }
        Error::connect(
            format!("receiving from {}", self.peer),
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection ended inside a frame, without its sealed end",
            ),
        )
    }

    /// The next message; a clean end of stream (the peer's sealed end, once
    /// sealed) is `Ok(None)`. A `Keepalive` is no message: it only counts as
    /// the peer heard from.
    pub fn recv_opt(&mut self) -> Result<Option<Message>> {
        loop {
            match self.recv_frame()? {
                Some(Message::Keepalive) => {}
                m => return Ok(m),
            }
        }
    }

    /// The peer's first frame must accept this stream into `session`:
    /// until it does, whatever else comes is an error, and its refusal is
    /// the peer's word.
    pub fn expect_acceptance(&mut self, session: u64) {
        self.accepting = Some(session);
    }

    /// Reads the acceptance [`FrameReader::expect_acceptance`] asked for,
    /// if it is still to come: a stream that waits for it calls this at
    /// once, one that sends meets it at its first read.
    pub fn await_acceptance(&mut self) -> Result<()> {
        let Some(session) = self.accepting.take() else {
            return Ok(());
        };
        loop {
            match self.read_frame()? {
                Some(Message::Keepalive) => {}
                Some(Message::Accepted { session: s }) if s == session => return Ok(()),
                Some(Message::Error { code, message }) => {
                    return Err(Error::Remote { code, message })
                }
                None => {
                    return Err(Error::connect(
                        format!("attaching to {}", self.peer),
                        io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the connection closed before the stream was accepted",
                        ),
                    ))
                }
                Some(m) => return Err(crate::proto::unexpected("the stream's acceptance", &m)),
            }
        }
    }

    /// Reads the `Welcome` [`Conn::seal_awaiting`] awaits, if it is still
    /// to come, and opens the records behind it.
    pub fn await_welcome(&mut self) -> Result<()> {
        let Some(w) = self.welcome.take() else {
            return Ok(());
        };
        match self.read_frame()? {
            Some(Message::Welcome { mac, suite }) if auth::verify(&w.mac, &mac) => {
                if suite != w.suite as u8 {
                    return Err(Error::Protocol(format!(
                        "{} named suite {suite} where both ends choose {}",
                        self.peer,
                        w.suite.name()
                    )));
                }
                self.open = Some(w.open);
                // The server proved the token: its session's frames may be as
                // large as any.
                self.limit = MAX_FRAME;
                Ok(())
            }
            Some(Message::Welcome { .. }) => Err(Error::Auth(format!(
                "{} does not hold our token",
                self.peer
            ))),
            Some(Message::Error { code, message }) if code == Code::Auth as u16 => {
                Err(Error::Auth(message))
            }
            Some(Message::Error { code, message }) => Err(Error::Remote { code, message }),
            Some(m) => Err(crate::proto::unexpected("a welcome", &m)),
            None => Err(Error::connect(
                format!("opening a session with {}", self.peer),
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the connection closed before the server's welcome",
                ),
            )),
        }
    }

    fn recv_frame(&mut self) -> Result<Option<Message>> {
        self.await_welcome()?;
        self.await_acceptance()?;
        self.read_frame()
    }

    fn read_frame(&mut self) -> Result<Option<Message>> {
        let mut len = [0u8; 4];
        match self.fill(&mut len) {
            Ok(0) => return Ok(None),
            Ok(4) => {}
            Ok(_) => return Err(self.cut_frame()),
            Err(e) => return Err(self.error(e)),
        }
        let n = u32::from_be_bytes(len);
        if n == 0 || n > MAX_FRAME {
            if self.open.is_none() {
                return Err(self.not_braid(&len));
            }
            return Err(Error::Protocol(format!(
                "{} sent a frame of length {n}",
                self.peer
            )));
        }
        if n > self.limit {
            return Err(Error::Protocol(format!(
                "{} announced a frame of {n} bytes where at most {} are allowed",
                self.peer, self.limit
            )));
        }
        let total = 4 + n as usize;
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        frame.extend_from_slice(&len);
        let mut failed = None;
        while frame.len() < total {
            let at = frame.len();
            frame.resize(at + (total - at).min(GROW), 0);
            match self.fill(&mut frame[at..]) {
                Ok(k) if at + k == frame.len() => {}
                Ok(_) => {
                    failed = Some(self.cut_frame());
                    break;
                }
                Err(e) => {
                    failed = Some(self.error(e));
                    break;
                }
            }
        }
        let decoded = if failed.is_none() {
            Some(decode(&frame))
        } else {
            None
        };
        if frame.capacity() > 4 * GROW {
            frame = Vec::new();
        }
        self.frame = frame;
        match (failed, decoded) {
            (Some(e), _) => Err(e),
            (None, Some(Ok(Some((m, _))))) => Ok(Some(m)),
            (None, Some(Ok(None))) | (None, None) => unreachable!("a whole frame was read"),
            (None, Some(Err(_))) if self.open.is_none() => {
                Err(self.not_braid(&self.frame[..total.min(self.frame.len())]))
            }
            (None, Some(Err(e))) => Err(Error::Protocol(format!("from {}: {e}", self.peer))),
        }
    }

    /// A handshake frame that is no frame of braid's: the peer is something
    /// else on that port. Says what it sent (the first bytes, and whatever
    /// else has already arrived) so a user can tell an ssh or web server.
    fn not_braid(&self, head: &[u8]) -> Error {
        let mut seen = head.to_vec();
        seen.extend_from_slice(self.reader.buffer());
        seen.truncate(64);
        Error::Protocol(format!(
            "{} is not a braid peer: it {}began {}; check the host and port (braid serve \
             listens on 5420 unless told otherwise)",
            self.peer,
            what_it_is(&seen),
            shown(&seen)
        ))
    }

    /// The next message; the peer going away is an error. A peer's `Error`
    /// frame becomes `Error::Remote`.
    pub fn recv(&mut self) -> Result<Message> {
        loop {
            match self.recv_any()? {
                Message::Keepalive => {}
                m => return Ok(m),
            }
        }
    }

    /// The next frame, a keepalive too: for a loop that polls the connection
    /// and has timers of its own. `recv` would go on past a keepalive and
    /// wait for the next message, for as long as the peer has nothing more
    /// to say, and the loop's timers with it.
    pub fn recv_any(&mut self) -> Result<Message> {
        match self.recv_frame()? {
            Some(Message::Error { code, message }) => Err(Error::Remote { code, message }),
            Some(m) => Ok(m),
            None => Err(Error::connect(
                format!("receiving from {}", self.peer),
                io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed"),
            )),
        }
    }

    /// The next at most `max` bytes of the data that follows a block header,
    /// where they were opened: no copy. The stream ending first is an error.
    pub fn data(&mut self, max: usize) -> Result<&[u8]> {
        match self.more() {
            Ok(true) => {}
            Ok(false) => return Err(self.cut_frame()),
            Err(e) => return Err(self.error(e)),
        }
        let n = max.min(self.end - self.at);
        let piece = &self.rec[self.at..self.at + n];
        self.at += n;
        Ok(piece)
    }

    /// Reads up to `buf.len()` bytes of plaintext (a bench's data); 0 at the
    /// clean end.
    pub fn read_some(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.read_plain(buf).map_err(|e| self.error(e))
    }
}

/// A read or write that ran into its socket's timeout.
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Whether `fd` has something to read (a connection to accept, for a
/// listener) within `timeout`.
pub fn readable(fd: &impl std::os::fd::AsRawFd, timeout: Duration) -> bool {
    poll_in(fd, None, timeout)
}

/// Whether `fd` can be written within `timeout` (a connect under way: once
/// it is over, whether it succeeded or not).
pub fn writable(fd: &impl std::os::fd::AsRawFd, timeout: Duration) -> bool {
    poll_for(fd, libc::POLLOUT, None, timeout)
}

/// Wakes a thread that polls a socket, from any other thread, as often as
/// it likes: an eventfd, readable from the first ring until [`Bell::clear`].
pub struct Bell(std::os::fd::OwnedFd);

impl Bell {
    pub fn new() -> io::Result<Bell> {
        use std::os::fd::FromRawFd;
        // SAFETY: eventfd takes no pointers; a non-negative result is a new fd we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just created and nothing else owns it.
        Ok(Bell(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    pub fn ring(&self) {
        use std::os::fd::AsRawFd;
        let one: u64 = 1;
        // SAFETY: writes the 8 bytes of `one` to our eventfd. It fails only
        // when the counter is full, and then a poll sees it readable anyway.
        unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Waits until rung (true) or `timeout` passes (false).
    pub fn wait(&self, timeout: Duration) -> bool {
        poll_in(&self.0, None, timeout)
    }

    /// Takes back every ring so far.
    pub fn clear(&self) {
        use std::os::fd::AsRawFd;
        let mut n: u64 = 0;
        // SAFETY: reads at most 8 bytes into `n`; a non-blocking eventfd with
        // nothing rung fails with EAGAIN, which is what "clear" wants.
        unsafe { libc::read(self.0.as_raw_fd(), (&mut n as *mut u64).cast(), 8) };
    }
}

/// Waits until `fd` is readable (true) or `bell` rings or `timeout` passes (false).
pub fn readable_or(fd: &impl std::os::fd::AsRawFd, bell: &Bell, timeout: Duration) -> bool {
    poll_in(fd, Some(bell), timeout)
}

/// One poll for input on `fd` and, if given, `bell`; true when `fd` has some.
fn poll_in(fd: &impl std::os::fd::AsRawFd, bell: Option<&Bell>, timeout: Duration) -> bool {
    poll_for(fd, libc::POLLIN, bell, timeout)
}

/// One poll for `events` on `fd` and for input on `bell`, if given; true
/// when `fd` is ready (or in error, which the next call on it tells).
fn poll_for(
    fd: &impl std::os::fd::AsRawFd,
    events: libc::c_short,
    bell: Option<&Bell>,
    timeout: Duration,
) -> bool {
    use std::os::fd::AsRawFd;
    let pollfd = |fd, events| libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let mut p = [
        pollfd(fd.as_raw_fd(), events),
        pollfd(bell.map_or(-1, |b| b.0.as_raw_fd()), libc::POLLIN),
    ];
    let n = if bell.is_some() { 2 } else { 1 };
    // Rounded up: a wait of less than a millisecond would be a poll that
    // returns at once, again and again until the moment passes.
    let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
    // SAFETY: `n` valid pollfds for the duration of the call.
    let ready = unsafe { libc::poll(p.as_mut_ptr(), n, ms) };
    ready > 0 && p[0].revents != 0
}

/// Aborts a TCP connection with a reset, whoever else holds its descriptor:
/// a shutdown only stops our reads, and a peer still sending into a closed
/// window would block rather than notice. Linux dissolves a connected
/// socket's association (RST included) on a connect to AF_UNSPEC.
pub fn reset(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    // SAFETY: a zeroed sockaddr with only the family set, its true size, an fd we hold.
    unsafe {
        let mut sa: libc::sockaddr = std::mem::zeroed();
        sa.sa_family = libc::AF_UNSPEC as libc::sa_family_t;
        libc::connect(
            stream.as_raw_fd(),
            &sa,
            std::mem::size_of::<libc::sockaddr>() as libc::socklen_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_wire::seal::{Channel, Suite};
    use std::net::TcpListener;

    /// Both ends of a loopback connection, sealed with `suite` (client first).
    fn sealed_pair(suite: Suite) -> (Conn, Conn) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut c = Conn::new(near).unwrap();
        let mut s = Conn::new(l.accept().unwrap().0).unwrap();
        let ch = Channel::Data {
            stream: 0,
            counter: 1,
        };
        c.seal(Keys::new(&[3; 32], suite, ch, true));
        s.seal(Keys::new(&[3; 32], suite, ch, false));
        (c, s)
    }

    #[test]
    fn frames_and_block_data_cross_sealed_and_the_end_is_told_from_a_cut() {
        for suite in [Suite::Aes256Gcm, Suite::ChaCha20Poly1305, Suite::Plain] {
            let (mut c, mut s) = sealed_pair(suite);
            let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7) as u8).collect();
            let sent = data.clone();
            let t = std::thread::spawn(move || {
                let block = Message::Block {
                    file: 1,
                    offset: 1000,
                    len: sent.len() as u32,
                };
                let r = c.w.send_block(&block, sent.len(), |piece, at, _| {
                    piece.copy_from_slice(&sent[at as usize..at as usize + piece.len()]);
                    Ok::<(), ()>(())
                });
                assert!(matches!(r, Ok(Ok(()))));
                c.send(&Message::Error {
                    code: 404,
                    message: "nope".into(),
                })
                .unwrap();
                c.w.finish();
                c
            });
            let Message::Block { len, offset, .. } = s.recv().unwrap() else {
                panic!("not a block")
            };
            assert_eq!(offset, 1000);
            let mut got = Vec::new();
            while got.len() < len as usize {
                let piece = s.r.data(len as usize - got.len()).unwrap();
                assert!(piece.len() <= braid_wire::seal::MAX_DATA);
                got.extend_from_slice(piece);
            }
            assert!(got == data, "{suite:?}");
            match s.recv() {
                Err(Error::Remote { code: 404, message }) => assert_eq!(message, "nope"),
                other => panic!("{other:?}"),
            }
            assert!(
                s.recv_opt().unwrap().is_none(),
                "the sealed end is a clean end"
            );
            drop(t.join().unwrap());

            // Cut short: the same stream without its sealed end is not a clean end.
            let (mut c, mut s) = sealed_pair(suite);
            c.send(&Message::Detach { stream: 1 }).unwrap();
            drop(c);
            assert_eq!(s.recv().unwrap(), Message::Detach { stream: 1 });
            let e = s.recv_opt().unwrap_err();
            assert!(e.to_string().contains("without its sealed end"), "{e}");
        }
    }

    // A long step of a session's start says keepalives while it runs, and
    // none once it is over.
    #[test]
    fn a_long_step_is_no_silence_and_its_keepalives_end_with_it() {
        let (mut c, mut s) = sealed_pair(Suite::ChaCha20Poly1305);
        let out = c.w.speaking_while(Duration::from_millis(20), || {
            std::thread::sleep(Duration::from_millis(150));
            7
        });
        assert_eq!(out, 7);
        c.w.send(&Message::Progress { bytes: 1 }).unwrap();
        let mut keepalives = 0;
        loop {
            match s.r.recv_any().unwrap() {
                Message::Keepalive => keepalives += 1,
                Message::Progress { bytes: 1 } => break,
                m => panic!("{m:?}"),
            }
        }
        assert!(
            keepalives >= 3,
            "{keepalives} keepalives in 150 ms, one every 20"
        );
        assert!(
            !s.r.wait_readable(Duration::from_millis(100)),
            "none after the step"
        );
    }

    // The receiver's control loop polls, then reads one frame: a keepalive
    // must come back to it, or its journals wait for the sender's next word.
    #[test]
    fn recv_any_hands_back_a_keepalive_and_recv_goes_past_it() {
        let (mut c, mut s) = sealed_pair(Suite::Aes256Gcm);
        for m in [
            Message::Keepalive,
            Message::Progress { bytes: 5 },
            Message::Keepalive,
            Message::Progress { bytes: 6 },
        ] {
            c.w.send(&m).unwrap();
        }
        assert!(s.r.wait_readable(Duration::from_secs(5)));
        assert!(matches!(s.r.recv_any().unwrap(), Message::Keepalive));
        assert!(matches!(
            s.r.recv_any().unwrap(),
            Message::Progress { bytes: 5 }
        ));
        assert!(matches!(
            s.r.recv().unwrap(),
            Message::Progress { bytes: 6 }
        ));
        // Nothing more: a wait shorter than a millisecond still waits (a poll
        // that returned at once would be called again and again meanwhile).
        let t = Instant::now();
        assert!(!s.r.wait_readable(Duration::from_micros(300)));
        assert!(t.elapsed() >= Duration::from_micros(300));
    }

    #[test]
    fn a_changed_byte_is_tampering_and_nothing_of_its_record_is_used() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut s = Conn::new(l.accept().unwrap().0).unwrap();
        let ch = Channel::Control;
        s.seal(Keys::new(&[3; 32], Suite::Aes256Gcm, ch, false));
        // A record sealed as the client would, with one bit of its data flipped.
        let mut sealer = Keys::new(&[3; 32], Suite::Aes256Gcm, ch, true).send;
        let mut frame = Vec::new();
        encode(&Message::Progress { bytes: 5 }, &mut frame);
        let mut rec = vec![0u8; MAX_RECORD];
        rec[DATA_AT..DATA_AT + frame.len()].copy_from_slice(&frame);
        let n = sealer.seal(&mut rec, DATA, frame.len()).unwrap();
        rec[DATA_AT + 3] ^= 1;
        raw.write_all(&rec[..n]).unwrap();
        let e = s.recv().unwrap_err();
        assert!(matches!(e, Error::Tampered(_)), "{e}");
        assert_eq!(e.exit_code(), crate::error::exit::VERIFY);
    }

    #[test]
    fn a_stalled_bench_record_is_written_in_pieces_and_counts_once_whole() {
        let (mut c, mut s) = sealed_pair(Suite::ChaCha20Poly1305);
        c.w.stage_zeros(100_000).unwrap();
        let mut left = usize::MAX;
        while left > 0 {
            left = c.w.write_staged().unwrap();
        }
        c.w.finish();
        let mut buf = vec![1u8; 300_000];
        let mut n = 0;
        loop {
            match s.r.read_some(&mut buf[n..]).unwrap() {
                0 => break,
                k => n += k,
            }
        }
        assert_eq!(n, 100_000);
        assert!(buf[..n].iter().all(|b| *b == 0));
    }

    #[test]
    fn before_authenticating_frames_are_small_and_the_handshake_has_a_deadline() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            // A header announcing 16 MiB, and nothing behind it.
            s.write_all(&[1, 0, 0, 0, 1]).unwrap();
            let mut s2 = TcpStream::connect(addr).unwrap();
            // One byte now and then: each read in time, the whole too slow.
            for _ in 0..6 {
                if s2.write_all(&[0]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            drop(s);
        });
        let mut c = Conn::new(l.accept().unwrap().0).unwrap();
        c.r.set_limit(1024);
        let e = c.recv().unwrap_err();
        assert!(e.to_string().contains("at most 1024"), "{e}");
        assert_eq!(c.r.frame.capacity(), 0, "nothing allocated for the frame");
        let mut c2 = Conn::new(l.accept().unwrap().0).unwrap();
        c2.r.set_deadline(Some(Instant::now() + Duration::from_millis(250)));
        let started = Instant::now();
        let e = c2.recv().unwrap_err();
        assert!(
            started.elapsed() < Duration::from_millis(450),
            "{:?}",
            started.elapsed()
        );
        assert!(
            e.to_string()
                .contains("nothing arrived within the time allowed"),
            "{e}"
        );
        assert_eq!(e.to_wire().0, crate::error::Code::Timeout as u16);
        t.join().unwrap();
    }

    #[test]
    fn a_huge_length_is_refused_before_allocating() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&[0xff, 0xff, 0xff, 0xff, 1]).unwrap();
        });
        let mut c = Conn::new(l.accept().unwrap().0).unwrap();
        let e = c.recv().unwrap_err();
        assert!(matches!(e, Error::Protocol(_)), "{e}");
        t.join().unwrap();
        // Sealed, a record longer than any is refused before it is read.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut s2 = Conn::new(l.accept().unwrap().0).unwrap();
        s2.seal(Keys::new(
            &[3; 32],
            Suite::Aes256Gcm,
            Channel::Control,
            false,
        ));
        raw.write_all(&[0x7f, 0xff, 0xff, 0xff]).unwrap();
        let e = s2.recv().unwrap_err();
        assert!(matches!(e, Error::Tampered(_)), "{e}");
        assert!(s2.r.rec.capacity() == 0, "nothing allocated for the record");
    }
}
