//! A frame source for braid-link's forwarding benchmark: it injects frames
//! into an interface's receive path as fast as the kernel takes them, so
//! that braid-link's core, not the load's, sets the ceiling.
//!
//! `flood --dev r0 --seconds 8` runs in the router's namespace. It loads a
//! two-instruction XDP program that passes every frame and runs it in the
//! kernel's live-frame mode (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES,
//! Linux 5.18+): each run builds a frame from a template in a page-pool page
//! and hands it to the stack as if `--dev` had received it, which is where
//! braid-link's packet socket reads. No socket, no sender stack, no copy from
//! user space per frame: a UDP sender (iperf3) costs its core several times
//! what braid-link spends forwarding the same frame.
//!
//! The frames are addressed to a MAC nobody has, so the host behind the
//! link drops each at the IP layer's first check, and braid-link's figure is
//! its own forwarding and not a receiver's stack. Live-frame mode takes
//! frames up to a page less the kernel's headroom (about 3.5 KB). Larger
//! frames (`--via packet`) are sent from the sending host's interface with
//! an AF_PACKET socket past its qdisc, 64 a sendmmsg, every message the same
//! buffer: a copy and an skb a frame, which at 9 KB a frame still offers
//! more than the copies braid-link makes of each.
//!
//! Prints one JSON line: frames offered, seconds, frames per second.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use braid_traffic::icmp::checksum;

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
const XDP_PASS: i32 = 2;
/// Frames per BPF_PROG_RUN batch: the kernel's maximum, a NAPI poll's worth
/// four times over.
const BATCH: u32 = 256;
/// Each BPF_PROG_RUN call swaps the program into the kernel's XDP
/// dispatcher and out again, which patches kernel text on every CPU and
/// waits for an RCU grace period (milliseconds to tens of them in a VM): a
/// call must run long enough that this is noise, and short enough to keep
/// the deadline. The repeat count doubles until a call takes this long.
const CALL: Duration = Duration::from_millis(200);
const REPEAT_FIRST: u32 = 1 << 12;

/// The MACs and addresses of the frames: locally administered MACs that no
/// interface of the testbed has, and addresses on the testbed's /16.
const DST_MAC: [u8; 6] = [0x02, 0xbd, 0, 0, 0, 0x02];
const SRC_MAC: [u8; 6] = [0x02, 0xbd, 0, 0, 0, 0x01];
const SRC_IP: [u8; 4] = [10, 9, 1, 250];
const DST_IP: [u8; 4] = [10, 9, 2, 250];
/// UDP's discard port.
const PORT: u16 = 9;

/// One eBPF instruction as the kernel takes it (struct bpf_insn).
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

/// The leading fields of union bpf_attr for BPF_PROG_LOAD; the rest of the
/// union is zero, as the kernel requires of fields a caller does not set.
#[repr(C, align(8))]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    rest: [u64; 12],
}

/// union bpf_attr for BPF_PROG_TEST_RUN.
#[repr(C, align(8))]
struct TestRun {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    pad: u32,
    rest: [u64; 8],
}

/// struct xdp_md: where in the frame the data is, and which interface and
/// queue it arrived on.
#[repr(C)]
struct XdpMd {
    data: u32,
    data_end: u32,
    data_meta: u32,
    ingress_ifindex: u32,
    rx_queue_index: u32,
    egress_ifindex: u32,
}

fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: attr is a bpf_attr of the size passed, zero past the fields set.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `return XDP_PASS;` loaded as an XDP program.
fn load_pass() -> Result<OwnedFd, String> {
    let insns = [
        // r0 = XDP_PASS (BPF_ALU64 | BPF_MOV | BPF_K)
        Insn {
            code: 0xb7,
            regs: 0,
            off: 0,
            imm: XDP_PASS,
        },
        // exit (BPF_JMP | BPF_EXIT)
        Insn {
            code: 0x95,
            regs: 0,
            off: 0,
            imm: 0,
        },
    ];
    let license = b"GPL\0";
    let mut log = vec![0u8; 4096];
    let mut name = [0u8; 16];
    name[..11].copy_from_slice(b"braid_flood");
    let mut attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        kern_version: 0,
        prog_flags: 0,
        prog_name: name,
        prog_ifindex: 0,
        expected_attach_type: BPF_XDP,
        rest: [0; 12],
    };
    match bpf(BPF_PROG_LOAD, &mut attr) {
        // SAFETY: BPF_PROG_LOAD returned a new fd that we now own.
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) }),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            Err(format!(
                "loading the XDP program (needs root or CAP_BPF): {e}; verifier: {}",
                String::from_utf8_lossy(&log[..end]).trim()
            ))
        }
    }
}

/// An Ethernet frame of `len` bytes (header included) carrying one UDP
/// datagram of zeros, with a valid IPv4 header. The UDP checksum is 0 (none),
/// which IPv4 allows.
fn frame(len: usize) -> Result<Vec<u8>, String> {
    const HEADERS: usize = 14 + 20 + 8;
    if !(HEADERS..=usize::from(u16::MAX)).contains(&len) {
        return Err(format!(
            "a frame of {len} bytes: it must hold its {HEADERS} bytes of headers and fit IPv4"
        ));
    }
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&DST_MAC);
    f[6..12].copy_from_slice(&SRC_MAC);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&SRC_IP);
    ip[16..20].copy_from_slice(&DST_IP);
    let sum = checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&((len - 34) as u16).to_be_bytes());
    Ok(f)
}

#[derive(Debug, PartialEq)]
enum Via {
    /// Injected into `dev`'s receive path by the kernel (run where `dev` receives).
    Xdp,
    /// Sent out of `dev` (run on the host whose interface leads to the link).
    Packet,
}

#[derive(Debug)]
struct Args {
    dev: String,
    seconds: f64,
    len: usize,
    cpu: Option<usize>,
    via: Via,
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        dev: String::new(),
        seconds: 8.0,
        len: 1514,
        cpu: None,
        via: Via::Xdp,
    };
    while let Some(flag) = argv.next() {
        let mut value = || argv.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--dev" => a.dev = value()?,
            "--seconds" => {
                let v = value()?;
                a.seconds = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("--seconds {v}: not a positive number"))?;
            }
            "--len" => {
                let v = value()?;
                a.len = v.parse().map_err(|_| format!("--len {v}: not a size"))?;
            }
            "--cpu" => {
                let v = value()?;
                a.cpu = Some(v.parse().map_err(|_| format!("--cpu {v}: not a CPU"))?);
            }
            "--via" => {
                a.via = match value()?.as_str() {
                    "xdp" => Via::Xdp,
                    "packet" => Via::Packet,
                    v => return Err(format!("--via {v}: xdp or packet")),
                }
            }
            _ => {
                return Err(format!(
                    "unknown argument {flag:?}; usage: flood --dev IFACE [--via xdp|packet] [--seconds S] [--len BYTES] [--cpu N]"
                ))
            }
        }
    }
    if a.dev.is_empty() {
        return Err("--dev IFACE is required".into());
    }
    Ok(a)
}

fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "pinning to CPU {cpu}: {}",
                io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

fn run(a: Args) -> Result<String, String> {
    let data = frame(a.len)?;
    let cname = CString::new(a.dev.clone()).map_err(|_| "--dev with a NUL byte".to_string())?;
    // SAFETY: cname is a valid C string.
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if ifindex == 0 {
        return Err(format!(
            "no interface {:?} in this network namespace",
            a.dev
        ));
    }
    if let Some(cpu) = a.cpu {
        pin(cpu)?;
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(a.seconds);
    let frames = match a.via {
        Via::Xdp => inject(&a.dev, ifindex, &data, deadline)?,
        Via::Packet => send(&a.dev, ifindex, &data, deadline)?,
    };
    let seconds = started.elapsed().as_secs_f64();
    Ok(format!(
        "{{\"dev\": \"{}\", \"via\": \"{:?}\", \"frame_bytes\": {}, \"frames\": {frames}, \"seconds\": {seconds:.3}, \"frames_per_s\": {:.0}}}",
        a.dev,
        a.via,
        a.len,
        frames as f64 / seconds
    ))
}

/// Frames injected into `dev`'s receive path until `deadline`.
fn inject(dev: &str, ifindex: u32, data: &[u8], deadline: Instant) -> Result<u64, String> {
    let prog = load_pass()?;
    let mut ctx = XdpMd {
        data: 0,
        data_end: data.len() as u32,
        data_meta: 0,
        ingress_ifindex: ifindex,
        rx_queue_index: 0,
        egress_ifindex: 0,
    };
    let mut frames: u64 = 0;
    let mut repeat = REPEAT_FIRST;
    while Instant::now() < deadline {
        let call = Instant::now();
        let mut attr = TestRun {
            prog_fd: prog.as_raw_fd() as u32,
            retval: 0,
            data_size_in: data.len() as u32,
            data_size_out: 0,
            data_in: data.as_ptr() as u64,
            data_out: 0,
            repeat,
            duration: 0,
            ctx_size_in: std::mem::size_of::<XdpMd>() as u32,
            ctx_size_out: 0,
            ctx_in: &mut ctx as *mut XdpMd as u64,
            ctx_out: 0,
            flags: BPF_F_TEST_XDP_LIVE_FRAMES,
            cpu: 0,
            batch_size: BATCH,
            pad: 0,
            rest: [0; 8],
        };
        bpf(BPF_PROG_TEST_RUN, &mut attr).map_err(|e| {
            format!(
                "running the XDP program in live-frame mode on {dev} (Linux 5.18+; frames up to \
                 about 3.5 KB, else --via packet): {e}"
            )
        })?;
        frames += u64::from(repeat);
        if call.elapsed() < CALL {
            repeat = repeat.saturating_mul(2).min(1 << 26);
        }
    }
    Ok(frames)
}

/// Frames sent out of `dev` until `deadline`, 64 a sendmmsg.
fn send(dev: &str, ifindex: u32, data: &[u8], deadline: Instant) -> Result<u64, String> {
    const BATCH: usize = 64;
    let err = |what: &str| format!("{what} on {dev}: {}", io::Error::last_os_error());
    let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
    // SAFETY: plain socket call; the fd is owned below.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto) };
    if raw < 0 {
        return Err(err("opening an AF_PACKET socket (needs root)"));
    }
    // SAFETY: raw is a fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: sockaddr_ll is plain data; all-zero is valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    addr.sll_ifindex = ifindex as i32;
    // SAFETY: addr is a valid sockaddr_ll of the size passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    if rc < 0 {
        return Err(err("binding"));
    }
    let one: libc::c_int = 1;
    // SAFETY: one is a c_int, the option's size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    if rc < 0 {
        return Err(err("setting PACKET_QDISC_BYPASS"));
    }
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: mmsghdr is plain data; all-zero is valid.
    let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for h in hdrs.iter_mut() {
        h.msg_hdr.msg_iov = &mut iov;
        h.msg_hdr.msg_iovlen = 1;
    }
    let mut frames: u64 = 0;
    while Instant::now() < deadline {
        // SAFETY: every header points at the one iovec over `data`, which
        // outlives the call; the kernel only reads them.
        let sent = unsafe { libc::sendmmsg(fd.as_raw_fd(), hdrs.as_mut_ptr(), BATCH as u32, 0) };
        match sent {
            n if n > 0 => frames += n as u64,
            _ => {
                let e = io::Error::last_os_error();
                // A full transmit path: the frame is the link's to lose, try again.
                if !matches!(e.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::EAGAIN)) {
                    return Err(format!("sending on {dev}: {e}"));
                }
            }
        }
    }
    Ok(frames)
}

fn main() {
    match parse(std::env::args().skip(1)).and_then(run) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("flood: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_a_header_with_its_checksum_is_zero() {
        let f = frame(1514).unwrap();
        assert_eq!(checksum(&f[14..34]), 0);
    }

    #[test]
    fn lengths_are_the_frames() {
        let f = frame(1514).unwrap();
        assert_eq!(f.len(), 1514);
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 1500);
        assert_eq!(u16::from_be_bytes([f[38], f[39]]), 1480);
        assert_eq!(&f[0..6], &DST_MAC);
    }

    #[test]
    fn a_frame_too_short_for_its_headers_is_refused() {
        assert!(frame(41).unwrap_err().contains("41 bytes"));
        assert!(frame(42).is_ok());
    }

    #[test]
    fn arguments() {
        let a = parse(
            ["--dev", "r0", "--seconds", "2", "--cpu", "1"]
                .map(String::from)
                .into_iter(),
        )
        .unwrap();
        assert_eq!(
            (a.dev.as_str(), a.seconds, a.cpu, a.len),
            ("r0", 2.0, Some(1), 1514)
        );
        assert_eq!(a.via, Via::Xdp);
        let a = parse(
            ["--dev", "eth0", "--via", "packet"]
                .map(String::from)
                .into_iter(),
        )
        .unwrap();
        assert_eq!(a.via, Via::Packet);
        assert!(parse(
            ["--dev", "eth0", "--via", "udp"]
                .map(String::from)
                .into_iter()
        )
        .unwrap_err()
        .contains("xdp or packet"));
        assert!(parse(std::iter::empty()).unwrap_err().contains("--dev"));
        assert!(parse(
            ["--dev", "r0", "--seconds", "-1"]
                .map(String::from)
                .into_iter()
        )
        .unwrap_err()
        .contains("positive"));
        assert!(parse(["--bogus"].map(String::from).into_iter())
            .unwrap_err()
            .contains("unknown"));
    }
}
