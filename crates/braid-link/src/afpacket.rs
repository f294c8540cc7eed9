//! Whole Ethernet frames in and out of an interface with AF_PACKET.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::{bail, Context, Result};

use crate::ring::{Geometry, Ring};

/// The largest frame we take: an MTU of 9000 plus headers. Offloads are off,
/// so nothing larger arrives.
pub const FRAME_MAX: usize = 9216;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// Frames one sendmmsg moves at most.
pub const BATCH_MAX: usize = 64;

/// One interface, opened for raw frames.
pub struct Port {
    pub name: String,
    fd: OwnedFd,
    ring: Ring,
    /// Frames the kernel dropped before we read them (a full receive
    /// buffer), summed: each read of PACKET_STATISTICS resets the kernel's.
    kernel_drops: std::cell::Cell<u64>,
}

fn check(rc: libc::c_int, what: &str, name: &str) -> Result<()> {
    if rc < 0 {
        bail!("{what} on {name}: {}", io::Error::last_os_error());
    }
    Ok(())
}

impl Port {
    /// Opens `name` with a receive ring of about `ring_bytes`.
    pub fn open(name: &str, ring_bytes: usize) -> Result<Self> {
        let cname = CString::new(name).context("interface name with a NUL byte")?;
        // SAFETY: cname is a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            bail!("no interface {name:?} in this network namespace");
        }
        let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
        // SAFETY: plain socket call; the fd is owned below.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto,
            )
        };
        check(raw, "opening an AF_PACKET socket (needs root)", name)?;
        // SAFETY: raw is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mtu = mtu_of(&fd, &cname, name)?;
        // The ring exists before the bind, so no frame arrives without one.
        let ring = Ring::attach(&fd, Geometry::for_mtu(mtu, ring_bytes))
            .with_context(|| format!("making a {ring_bytes}-byte receive ring on {name}"))?;
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: addr is a valid sockaddr_ll of the given size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        check(rc, "binding", name)?;
        let one: libc::c_int = 1;
        // Our own transmissions on this port are not arrivals.
        set(&fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, name)?;
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex as i32;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        set(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mreq,
            name,
        )?;
        // Frames due out go straight to the driver: the link's own queue is
        // the bottleneck's, and a qdisc's would only cost time.
        set(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &one, name)?;
        // A deep send buffer takes a whole batch of frames due out at once.
        let buf: libc::c_int = 16 << 20;
        set(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &buf, name)?;
        Ok(Port {
            name: name.to_owned(),
            fd,
            ring,
            kernel_drops: std::cell::Cell::new(0),
        })
    }

    /// Frames that reached this port but were dropped by the kernel before
    /// braid-link read them, since the port opened. They never enter the
    /// emulated link, so its own counters miss them: a run where this is not
    /// zero did not see the path it asked for.
    pub fn kernel_drops(&self) -> io::Result<u64> {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: st and len are valid out pointers of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.kernel_drops
            .set(self.kernel_drops.get() + u64::from(st.tp_drops));
        Ok(self.kernel_drops.get())
    }

    /// Copies up to `bufs.len()` waiting frames out of the receive ring;
    /// returns how many, in `bufs[..n]` (0: none waiting).
    pub fn recv_batch(&mut self, bufs: &mut [Vec<u8>]) -> usize {
        self.ring.read(bufs)
    }

    /// Frames longer than the ring's slots (the interface's MTU grew after
    /// the ring was made), skipped.
    pub fn truncated(&self) -> u64 {
        self.ring.truncated
    }

    /// How long frames waited in the receive ring before they were read.
    pub fn ring_wait(&self) -> &braid_link::hist::Hist {
        &self.ring.wait
    }

    /// The receive ring's slots and bytes.
    pub fn ring_size(&self) -> (usize, usize) {
        let g = self.ring.geometry();
        (g.slots(), g.bytes())
    }

    /// Sends `frames` with as few sendmmsg calls as the kernel takes them
    /// in; returns how many could not be sent (each is skipped, as a link
    /// that drops it).
    pub fn send_batch(&self, frames: &[Vec<u8>]) -> u64 {
        let mut failed = 0;
        let mut at = 0;
        while at < frames.len() {
            let n = (frames.len() - at).min(BATCH_MAX);
            let mut batch = Batch::new();
            for f in &frames[at..at + n] {
                batch.push(f.as_ptr() as *mut libc::c_void, f.len());
            }
            let hdrs = batch.headers();
            // SAFETY: each header points at one iovec over a whole frame that
            // outlives the call; the kernel only reads them.
            let sent = unsafe {
                libc::sendmmsg(self.fd.as_raw_fd(), hdrs.as_mut_ptr(), n as libc::c_uint, 0)
            };
            if sent > 0 {
                at += sent as usize;
            } else {
                // The first of them failed (a full transmit queue): it is lost.
                failed += 1;
                at += 1;
            }
        }
        failed
    }
}

/// The interface's MTU (SIOCGIFMTU).
fn mtu_of(fd: &OwnedFd, cname: &CString, name: &str) -> Result<usize> {
    // SAFETY: ifreq is plain data; all-zero is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = cname.as_bytes_with_nul();
    if bytes.len() > req.ifr_name.len() {
        bail!(
            "interface name {name:?} is longer than the kernel's {} bytes",
            req.ifr_name.len() - 1
        );
    }
    for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the name and writes the MTU into req.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU, &mut req) };
    check(rc, "reading the MTU", name)?;
    // SAFETY: SIOCGIFMTU filled the union's mtu member.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    usize::try_from(mtu).with_context(|| format!("{name} reports an MTU of {mtu}"))
}

/// Up to BATCH_MAX buffers as sendmmsg takes them: one iovec
/// each, and a header pointing at it.
struct Batch {
    iovs: [libc::iovec; BATCH_MAX],
    hdrs: [libc::mmsghdr; BATCH_MAX],
    len: usize,
}

impl Batch {
    fn new() -> Batch {
        // SAFETY: plain C structs for which all-zero is a valid value.
        unsafe { std::mem::zeroed() }
    }

    fn push(&mut self, base: *mut libc::c_void, len: usize) {
        self.iovs[self.len] = libc::iovec {
            iov_base: base,
            iov_len: len,
        };
        self.len += 1;
    }

    /// The headers, each pointing at its iovec in this batch (so the batch
    /// must stay where it is while the kernel reads them).
    fn headers(&mut self) -> &mut [libc::mmsghdr] {
        for i in 0..self.len {
            self.hdrs[i].msg_hdr.msg_iov = &mut self.iovs[i];
            self.hdrs[i].msg_hdr.msg_iovlen = 1;
        }
        &mut self.hdrs[..self.len]
    }
}

fn set<T>(fd: &OwnedFd, level: libc::c_int, opt: libc::c_int, v: &T, name: &str) -> Result<()> {
    // SAFETY: v points to a value of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as u32,
        )
    };
    check(rc, "setsockopt", name)
}

/// Sleeps until a port is readable or `timeout_ns` passes (None: no deadline).
/// ppoll takes a timespec, so the wait has nanosecond resolution (with the
/// timer slack set to 1 ns) instead of poll's milliseconds. Returns ppoll's
/// result: 0 when the time passed with nothing to read.
pub fn wait(ports: &[Port; 2], timeout_ns: Option<u64>) -> i32 {
    let mut fds = [
        libc::pollfd {
            fd: ports[0].fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: ports[1].fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ts = timeout_ns.map(|t| libc::timespec {
        tv_sec: (t / 1_000_000_000) as i64,
        tv_nsec: (t % 1_000_000_000) as i64,
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds and tp are valid for the call; EINTR (a signal) just returns.
    unsafe { libc::ppoll(fds.as_mut_ptr(), 2, tp, std::ptr::null()) }
}
