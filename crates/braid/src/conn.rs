//! Frames over a TCP stream: the I/O half of braid-wire.

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use braid_wire::{decode, encode, Message, MAX_FRAME};

use crate::error::{Error, Result};

/// One connection, read through a buffer and written frame by frame.
pub struct Conn {
    pub r: FrameReader,
    pub w: FrameWriter,
}

/// The receiving half of a connection.
pub struct FrameReader {
    reader: BufReader<TcpStream>,
    frame: Vec<u8>,
    pub peer: String,
    /// The largest frame accepted: small until the peer has authenticated.
    limit: u32,
    /// Reads fail once this passes (the whole handshake, not each read).
    deadline: Option<Instant>,
}

/// A frame buffer grows by at most this much ahead of the bytes that came:
/// a header announcing 16 MiB costs 16 MiB only once they have arrived.
const GROW: usize = 1 << 20;

/// The sending half of a connection.
pub struct FrameWriter {
    writer: TcpStream,
    out: Vec<u8>,
    pub peer: String,
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
                reader: BufReader::with_capacity(256 * 1024, stream),
                frame: Vec::new(),
                peer: peer.clone(),
                limit: MAX_FRAME,
                deadline: None,
            },
            w: FrameWriter {
                writer,
                out: Vec::new(),
                peer,
            },
        })
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
                let _ = self.stream().set_read_timeout(Some(Duration::from_secs(2)));
                let reason = match self.r.recv_opt() {
                    Ok(Some(Message::Error { code, message })) => Error::Remote { code, message },
                    _ => e,
                };
                let _ = self.stream().set_read_timeout(None);
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

    pub fn send(&mut self, m: &Message) -> Result<()> {
        self.out.clear();
        encode(m, &mut self.out);
        self.writer
            .write_all(&self.out)
            .map_err(|e| Error::connect(format!("sending to {}", self.peer), e))
    }

    /// Sends a frame and then `len` bytes of `file` at `offset` straight
    /// from the page cache (sendfile): the bytes are not copied through user
    /// space, and on a link with scatter-gather not copied at all. The caller
    /// read them once already for the block's checksum and hash; should the
    /// file change in between, the receiver's CRC check catches it.
    pub fn send_file_block(
        &mut self,
        m: &Message,
        file: &std::fs::File,
        offset: u64,
        len: usize,
    ) -> Result<()> {
        use std::os::fd::AsRawFd;
        self.out.clear();
        encode(m, &mut self.out);
        let sock = self.writer.as_raw_fd();
        let fail = |peer: &str, e: io::Error| Error::connect(format!("sending to {peer}"), e);
        let mut at = 0;
        while at < self.out.len() {
            // MSG_MORE: the header and the data behind it share segments.
            // SAFETY: a valid buffer range and an fd we hold.
            let k = unsafe {
                libc::send(
                    sock,
                    self.out[at..].as_ptr().cast(),
                    self.out.len() - at,
                    libc::MSG_MORE | libc::MSG_NOSIGNAL,
                )
            };
            match k {
                k if k >= 0 => at += k as usize,
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(fail(&self.peer, e));
                    }
                }
            }
        }
        let mut off = offset as libc::off_t;
        let end = offset + len as u64;
        while (off as u64) < end {
            let want = (end - off as u64) as usize;
            // SAFETY: both fds are ours; the kernel advances `off`.
            let k = unsafe { libc::sendfile(sock, file.as_raw_fd(), &mut off, want) };
            match k {
                0 => {
                    return Err(fail(
                        &self.peer,
                        io::Error::new(io::ErrorKind::UnexpectedEof, "the source file shrank"),
                    ))
                }
                k if k > 0 => {}
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(fail(&self.peer, e));
                    }
                }
            }
        }
        Ok(())
    }

    /// Raw bytes (bench data).
    pub fn send_raw(&mut self, data: &[u8]) -> io::Result<()> {
        self.writer.write_all(data)
    }

    /// One write of raw bytes: how many went, which may be fewer than asked.
    pub fn send_some(&mut self, data: &[u8]) -> io::Result<usize> {
        self.writer.write(data)
    }

    /// Tells the peer why we stop; best effort, the connection may be gone.
    pub fn send_error(&mut self, e: &Error) {
        let (code, message) = e.to_wire();
        let _ = self.send(&Message::Error { code, message });
    }
}

impl FrameReader {
    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    /// Bytes read from the socket and not yet taken.
    pub fn buffered(&self) -> usize {
        self.reader.buffer().len()
    }

    /// Whether a message has begun to arrive within `timeout`.
    pub fn wait_readable(&self, timeout: Duration) -> bool {
        !self.reader.buffer().is_empty() || readable(self.reader.get_ref(), timeout)
    }

    /// As [`FrameReader::wait_readable`], and returns early (false) when
    /// `bell` rings.
    pub fn wait_readable_or(&self, bell: &Bell, timeout: Duration) -> bool {
        !self.reader.buffer().is_empty() || readable_or(self.reader.get_ref(), bell, timeout)
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
            let _ = self.reader.get_ref().set_read_timeout(None);
        }
    }

    /// One read, bounded by the deadline if there is one.
    fn read_some_timed(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.reader.get_ref().set_read_timeout(Some(left))?;
        }
        self.reader.read(buf)
    }

    /// Fills `buf` unless the stream ends first; returns how much came.
    fn fill(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut at = 0;
        while at < buf.len() {
            match self.read_some_timed(&mut buf[at..]) {
                Ok(0) => break,
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(at)
    }

    fn read_error(&self, e: io::Error) -> Error {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::connect(
                format!("waiting for {}", self.peer),
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nothing arrived within the time allowed",
                ),
            ),
            _ => Error::connect(format!("receiving from {}", self.peer), e),
        }
    }

    /// The next message; a clean end of stream is `Ok(None)`.
    pub fn recv_opt(&mut self) -> Result<Option<Message>> {
        let mut len = [0u8; 4];
        match self.fill(&mut len) {
            Ok(0) => return Ok(None),
            Ok(4) => {}
            Ok(_) => {
                return Err(Error::Protocol(format!(
                    "{} closed the connection inside a frame",
                    self.peer
                )))
            }
            Err(e) => return Err(self.read_error(e)),
        }
        let n = u32::from_be_bytes(len);
        if n == 0 || n > MAX_FRAME {
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
        while frame.len() < total {
            let at = frame.len();
            frame.resize(at + (total - at).min(GROW), 0);
            match self.fill(&mut frame[at..]) {
                Ok(k) if at + k == frame.len() => {}
                Ok(_) => {
                    return Err(Error::Protocol(format!(
                        "{} closed the connection inside a frame",
                        self.peer
                    )))
                }
                Err(e) => return Err(self.read_error(e)),
            }
        }
        let decoded = decode(&frame);
        if frame.capacity() > 4 * GROW {
            frame = Vec::new();
        }
        self.frame = frame;
        match decoded {
            Ok(Some((m, _))) => Ok(Some(m)),
            Ok(None) => unreachable!("a whole frame was read"),
            Err(e) => Err(Error::Protocol(format!("from {}: {e}", self.peer))),
        }
    }

    /// The next message; the peer going away is an error. A peer's `Error`
    /// frame becomes `Error::Remote`.
    pub fn recv(&mut self) -> Result<Message> {
        match self.recv_opt()? {
            Some(Message::Error { code, message }) => Err(Error::Remote { code, message }),
            Some(m) => Ok(m),
            None => Err(Error::connect(
                format!("receiving from {}", self.peer),
                io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed"),
            )),
        }
    }

    /// The raw bytes that follow a block header.
    pub fn read_data(&mut self, buf: &mut [u8]) -> Result<()> {
        self.reader
            .read_exact(buf)
            .map_err(|e| Error::connect(format!("receiving data from {}", self.peer), e))
    }

    /// Reads up to `buf.len()` raw bytes; 0 at the end of the stream.
    pub fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reader.read(buf)
    }
}

/// Whether `fd` has something to read (a connection to accept, for a
/// listener) within `timeout`.
pub fn readable(fd: &impl std::os::fd::AsRawFd, timeout: Duration) -> bool {
    poll_in(fd, None, timeout)
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
    use std::os::fd::AsRawFd;
    let pollfd = |fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut p = [
        pollfd(fd.as_raw_fd()),
        pollfd(bell.map_or(-1, |b| b.0.as_raw_fd())),
    ];
    let n = if bell.is_some() { 2 } else { 1 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
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
    use std::net::TcpListener;

    #[test]
    fn frames_and_raw_data_cross_a_socket() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        f.write_all(&data).unwrap();
        let t = std::thread::spawn(move || {
            let mut c = Conn::new(TcpStream::connect(addr).unwrap()).unwrap();
            let block = Message::Block {
                file: 1,
                offset: 1000,
                len: 50_000,
                checksum: 9,
            };
            c.w.send_file_block(&block, &f, 1000, 50_000).unwrap();
            // Past the end: the file is shorter than the block the sender planned.
            let e = c.w.send_file_block(&block, &f, 90_000, 50_000).unwrap_err();
            assert!(e.to_string().contains("the source file shrank"), "{e}");
            c.send(&Message::Error {
                code: 404,
                message: "nope".into(),
            })
            .unwrap();
        });
        let mut c = Conn::new(l.accept().unwrap().0).unwrap();
        let Message::Block { len, offset, .. } = c.recv().unwrap() else {
            panic!("not a block")
        };
        let mut buf = vec![0; len as usize];
        c.r.read_data(&mut buf).unwrap();
        assert_eq!(offset, 1000);
        assert!(buf.iter().enumerate().all(|(i, b)| *b == (i + 1000) as u8));
        // The short block's header and the 10 000 bytes the file still had.
        let Message::Block { .. } = c.recv().unwrap() else {
            panic!("not a block")
        };
        let mut rest = vec![0; 10_000];
        c.r.read_data(&mut rest).unwrap();
        assert!(rest
            .iter()
            .enumerate()
            .all(|(i, b)| *b == (i + 90_000) as u8));
        match c.recv() {
            Err(Error::Remote { code: 404, message }) => assert_eq!(message, "nope"),
            other => panic!("{other:?}"),
        }
        t.join().unwrap();
        assert!(c.recv_opt().unwrap().is_none());
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
    }
}
