//! Per-socket settings, defaults and TCP-P group state, through the pinned maps.

use std::ffi::CStr;
use std::fmt;
use std::io;
use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use libbpf_rs::{MapCore, MapFlags, MapHandle};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::skel::types;

pub(crate) const SOCK_MAP: &str = "braid_sock";
pub(crate) const DEFAULTS_MAP: &str = "braid_defaults";
pub(crate) const GROUPS_MAP: &str = "braid_groups";
/// bpf/intf.h BRAID_ABI_VERSION; the native tests check the two agree.
pub(crate) const ABI_VERSION: u32 = 2;
/// bpf/intf.h BRAID_FRAC_SCALE.
pub(crate) const FRAC_SCALE: u32 = 1000;
/// bpf/intf.h BRAID_STRENGTH_SCALE.
pub(crate) const STRENGTH_SCALE: u32 = 1000;
const MAX_STRENGTH: u32 = 1000;

const GROUP_USER: u32 = 1;
const GROUP_INET: u32 = 2;
const GROUP_INET6: u32 = 3;

/// A TCP-P strength k >= 1, kept in thousandths (the BPF side's unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Strength(u32);

impl Strength {
    /// k = 1: the group takes what one TCP flow takes.
    pub const ONE: Strength = Strength(STRENGTH_SCALE);
    /// The largest k a socket takes.
    pub const MAX: Strength = Strength(MAX_STRENGTH * STRENGTH_SCALE);

    /// k in thousandths; an error names the allowed range.
    pub fn from_milli(milli: u32) -> Result<Self> {
        if !(Self::ONE.0..=Self::MAX.0).contains(&milli) {
            return Err(Error::Invalid(format!(
                "strength {} is out of range: k must be between 1 and {MAX_STRENGTH}",
                milli as f64 / STRENGTH_SCALE as f64
            )));
        }
        Ok(Strength(milli))
    }

    /// k in thousandths.
    pub fn milli(self) -> u32 {
        self.0
    }

    /// k as a number.
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / STRENGTH_SCALE as f64
    }
}

impl FromStr for Strength {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let k: f64 = s.trim().parse().map_err(|_| {
            Error::Invalid(format!(
                "strength {s:?} is not a number (k >= 1, e.g. 1 or 2.5)"
            ))
        })?;
        if !k.is_finite() {
            return Err(Error::Invalid(format!(
                "strength {s:?} is not a finite number"
            )));
        }
        Strength::from_milli((k * STRENGTH_SCALE as f64).round() as u32)
    }
}

impl fmt::Display for Strength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 % STRENGTH_SCALE == 0 {
            write!(f, "{}", self.0 / STRENGTH_SCALE)
        } else {
            write!(f, "{}", self.as_f64())
        }
    }
}

impl Serialize for Strength {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_f64())
    }
}

/// Checks a frac_cwnd: 1000 is Reno's growth, 100 a virtual RTT ten times longer.
pub fn check_frac_cwnd(frac_cwnd: u32) -> Result<u32> {
    if !(1..=FRAC_SCALE).contains(&frac_cwnd) {
        return Err(Error::Invalid(format!(
            "frac_cwnd {frac_cwnd} is out of range: it must be in [1, {FRAC_SCALE}] \
             (1000 = Reno, 100 = a virtual RTT 10 times longer)"
        )));
    }
    Ok(frac_cwnd)
}

/// What a socket without settings of its own uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Defaults {
    /// braid_frac's growth in thousandths of Reno's.
    pub frac_cwnd: u32,
    /// braid_tcpp's strength.
    pub strength: Strength,
}

impl Default for Defaults {
    /// The papers' settings: m = 10 (Hacker 2004), k = 1 (Cho & Bettati).
    fn default() -> Self {
        Defaults {
            frac_cwnd: 100,
            strength: Strength::ONE,
        }
    }
}

/// One socket's settings; `None` leaves the default in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SocketSettings {
    /// braid_frac's growth in thousandths of Reno's, [1, 1000].
    pub frac_cwnd: Option<u32>,
    /// braid_tcpp's strength.
    pub strength: Option<Strength>,
    /// braid_tcpp's group; without one the group is the destination address.
    pub group_id: Option<u64>,
}

impl SocketSettings {
    fn to_raw(self) -> Result<types::braid_sock_settings> {
        if let Some(f) = self.frac_cwnd {
            check_frac_cwnd(f)?;
        }
        if self.group_id == Some(0) {
            return Err(Error::Invalid(
                "group id 0 is reserved for grouping by destination address".into(),
            ));
        }
        Ok(types::braid_sock_settings {
            frac_cwnd: self.frac_cwnd.unwrap_or(0),
            strength_milli: self.strength.map_or(0, Strength::milli),
            group_id: self.group_id.unwrap_or(0),
        })
    }
}

/// Which sockets form a TCP-P group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "id", rename_all = "lowercase")]
pub enum GroupKey {
    /// An explicit group id set per socket.
    User(u64),
    /// Every socket to this IPv4 destination (the paper's default).
    Inet(Ipv4Addr),
    /// Every socket to this IPv6 destination.
    Inet6(Ipv6Addr),
}

impl GroupKey {
    fn from_raw(k: &types::braid_group_key) -> Option<Self> {
        match k.kind {
            GROUP_USER => Some(GroupKey::User(k.id[0] as u64 | (k.id[1] as u64) << 32)),
            // Addresses are stored in network order, i.e. as the bytes appear in memory.
            GROUP_INET => Some(GroupKey::Inet(Ipv4Addr::from(k.id[0].to_ne_bytes()))),
            GROUP_INET6 => {
                let mut b = [0u8; 16];
                for (i, w) in k.id.iter().enumerate() {
                    b[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
                }
                Some(GroupKey::Inet6(Ipv6Addr::from(b)))
            }
            _ => None,
        }
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupKey::User(id) => write!(f, "group {id}"),
            GroupKey::Inet(a) => write!(f, "to {a}"),
            GroupKey::Inet6(a) => write!(f, "to {a}"),
        }
    }
}

/// A live TCP-P group, as its members last reported it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupInfo {
    /// What the members share.
    pub key: GroupKey,
    /// Cookie of the network namespace the members live in.
    pub netns: u64,
    /// N, the sockets in the group now.
    pub members: u32,
    /// k.
    pub strength: Strength,
    /// Sum of the members' congestion windows, packets.
    pub cwnd_sum: i64,
    /// Group reductions signalled (Eq. 9).
    pub reductions: u64,
    /// Losses the burst guard kept from cascading.
    pub guarded: u64,
}

/// Handles on the pinned maps of an installed braid.
pub struct Controls {
    pin_dir: PathBuf,
    sock: MapHandle,
    defaults: MapHandle,
    groups: MapHandle,
}

impl Controls {
    /// Opens the maps pinned by `braid cc install`.
    ///
    /// Where the pins are out of sight (`ip netns exec` mounts a fresh /sys,
    /// hiding /sys/fs/bpf) but the controls are registered, the maps are found
    /// by name among the kernel's BPF maps instead, the newest first.
    pub fn open(pin_dir: &Path) -> Result<Self> {
        let hidden = !pin_dir.exists() && crate::installed_in_kernel();
        let open = |name: &str| {
            let path = pin_dir.join(name);
            if hidden {
                return map_by_name(name).ok_or(Error::NotInstalled { path });
            }
            if !path.exists() {
                return Err(Error::NotInstalled { path });
            }
            MapHandle::from_pinned_path(&path)
                .map_err(|source| Error::map(format!("opening {}", path.display()), source))
        };
        Ok(Controls {
            pin_dir: pin_dir.to_owned(),
            sock: open(SOCK_MAP)?,
            defaults: open(DEFAULTS_MAP)?,
            groups: open(GROUPS_MAP)?,
        })
    }

    /// Gives the socket its own settings; they take effect at its next ACK.
    pub fn apply(&self, fd: BorrowedFd<'_>, settings: SocketSettings) -> Result<()> {
        let raw = settings.to_raw()?;
        let key = fd.as_raw_fd().to_ne_bytes();
        self.sock
            .update(&key, to_bytes(&raw), MapFlags::ANY)
            .map_err(|source| {
                Error::map(
                    format!("setting socket {} settings", fd.as_raw_fd()),
                    source,
                )
            })
    }

    /// The settings a socket was given, if any.
    pub fn socket_settings(&self, fd: BorrowedFd<'_>) -> Result<Option<SocketSettings>> {
        let key = fd.as_raw_fd().to_ne_bytes();
        let raw = self.sock.lookup(&key, MapFlags::ANY).map_err(|source| {
            Error::map(
                format!("reading socket {} settings", fd.as_raw_fd()),
                source,
            )
        })?;
        Ok(raw.map(|b| {
            let r: types::braid_sock_settings = from_bytes(&b);
            SocketSettings {
                frac_cwnd: (r.frac_cwnd != 0).then_some(r.frac_cwnd),
                strength: (r.strength_milli != 0).then_some(Strength(r.strength_milli)),
                group_id: (r.group_id != 0).then_some(r.group_id),
            }
        }))
    }

    /// The defaults in force.
    pub fn defaults(&self) -> Result<Defaults> {
        let raw = read_defaults(&self.defaults)?;
        if raw.abi_version != ABI_VERSION {
            return Err(Error::AbiMismatch {
                path: self.pin_dir.clone(),
                found: raw.abi_version,
                expected: ABI_VERSION,
            });
        }
        Ok(Defaults {
            frac_cwnd: raw.frac_cwnd,
            strength: Strength(raw.strength_milli),
        })
    }

    /// How many windows the controls found out of bounds and put back since
    /// they were installed (bpf/math/reno.h, braid_window_repair).
    pub fn repaired_windows(&self) -> Result<u32> {
        Ok(read_defaults(&self.defaults)?.repaired)
    }

    /// Changes the defaults; sockets without settings follow at their next ACK.
    pub fn set_defaults(&self, d: Defaults) -> Result<()> {
        write_defaults(&self.defaults, d)
    }

    /// Every live TCP-P group.
    pub fn groups(&self) -> Result<Vec<GroupInfo>> {
        let mut out = Vec::new();
        for key in self.groups.keys() {
            // A group may vanish between listing and reading: skip it.
            let Some(value) = self
                .groups
                .lookup(&key, MapFlags::ANY)
                .map_err(|source| Error::map("reading a TCP-P group", source))?
            else {
                continue;
            };
            let k: types::braid_group_key = from_bytes(&key);
            let g: types::braid_group = from_bytes(&value);
            let Some(key) = GroupKey::from_raw(&k) else {
                continue;
            };
            out.push(GroupInfo {
                key,
                netns: k.netns,
                members: g.members,
                strength: Strength(g.strength_milli),
                cwnd_sum: g.cwnd_sum,
                reductions: g.epoch,
                guarded: g.guarded,
            });
        }
        out.sort_by_key(|g| (g.netns, g.key.to_string()));
        Ok(out)
    }
}

fn map_by_name(name: &str) -> Option<MapHandle> {
    let newest = libbpf_rs::query::MapInfoIter::default()
        .filter(|m| m.name.to_str() == Some(name))
        .map(|m| m.id)
        .max()?;
    MapHandle::from_map_id(newest).ok()
}

/// The defaults map's one entry as it is (all zero when never written).
pub(crate) fn read_defaults(map: &dyn MapCore) -> Result<types::braid_defaults> {
    Ok(map
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|source| Error::map("reading the defaults", source))?
        .map(|b| from_bytes(&b))
        .unwrap_or_default())
}

pub(crate) fn write_defaults(map: &dyn MapCore, d: Defaults) -> Result<()> {
    // The count of repaired windows shares the entry; a new setting keeps it
    // (a repair that lands between this read and the write is lost: rare,
    // and only a count).
    let repaired = read_defaults(map)?.repaired;
    let raw = types::braid_defaults {
        abi_version: ABI_VERSION,
        frac_cwnd: check_frac_cwnd(d.frac_cwnd)?,
        strength_milli: Strength::from_milli(d.strength.milli())?.milli(),
        repaired,
    };
    map.update(&0u32.to_ne_bytes(), to_bytes(&raw), MapFlags::ANY)
        .map_err(|source| Error::map("writing the defaults", source))
}

fn to_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a plain #[repr(C)] struct of integers from the skeleton;
    // every byte is initialised (the structs have no padding, see intf.h).
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }
}

fn from_bytes<T: Copy + Default>(b: &[u8]) -> T {
    if b.len() < size_of::<T>() {
        return T::default();
    }
    // SAFETY: the slice holds at least size_of::<T>() bytes and T is plain integers.
    unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<T>()) }
}

/// Chooses the socket's congestion control (`TCP_CONGESTION`).
pub fn set_congestion_control(fd: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    // SAFETY: the pointer and length describe `name`'s bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("selecting congestion control {name:?}: {e}"),
        ));
    }
    Ok(())
}

/// Caps the socket's sending rate at `rate` bytes per second
/// (SO_MAX_PACING_RATE); `None` lifts the cap. Either way the kernel paces
/// the connection from then on, at TCP's own rate where that is lower than
/// the cap (twice the window a round trip in slow start, 1.2 times after):
/// the kernel starts pacing a socket the first time it is given any value
/// but the all-ones one, which means "no cap" and leaves an unpaced socket
/// unpaced, so "no cap" is told as the largest rate short of it.
pub fn set_max_pacing_rate(fd: BorrowedFd<'_>, rate: Option<u64>) -> io::Result<()> {
    let value: u64 = rate.unwrap_or(u64::MAX - 1);
    // SAFETY: the pointer and length describe `value`; the kernel reads an
    // unsigned long when given 8 bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&value as *const u64).cast(),
            size_of::<u64>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("setting SO_MAX_PACING_RATE to {value}: {e}"),
        ));
    }
    Ok(())
}

/// The socket's cap on its sending rate, bytes per second
/// (SO_MAX_PACING_RATE; `u64::MAX`: none was ever set, and the kernel does
/// not pace it).
pub fn max_pacing_rate(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // SAFETY: any 8 bytes are a u64.
    unsafe { socket_option(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE) }
}

/// A socket option the kernel writes as a plain value of type `T`, which
/// starts as `T::default()` (a kernel that writes fewer bytes, an older
/// struct, leaves the rest as they were).
///
/// # Safety
/// Every byte pattern the kernel may write must be a valid `T` (integers,
/// and `repr(C)` structs of them).
pub(crate) unsafe fn socket_option<T: Default>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<T> {
    let mut value = T::default();
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `value`; the kernel writes at
    // most `len` bytes, and the caller vouches for what they may be.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// The socket's congestion control.
pub fn congestion_control(fd: BorrowedFd<'_>) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len describe a writable buffer.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(len as usize);
    Ok(CStr::from_bytes_until_nul(&buf[..=end.min(15)])
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&buf[..end]).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_cap_is_told_as_a_rate_that_keeps_the_socket_paced() {
        use std::os::fd::AsFd;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert_eq!(
            max_pacing_rate(s.as_fd()).unwrap(),
            u64::MAX,
            "a new socket"
        );
        set_max_pacing_rate(s.as_fd(), Some(1_250_000)).unwrap();
        assert_eq!(max_pacing_rate(s.as_fd()).unwrap(), 1_250_000);
        set_max_pacing_rate(s.as_fd(), None).unwrap();
        assert_eq!(max_pacing_rate(s.as_fd()).unwrap(), u64::MAX - 1);
    }

    #[test]
    fn strength_parses_integers_and_fractions() {
        assert_eq!("1".parse::<Strength>().unwrap().milli(), 1000);
        assert_eq!("2.5".parse::<Strength>().unwrap().milli(), 2500);
        assert_eq!("2.5".parse::<Strength>().unwrap().to_string(), "2.5");
        assert_eq!("10".parse::<Strength>().unwrap().to_string(), "10");
    }

    #[test]
    fn strength_below_one_or_not_a_number_is_refused_by_name() {
        let e = "0.5".parse::<Strength>().unwrap_err().to_string();
        assert!(e.contains("between 1 and"), "{e}");
        let e = "x".parse::<Strength>().unwrap_err().to_string();
        assert!(e.contains("\"x\""), "{e}");
        assert!("inf".parse::<Strength>().is_err());
    }

    #[test]
    fn frac_cwnd_range() {
        assert!(check_frac_cwnd(1).is_ok());
        assert!(check_frac_cwnd(1000).is_ok());
        assert!(check_frac_cwnd(0)
            .unwrap_err()
            .to_string()
            .contains("[1, 1000]"));
        assert!(check_frac_cwnd(1001).is_err());
    }

    #[test]
    fn socket_settings_zero_means_default() {
        let raw = SocketSettings {
            frac_cwnd: Some(100),
            ..Default::default()
        }
        .to_raw()
        .unwrap();
        assert_eq!(
            (raw.frac_cwnd, raw.strength_milli, raw.group_id),
            (100, 0, 0)
        );
        assert!(SocketSettings {
            group_id: Some(0),
            ..Default::default()
        }
        .to_raw()
        .is_err());
    }

    #[test]
    fn group_keys_decode_network_order() {
        let k = types::braid_group_key {
            kind: GROUP_INET,
            id: [u32::from_ne_bytes([10, 0, 0, 2]), 0, 0, 0],
            ..Default::default()
        };
        assert_eq!(
            GroupKey::from_raw(&k),
            Some(GroupKey::Inet(Ipv4Addr::new(10, 0, 0, 2)))
        );
        let k = types::braid_group_key {
            kind: GROUP_USER,
            id: [5, 1, 0, 0],
            ..Default::default()
        };
        assert_eq!(GroupKey::from_raw(&k), Some(GroupKey::User(5 | 1 << 32)));
        assert_eq!(GroupKey::from_raw(&types::braid_group_key::default()), None);
    }

    #[test]
    fn byte_round_trip_of_map_values() {
        let g = types::braid_group {
            members: 4,
            strength_milli: 1000,
            epoch: 7,
            cwnd_sum: -3,
            ..Default::default()
        };
        let back: types::braid_group = from_bytes(to_bytes(&g));
        assert_eq!((back.members, back.epoch, back.cwnd_sum), (4, 7, -3));
    }
}
