//! Where a file waits until it is published: `.braid-partial`, a directory
//! beside the destination that braid alone writes. It holds, per file, the
//! part file the blocks land in and its journal, named by a hash of the
//! destination's name. Nothing braid writes while receiving can therefore
//! replace a user's file (a name like `.big.tmp` is the user's), follow a
//! link a user planted, or pass the 255-byte limit on a name. Every name
//! here is relative to the receiving root and reached through its
//! descriptor (see `beneath`): a staging directory swapped for a link, at
//! any moment, leads nowhere.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Code, Error, Result};
use crate::files::beneath::{Access, Dir, Kind};

pub use crate::files::pathsafe::STAGING_DIR;
const PART: &str = "part";
const JOURNAL: &str = "journal";
const JOURNAL_NEW: &str = "journal.new";

/// Bytes a path may take, the terminating NUL included (Linux's PATH_MAX).
pub const PATH_MAX: usize = 4096;
/// What the staging directory adds to a destination's directory path.
pub const STAGING_OVERHEAD: usize = 1 + STAGING_DIR.len() + 1 + 32 + 1 + JOURNAL_NEW.len();

/// The names of one destination inside its staging directory, relative to
/// the receiving root.
#[derive(Clone, Debug)]
pub struct Names {
    pub dir: PathBuf,
    pub part: PathBuf,
    pub journal: PathBuf,
    pub journal_new: PathBuf,
}

impl Names {
    /// `dest_dir` is the destination's directory below the root, `name` its file name.
    pub fn new(dest_dir: &Path, name: &str) -> Names {
        let dir = dest_dir.join(STAGING_DIR);
        let stem = crate::files::treehash::hex(&blake3::hash(name.as_bytes()).as_bytes()[..16]);
        Names {
            part: dir.join(format!("{stem}.{PART}")),
            journal: dir.join(format!("{stem}.{JOURNAL}")),
            journal_new: dir.join(format!("{stem}.{JOURNAL_NEW}")),
            dir,
        }
    }
}

/// Makes the staging directory of `dest_dir` unless it exists; returns
/// whether it made it. A link or a file in its place is refused.
pub fn ensure(root: &Dir, dest_dir: &Path) -> Result<bool> {
    let dir = dest_dir.join(STAGING_DIR);
    let shown = root.shown(&dir);
    match root.meta(&dir) {
        Ok(Some(m)) if m.kind == Kind::Dir => Ok(false),
        Ok(Some(_)) => Err(Error::refused(
            Code::ForbiddenPath,
            format!(
                "{} is braid's staging directory but is not a directory",
                shown.display()
            ),
        )),
        Ok(None) => {
            root.create_dir(&dir, 0o700)
                .map_err(|e| Error::io(format!("creating {}", shown.display()), e))?;
            Ok(true)
        }
        Err(e) => Err(Error::io(format!("reading {}", shown.display()), e)),
    }
}

/// Removes the staging directory if nothing is left in it.
pub fn remove_if_empty(root: &Dir, dest_dir: &Path) {
    let _ = root.remove_dir(&dest_dir.join(STAGING_DIR));
}

/// Removes part files and journals of `dest_dir`'s staging directory that
/// no session has touched for `ttl` (an abandoned transfer's leftovers),
/// except those in `keep`. The directory is opened once, without following
/// a link, and each name is looked at and removed relative to it: a link
/// put in its place, before or during the sweep, leads the sweep nowhere.
pub fn sweep(root: &Dir, dest_dir: &Path, ttl: Duration, keep: &[&Path]) {
    let dir = dest_dir.join(STAGING_DIR);
    let Ok(staging) = root.dir(&dir) else {
        return;
    };
    let Ok(entries) = staging.entries() else {
        return;
    };
    let now = SystemTime::now();
    for (name, kind) in entries {
        let name = Path::new(&name);
        if kind != Kind::File || keep.contains(&dir.join(name).as_path()) {
            continue;
        }
        let old = staging
            .meta(name)
            .ok()
            .flatten()
            .filter(|m| m.kind == Kind::File)
            .and_then(|m| {
                let t = UNIX_EPOCH + Duration::from_nanos(m.mtime_ns.max(0) as u64);
                now.duration_since(t).ok()
            })
            .is_some_and(|age| age > ttl);
        if old {
            let _ = staging.remove_file(name);
        }
    }
}

/// Opens an existing part file for writing, never through a link.
pub fn open_part(root: &Dir, part: &Path) -> Result<File> {
    root.file(part, Access::Write)
        .map_err(|e| Error::io(format!("opening {}", root.shown(part).display()), e))
}

/// Makes a fresh, empty part file (or empties a stale one: the staging
/// directory is braid's alone, and no live session holds the name).
pub fn new_part(root: &Dir, part: &Path) -> Result<File> {
    root.file(part, Access::Create)
        .map_err(|e| Error::io(format!("creating {}", root.shown(part).display()), e))
}

/// Makes a fresh part file of `size` bytes with its space claimed, so a
/// full disk shows up before any data moves.
pub fn create_part(root: &Dir, part: &Path, size: u64) -> Result<()> {
    let file = new_part(root, part)?;
    if size > 0 {
        // SAFETY: fallocate on an fd we own, with in-range arguments.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size as libc::off_t) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            drop(file);
            let _ = root.remove_file(part);
            return Err(Error::io(
                format!("allocating {size} bytes for {}", root.shown(part).display()),
                e,
            ));
        }
    }
    Ok(())
}

/// Gives back the space of `start..end` of `file` (a hole reads as zeros):
/// blocks of zeros arrive as holes, so a sparse file stays sparse, and a
/// part file kept for --resume holds only the space of what arrived.
pub fn punch_hole(file: &File, start: u64, end: u64) -> io::Result<()> {
    if end <= start {
        return Ok(());
    }
    // SAFETY: fallocate on an fd we own; the range lies inside the file.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            start as libc::off_t,
            (end - start) as libc::off_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Starts writing `start..end` of `file` to its device, without waiting
/// for it (write-behind). A landed block's pages otherwise stay dirty until
/// the kernel's writeback finds them (up to half a minute later, or when a
/// tenth of memory is dirty), and the sync that makes a file durable before
/// it is published then writes all of that at the end: seconds on a disk
/// slower than the path, every one of them after the last byte arrived.
/// Begun as each block lands, the writing overlaps the transfer and the end's
/// sync waits for the last blocks only. Advisory: a filesystem that refuses
/// is left to that sync, which reports any error that matters.
pub fn write_behind(file: &File, start: u64, end: u64) {
    if end <= start {
        return;
    }
    // SAFETY: sync_file_range on an fd we own; it only schedules I/O.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            start as _,
            (end - start) as _,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

/// Whether a block is all zeros (then it is written as a hole). Real data
/// shows a non-zero byte at once; a zero block is or-ed in 16-byte words,
/// which the compiler vectorises.
pub fn is_zero(data: &[u8]) -> bool {
    if data.iter().take(64).any(|b| *b != 0) {
        return false;
    }
    let words = data.chunks_exact(16);
    let tail = words.remainder();
    words.fold(0u128, |acc, w| {
        acc | u128::from_ne_bytes(w.try_into().expect("16 bytes"))
    }) == 0
        && tail.iter().all(|b| *b == 0)
}

/// Makes what was written to files on `fd`'s filesystem durable: one
/// call for a batch of files, where an fsync per file costs a journal
/// commit each.
pub fn sync_filesystem(fd: impl std::os::fd::AsFd, what: &str) -> Result<()> {
    // SAFETY: syncfs on an fd we hold open.
    if unsafe { libc::syncfs(fd.as_fd().as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(Error::io(
            format!("syncing the filesystem of {what}"),
            io::Error::last_os_error(),
        ))
    }
}

/// The device a directory below the root lives on.
pub fn device(root: &Dir, dir: &Path) -> Option<u64> {
    root.dir(dir)
        .and_then(|d| d.meta_here())
        .ok()
        .map(|m| m.dev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn names_are_hidden_fixed_length_and_per_name() {
        let long = "n".repeat(255);
        let a = Names::new(Path::new("r/d"), &long);
        let b = Names::new(Path::new("r/d"), "n");
        assert!(a.part.starts_with("r/d/.braid-partial"));
        assert_ne!(a.part, b.part);
        for p in [&a.part, &a.journal, &a.journal_new] {
            let name = p.file_name().unwrap().len();
            assert!(name <= 32 + 1 + JOURNAL_NEW.len(), "{p:?}");
        }
        assert_eq!(
            a.journal_new.as_os_str().len() - Path::new("r/d").as_os_str().len(),
            STAGING_OVERHEAD
        );
    }

    #[test]
    fn zero_blocks_are_told_apart_from_data() {
        assert!(is_zero(&[]));
        assert!(is_zero(&vec![0u8; 1 << 20]));
        assert!(is_zero(&[0u8; 17]));
        let mut late = vec![0u8; 1 << 20];
        late[(1 << 20) - 1] = 1;
        assert!(!is_zero(&late));
        let mut mid = vec![0u8; 4099];
        mid[2000] = 9;
        assert!(!is_zero(&mid));
        assert!(!is_zero(&[0, 0, 3]));
        assert!(!is_zero(&[7]));
    }

    fn root(d: &tempfile::TempDir) -> Dir {
        Dir::open(d.path()).unwrap()
    }

    #[test]
    fn a_link_or_file_in_the_staging_place_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert!(ensure(&root(&d), Path::new("")).unwrap());
        assert!(!ensure(&root(&d), Path::new("")).unwrap());
        let e = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/tmp", e.path().join(STAGING_DIR)).unwrap();
        assert!(matches!(
            ensure(&root(&e), Path::new("")),
            Err(Error::Refused { .. })
        ));
    }

    fn age(p: &Path) {
        File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
    }

    #[test]
    fn a_sweep_does_not_follow_a_link_in_the_staging_place() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let victim = elsewhere.path().join("old");
        fs::write(&victim, b"keep").unwrap();
        age(&victim);
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join(STAGING_DIR)).unwrap();
        sweep(&root(&d), Path::new(""), Duration::from_secs(3600), &[]);
        assert!(victim.exists());
    }

    /// The staging directory swapped for a link again and again while
    /// sweeps run: not one file outside is removed.
    #[test]
    fn a_sweep_racing_a_swap_to_a_link_removes_nothing_outside() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        for i in 0..50 {
            let v = elsewhere.path().join(format!("old{i}"));
            fs::write(&v, b"keep").unwrap();
            age(&v);
        }
        let real = d.path().join("real");
        let staging = d.path().join(STAGING_DIR);
        fs::create_dir(&real).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, real, staging, target) = (
                stop.clone(),
                real.clone(),
                staging.clone(),
                elsewhere.path().to_owned(),
            );
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = fs::rename(&real, &staging);
                    let _ = fs::rename(&staging, &real);
                    let _ = std::os::unix::fs::symlink(&target, &staging);
                    let _ = fs::remove_file(&staging);
                }
            })
        };
        let r = root(&d);
        for _ in 0..2000 {
            sweep(&r, Path::new(""), Duration::from_secs(3600), &[]);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 50);
    }

    #[test]
    fn a_sweep_removes_only_what_is_old() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        ensure(&r, Path::new("")).unwrap();
        let n = Names::new(Path::new(""), "f");
        create_part(&r, &n.part, 10).unwrap();
        fs::write(d.path().join(&n.journal), b"{}").unwrap();
        sweep(&r, Path::new(""), Duration::from_secs(3600), &[]);
        assert!(d.path().join(&n.part).exists());
        age(&d.path().join(&n.part));
        sweep(&r, Path::new(""), Duration::from_secs(3600), &[]);
        assert!(!d.path().join(&n.part).exists() && d.path().join(&n.journal).exists());
    }
}
