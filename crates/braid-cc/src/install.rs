//! Registering the controls with the kernel and removing them again.
//!
//! `install` loads bpf/braid_cc.bpf.c, attaches each `tcp_congestion_ops`
//! through a struct_ops link and pins links and maps under the pin directory:
//! the controls stay registered after the loader exits, until `uninstall`
//! removes the pins.

use std::fs;
use std::io;
use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore};

use crate::controls::{names, Control};
use crate::error::{Error, Result};
use crate::settings::{self, Defaults, DEFAULTS_MAP, GROUPS_MAP, SOCK_MAP};
use crate::skel::BraidCcSkelBuilder;
use crate::sysctl;

const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
const BPF_FS_ROOT: &str = "/sys/fs/bpf";

/// What `install` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallReport {
    /// The controls were registered now.
    Installed { pin_dir: PathBuf },
    /// Every control was registered already; nothing changed but the allowed list.
    AlreadyInstalled { pin_dir: PathBuf },
}

/// What `uninstall` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UninstallReport {
    /// Controls unregistered.
    pub unregistered: Vec<&'static str>,
    /// Pinned files removed.
    pub unpinned: usize,
}

pub(crate) fn link_pin(pin_dir: &Path, c: Control) -> PathBuf {
    pin_dir.join(format!("link_{}", c.name()))
}

/// The controls whose struct_ops link is pinned in `pin_dir`.
pub fn installed_controls(pin_dir: &Path) -> Vec<Control> {
    Control::ALL
        .into_iter()
        .filter(|c| link_pin(pin_dir, *c).exists())
        .collect()
}

/// Registers the five controls, pins them under `pin_dir`, writes `defaults`
/// unless defaults were set before, and allows unprivileged use.
pub fn install(pin_dir: &Path, defaults: Defaults) -> Result<InstallReport> {
    require_root("registering congestion controls")?;
    ensure_bpffs()?;
    let present = installed_controls(pin_dir);
    let available = sysctl::available_controls()?;
    let registered = |c: &Control| available.iter().any(|a| a == c.name());
    if present.len() == Control::ALL.len() && Control::ALL.iter().all(registered) {
        allow_all()?;
        return Ok(InstallReport::AlreadyInstalled {
            pin_dir: pin_dir.to_owned(),
        });
    }
    if !present.is_empty() {
        // A half-finished earlier install: start from a clean slate.
        uninstall(pin_dir)?;
    }
    if let Some(c) = Control::ALL.iter().find(|c| registered(c)) {
        return Err(Error::Invalid(format!(
            "{c} is already registered with the kernel but not pinned in {}; \
             was braid installed with another pin directory?",
            pin_dir.display()
        )));
    }
    fs::create_dir_all(pin_dir).map_err(|e| Error::io("creating", pin_dir, e))?;

    let mut storage = MaybeUninit::uninit();
    let mut open = BraidCcSkelBuilder::default()
        .open(&mut storage)
        .map_err(|source| Error::Load { source })?;
    for (map, name) in [
        (&mut open.maps.braid_sock, SOCK_MAP),
        (&mut open.maps.braid_defaults, DEFAULTS_MAP),
        (&mut open.maps.braid_groups, GROUPS_MAP),
    ] {
        // libbpf reuses a map already pinned at the path, so settings survive a reinstall.
        map.set_pin_path(pin_dir.join(name))
            .map_err(|source| Error::map(format!("setting the pin path of {name}"), source))?;
    }
    let mut loaded = open.load().map_err(|source| Error::Load { source })?;

    init_defaults(&loaded.maps.braid_defaults, pin_dir, defaults)?;

    let maps = &mut loaded.maps;
    let mut links: Vec<(Control, Link)> = Vec::new();
    for c in Control::ALL {
        let map = match c {
            Control::Stcp => &mut maps.braid_stcp,
            Control::Hstcp => &mut maps.braid_hstcp,
            Control::Htcp => &mut maps.braid_htcp,
            Control::Frac => &mut maps.braid_frac,
            Control::Tcpp => &mut maps.braid_tcpp,
        };
        // Links attached so far unregister when dropped by an early return.
        let link = map.attach_struct_ops().map_err(|source| Error::Register {
            name: c.name(),
            source,
        })?;
        links.push((c, link));
    }
    for (c, link) in &mut links {
        let path = link_pin(pin_dir, *c);
        if let Err(source) = link.pin(&path) {
            let _ = uninstall(pin_dir);
            return Err(Error::map(
                format!("pinning {} at {}", c.name(), path.display()),
                source,
            ));
        }
    }
    allow_all()?;
    Ok(InstallReport::Installed {
        pin_dir: pin_dir.to_owned(),
    })
}

fn init_defaults(map: &dyn MapCore, pin_dir: &Path, defaults: Defaults) -> Result<()> {
    let current = settings::read_defaults(map)?;
    if current.abi_version == settings::ABI_VERSION {
        return Ok(());
    }
    if current.abi_version != 0 {
        return Err(Error::AbiMismatch {
            path: pin_dir.to_owned(),
            found: current.abi_version,
            expected: settings::ABI_VERSION,
        });
    }
    settings::write_defaults(map, defaults)
}

fn allow_all() -> Result<()> {
    let allowed = sysctl::allowed_controls()?;
    let wanted = sysctl::with_names(&allowed, &names());
    if wanted != allowed {
        sysctl::write_allowed(&wanted)?;
    }
    Ok(())
}

/// Unregisters the controls and removes every pin under `pin_dir`. Sockets
/// that still use a control keep it until they close.
pub fn uninstall(pin_dir: &Path) -> Result<UninstallReport> {
    require_root("unregistering congestion controls")?;
    let mut report = UninstallReport::default();
    let allowed = sysctl::allowed_controls()?;
    let remaining = sysctl::without_names(&allowed, &names());
    if remaining != allowed {
        sysctl::write_allowed(&remaining)?;
    }
    for c in Control::ALL {
        // Removing the last reference to the link unregisters the control.
        if remove_pin(&link_pin(pin_dir, c))? {
            report.unregistered.push(c.name());
            report.unpinned += 1;
        }
    }
    for name in [SOCK_MAP, DEFAULTS_MAP, GROUPS_MAP] {
        if remove_pin(&pin_dir.join(name))? {
            report.unpinned += 1;
        }
    }
    match fs::remove_dir(pin_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("removing", pin_dir, e)),
    }
    wait_unregistered(&report.unregistered)?;
    Ok(report)
}

/// The kernel frees a link, and so unregisters its control, from a work
/// queue after the last reference goes: wait for it, so that `uninstall`
/// returning means the names are gone and `install` can register them again.
fn wait_unregistered(names: &[&'static str]) -> Result<()> {
    const LIMIT: Duration = Duration::from_secs(10);
    let start = Instant::now();
    loop {
        let available = sysctl::available_controls()?;
        let left: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| available.iter().any(|a| a == n))
            .collect();
        if left.is_empty() {
            return Ok(());
        }
        if start.elapsed() > LIMIT {
            return Err(Error::Invalid(format!(
                "the pins are removed but the kernel still lists {} after {}s",
                left.join(" "),
                LIMIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn remove_pin(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("removing", path, e)),
    }
}

fn require_root(what: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::NotPermitted {
            what: what.to_owned(),
        });
    }
    Ok(())
}

/// Pins need a BPF filesystem; a bare machine may not have mounted one.
fn ensure_bpffs() -> Result<()> {
    let root = Path::new(BPF_FS_ROOT);
    if is_bpffs(root)? {
        return Ok(());
    }
    let src = c"bpf";
    let target = c"/sys/fs/bpf";
    // SAFETY: all pointers are NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            src.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(Error::io(
            "mounting the BPF filesystem at",
            root,
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

fn is_bpffs(path: &Path) -> Result<bool> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in path");
    let mut st = MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c` is a valid C string and `st` is large enough for statfs.
    let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(Error::io("inspecting", path, io::Error::last_os_error()));
    }
    // SAFETY: statfs succeeded and filled `st`.
    let st = unsafe { st.assume_init() };
    // f_type's width differs between libc targets.
    #[allow(clippy::unnecessary_cast)]
    let f_type = st.f_type as i64;
    Ok(f_type == BPF_FS_MAGIC)
}
