//! Reads that tell when their bytes arrived: the receiving end's view of the
//! bottleneck (`path::dispersion`). A socket with SO_TIMESTAMPNS gives each
//! `recvmsg` the kernel's receive time of the last segment it returned; any
//! user may ask for it.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use braid_wire::Message;

use crate::path::dispersion::{Arrivals, Dispersion};
use crate::telemetry::Telemetry;

/// How often a receiving stream tells the sender the bottleneck it sees: the
/// window moves by a slot of a second.
const TELL_EVERY: Duration = Duration::from_secs(1);

/// When a receiving stream next tells the sender what the session's arrivals show.
pub struct Teller {
    next: Instant,
}

impl Default for Teller {
    fn default() -> Self {
        Self::new()
    }
}

impl Teller {
    pub fn new() -> Teller {
        Teller {
            next: Instant::now() + TELL_EVERY,
        }
    }

    /// The word for the sender, once each [`TELL_EVERY`], where the arrivals
    /// show the bottleneck.
    pub fn due(&mut self, tel: &Telemetry) -> Option<Message> {
        let now = Instant::now();
        if now < self.next {
            return None;
        }
        self.next = now + TELL_EVERY;
        let bytes_per_sec = tel.measure_bottleneck()?;
        Some(Message::Bottleneck { bytes_per_sec })
    }
}

/// Linux's SO_TIMESTAMPNS (the same number as its SCM_ message), with a
/// 64-bit `timespec` on the 64-bit targets braid builds for.
const SO_TIMESTAMPNS: libc::c_int = 35;

/// Reads a stamper keeps before it counts them into the shared window: one
/// lock for many reads, not one a read (a fast stream reads tens of
/// thousands of times a second on each of its threads), while the window,
/// told once a second, sees them within milliseconds.
const BATCH: usize = 64;

/// One connection's stamped reads, counted into a session's shared window.
pub struct Stamper {
    arrivals: Arrivals,
    window: Arc<Mutex<Dispersion>>,
    /// Reads not yet counted: (stamp, rate, bytes).
    held: Vec<(u64, f64, usize)>,
}

impl Drop for Stamper {
    fn drop(&mut self) {
        self.count();
    }
}

impl Stamper {
    /// Asks `stream`'s kernel for stamps; the reads that follow count in `window`.
    pub fn new(stream: &TcpStream, window: Arc<Mutex<Dispersion>>) -> io::Result<Stamper> {
        let on: libc::c_int = 1;
        // SAFETY: a valid socket, and an option value that lives for the call.
        let r = unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Stamper {
            arrivals: Arrivals::new(),
            window,
            held: Vec::with_capacity(BATCH),
        })
    }

    /// Counts the reads held into the shared window.
    fn count(&mut self) {
        if let Ok(mut w) = self.window.lock() {
            for (at, rate, n) in self.held.drain(..) {
                w.add(at, rate, n);
            }
        }
        self.held.clear();
    }

    /// One read into `buf`; its stamp, if the kernel gave one, counts.
    pub fn read(&mut self, stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        let (n, at) = recv_stamped(stream, buf)?;
        if let Some(at) = at {
            if let Some(rate) = self.arrivals.rate(at, n) {
                self.held.push((at, rate, n));
                if self.held.len() >= BATCH {
                    self.count();
                }
            }
        }
        Ok(n)
    }
}

/// `recvmsg` into `buf`: the bytes read and, with SO_TIMESTAMPNS on, the
/// receive time of the last segment among them (ns of the realtime clock).
fn recv_stamped(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    // Room for one control message holding a timespec, aligned as cmsghdr is.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr is valid; its pointers are set to live buffers below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at `buf` and `control`, both alive and writable for the call.
    let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut at = None;
    // SAFETY: the CMSG_* walk stays within the control length the kernel set.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET
                && (*c).cmsg_type == SO_TIMESTAMPNS
                && (*c).cmsg_len as usize
                    >= libc::CMSG_LEN(std::mem::size_of::<libc::timespec>() as u32) as usize
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                at = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn each_read_is_stamped_and_a_window_of_them_answers() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let window = Arc::new(Mutex::new(Dispersion::new()));
        let mut s = Stamper::new(&rx, Arc::clone(&window)).unwrap();
        let mut buf = [0u8; 4096];
        let mut stamps = Vec::new();
        // The kernel turns stamping on for the host a moment after the first
        // socket asks (deferred work): reads before then have no stamp.
        for i in 0..5000u32 {
            tx.write_all(&i.to_be_bytes()).unwrap();
            let (n, at) = recv_stamped(&rx, &mut buf).unwrap();
            assert_eq!(&buf[..n], &i.to_be_bytes());
            stamps.extend(at);
            tx.write_all(&[1; 100]).unwrap();
            let mut got = 0;
            while got < 100 {
                got += s.read(&rx, &mut buf).unwrap();
            }
            if stamps.len() >= 300 {
                break;
            }
            if stamps.len() == 150 {
                // The window tells what two seconds of reads agree on: the
                // rest come in the realtime clock's next second.
                let into = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos();
                std::thread::sleep(std::time::Duration::from_nanos(
                    1_000_000_000 - into as u64 + 10_000_000,
                ));
            }
        }
        assert_eq!(stamps.len(), 300, "SO_TIMESTAMPNS stamps the reads");
        assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "arrival order");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let last = *stamps.last().unwrap();
        assert!(
            now >= last && now - last < 60_000_000_000,
            "the realtime clock"
        );
        drop(s);
        assert!(window.lock().unwrap().estimate().is_some());
    }
}
