//! Frames over a TCP stream: the I/O half of braid-wire.

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;

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
}

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

    /// The next message; a clean end of stream is `Ok(None)`.
    pub fn recv_opt(&mut self) -> Result<Option<Message>> {
        let mut len = [0u8; 4];
        match read_full(&mut self.reader, &mut len) {
            Ok(0) => return Ok(None),
            Ok(4) => {}
            Ok(_) => {
                return Err(Error::Protocol(format!(
                    "{} closed the connection inside a frame",
                    self.peer
                )))
            }
            Err(e) => return Err(Error::connect(format!("receiving from {}", self.peer), e)),
        }
        let n = u32::from_be_bytes(len);
        if n == 0 || n > MAX_FRAME {
            return Err(Error::Protocol(format!(
                "{} sent a frame of length {n}",
                self.peer
            )));
        }
        self.frame.clear();
        self.frame.extend_from_slice(&len);
        self.frame.resize(4 + n as usize, 0);
        self.reader
            .read_exact(&mut self.frame[4..])
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => Error::Protocol(format!(
                    "{} closed the connection inside a frame",
                    self.peer
                )),
                _ => Error::connect(format!("receiving from {}", self.peer), e),
            })?;
        match decode(&self.frame) {
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

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut at = 0;
    while at < buf.len() {
        match r.read(&mut buf[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(at)
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
