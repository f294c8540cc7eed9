//! Whole Ethernet frames in and out of an interface with AF_PACKET.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::{bail, Context, Result};

/// The largest frame we take: an MTU of 9000 plus headers. Offloads are off,
/// so nothing larger arrives.
pub const FRAME_MAX: usize = 9216;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// One interface, opened for raw frames.
pub struct Port {
    pub name: String,
    fd: OwnedFd,
}

fn check(rc: libc::c_int, what: &str, name: &str) -> Result<()> {
    if rc < 0 {
        bail!("{what} on {name}: {}", io::Error::last_os_error());
    }
    Ok(())
}

impl Port {
    pub fn open(name: &str) -> Result<Self> {
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
        // A deep socket buffer absorbs bursts while the loop sleeps.
        let buf: libc::c_int = 16 << 20;
        set(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &buf, name)?;
        set(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &buf, name)?;
        Ok(Port {
            name: name.to_owned(),
            fd,
        })
    }

    /// Reads one frame into `buf`; false when none is waiting.
    pub fn recv(&self, buf: &mut Vec<u8>) -> io::Result<bool> {
        buf.clear();
        // SAFETY: we hand the kernel the vector's spare capacity and keep only what it wrote.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.capacity(),
                libc::MSG_TRUNC,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(false),
                _ => Err(e),
            };
        }
        // SAFETY: the kernel initialised min(n, capacity) bytes.
        unsafe { buf.set_len((n as usize).min(buf.capacity())) };
        Ok(true)
    }

    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: frame is a valid buffer of its length.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
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

/// Monotonic nanoseconds.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until a port is readable or `timeout_ns` passes (None: no deadline).
/// ppoll takes a timespec, so the wait has nanosecond resolution (with the
/// timer slack set to 1 ns) instead of poll's milliseconds.
pub fn wait(ports: &[Port; 2], timeout_ns: Option<u64>) {
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
    unsafe { libc::ppoll(fds.as_mut_ptr(), 2, tp, std::ptr::null()) };
}
