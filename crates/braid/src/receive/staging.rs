//! Where a file waits until it is published: `.braid-partial`, a directory
//! beside the destination that braid alone writes. It holds, per file, the
//! part file the blocks land in and its journal, named by a hash of the
//! destination's name. Nothing braid writes while receiving can therefore
//! replace a user's file (a name like `.big.tmp` is the user's), follow a
//! link a user planted, or pass the 255-byte limit on a name.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{Code, Error, Result};

pub use crate::pathsafe::STAGING_DIR;
const PART: &str = "part";
const JOURNAL: &str = "journal";
const JOURNAL_NEW: &str = "journal.new";

/// Bytes a path may take, the terminating NUL included (Linux's PATH_MAX).
pub const PATH_MAX: usize = 4096;
/// What the staging directory adds to a destination's directory path.
pub const STAGING_OVERHEAD: usize = 1 + STAGING_DIR.len() + 1 + 32 + 1 + JOURNAL_NEW.len();

/// The three names of one destination inside its staging directory.
#[derive(Clone, Debug)]
pub struct Names {
    pub dir: PathBuf,
    pub part: PathBuf,
    pub journal: PathBuf,
    pub journal_new: PathBuf,
}

impl Names {
    /// `dest_dir` is the destination's directory, `name` its file name.
    pub fn new(dest_dir: &Path, name: &str) -> Names {
        let dir = dest_dir.join(STAGING_DIR);
        let stem = crate::receive::hex(&blake3::hash(name.as_bytes()).as_bytes()[..16]);
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
pub fn ensure(dest_dir: &Path) -> Result<bool> {
    let dir = dest_dir.join(STAGING_DIR);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(false),
        Ok(_) => Err(Error::refused(
            Code::ForbiddenPath,
            format!(
                "{} is braid's staging directory but is not a directory",
                dir.display()
            ),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir(&dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            Ok(true)
        }
        Err(e) => Err(Error::io(format!("reading {}", dir.display()), e)),
    }
}

/// Removes the staging directory if nothing is left in it.
pub fn remove_if_empty(dest_dir: &Path) {
    let _ = fs::remove_dir(dest_dir.join(STAGING_DIR));
}

/// Removes part files and journals of `dest_dir`'s staging directory that
/// no session has touched for `ttl` (an abandoned transfer's leftovers),
/// except those in `keep`.
pub fn sweep(dest_dir: &Path, ttl: Duration, keep: &[&Path]) {
    let dir = dest_dir.join(STAGING_DIR);
    // Only braid's own directory: a link in its place must not lead the sweep elsewhere.
    if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return;
    }
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    let now = SystemTime::now();
    for e in entries.flatten() {
        let path = e.path();
        if keep.contains(&path.as_path()) {
            continue;
        }
        let old = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > ttl);
        if old {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Opens an existing part file for writing, never through a link.
pub fn open_part(part: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(part)
        .map_err(|e| Error::io(format!("opening {}", part.display()), e))
}

/// Makes a fresh, empty part file (or empties a stale one: the staging
/// directory is braid's alone, and no live session holds the name).
pub fn new_part(part: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(part)
        .map_err(|e| Error::io(format!("creating {}", part.display()), e))
}

/// Makes a fresh part file of `size` bytes with its space claimed, so a
/// full disk shows up before any data moves.
pub fn create_part(part: &Path, size: u64) -> Result<()> {
    let file = new_part(part)?;
    if size > 0 {
        // SAFETY: fallocate on an fd we own, with in-range arguments.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size as libc::off_t) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            drop(file);
            let _ = fs::remove_file(part);
            return Err(Error::io(
                format!("allocating {size} bytes for {}", part.display()),
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
pub fn sync_filesystem(fd: &impl AsRawFd, what: &str) -> Result<()> {
    // SAFETY: syncfs on an fd we hold open.
    if unsafe { libc::syncfs(fd.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(Error::io(
            format!("syncing the filesystem of {what}"),
            io::Error::last_os_error(),
        ))
    }
}

/// The device a path lives on.
pub fn device(p: &Path) -> Option<u64> {
    fs::metadata(p).ok().map(|m| m.dev())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_hidden_fixed_length_and_per_name() {
        let long = "n".repeat(255);
        let a = Names::new(Path::new("/r/d"), &long);
        let b = Names::new(Path::new("/r/d"), "n");
        assert!(a.part.starts_with("/r/d/.braid-partial"));
        assert_ne!(a.part, b.part);
        for p in [&a.part, &a.journal, &a.journal_new] {
            let name = p.file_name().unwrap().len();
            assert!(name <= 32 + 1 + JOURNAL_NEW.len(), "{p:?}");
        }
        assert_eq!(
            a.journal_new.as_os_str().len() - Path::new("/r/d").as_os_str().len(),
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

    #[test]
    fn a_link_or_file_in_the_staging_place_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert!(ensure(d.path()).unwrap());
        assert!(!ensure(d.path()).unwrap());
        let e = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/tmp", e.path().join(STAGING_DIR)).unwrap();
        assert!(matches!(ensure(e.path()), Err(Error::Refused { .. })));
    }

    #[test]
    fn a_sweep_does_not_follow_a_link_in_the_staging_place() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let victim = elsewhere.path().join("old");
        fs::write(&victim, b"keep").unwrap();
        File::options()
            .write(true)
            .open(&victim)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join(STAGING_DIR)).unwrap();
        sweep(d.path(), Duration::from_secs(3600), &[]);
        assert!(victim.exists());
    }

    #[test]
    fn a_sweep_removes_only_what_is_old() {
        let d = tempfile::tempdir().unwrap();
        ensure(d.path()).unwrap();
        let n = Names::new(d.path(), "f");
        create_part(&n.part, 10).unwrap();
        fs::write(&n.journal, b"{}").unwrap();
        sweep(d.path(), Duration::from_secs(3600), &[]);
        assert!(n.part.exists());
        let old = SystemTime::now() - Duration::from_secs(7200);
        File::options()
            .write(true)
            .open(&n.part)
            .unwrap()
            .set_modified(old)
            .unwrap();
        sweep(d.path(), Duration::from_secs(3600), &[]);
        assert!(!n.part.exists() && n.journal.exists());
    }
}
