//! A directory and what lies below it, reached without ever following a
//! link.
//!
//! A root is opened once; every path below it is then resolved from that
//! descriptor by openat2(2) with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, and
//! every operation on a name (mkdirat, renameat, unlinkat, statat) is made
//! relative to the descriptor of the directory that holds it, never following
//! the name itself. A path that climbs out, or a name swapped for a link at
//! any moment, makes the operation fail; nothing outside the root is ever
//! touched, whatever a local user does to the tree meanwhile. Checks by path
//! beforehand (which give the clearer messages) are only that: the descriptors
//! are what keeps braid inside.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, ResolveFlags, Timespec, Timestamps};

/// Resolution below a root: no `..` out of it, no absolute path, no link of
/// any kind on the way or at the end.
const BENEATH: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

/// openat2 asks the caller to try again when a rename elsewhere raced its
/// walk; after this many tries the error stands.
const RETRIES: usize = 8;

/// An open directory, and the path it was reached by (for messages only).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What a name is, without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    Other,
}

/// A name's metadata, without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    pub size: u64,
    /// Permission bits (and setuid, setgid, sticky).
    pub mode: u32,
    pub mtime_ns: i64,
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    pub gid: u32,
}

impl Meta {
    fn of(st: &rfs::Stat) -> Meta {
        let kind = match rfs::FileType::from_raw_mode(st.st_mode) {
            rfs::FileType::RegularFile => Kind::File,
            rfs::FileType::Directory => Kind::Dir,
            rfs::FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        };
        Meta {
            kind,
            size: st.st_size as u64,
            mode: st.st_mode & 0o7777,
            mtime_ns: st.st_mtime * 1_000_000_000 + st.st_mtime_nsec as i64,
            dev: st.st_dev,
            ino: st.st_ino,
            uid: st.st_uid,
            gid: st.st_gid,
        }
    }

    /// Of an open file or directory.
    pub fn of_fd(fd: impl AsFd) -> io::Result<Meta> {
        Ok(Meta::of(&rfs::fstat(fd)?))
    }
}

/// How [`Dir::file`] opens a file below the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Read and write an existing file.
    Write,
    /// Create it (mode 0600) or empty the one there.
    Create,
}

/// A relative path's directory part and its last name.
fn split(rel: &Path) -> io::Result<(&Path, &Path)> {
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, Path::new(name))),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no entry", rel.display()),
        )),
    }
}

fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    let mut tries = 0;
    loop {
        match f() {
            Err(rustix::io::Errno::AGAIN) if tries < RETRIES => tries += 1,
            r => return r.map_err(io::Error::from),
        }
    }
}

impl Dir {
    /// A root as the user named it: a link the user gave is theirs to follow.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = rfs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            fd,
            path: path.to_owned(),
        })
    }

    /// The path this directory was reached by, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How a path below shows in messages.
    pub fn shown(&self, rel: &Path) -> PathBuf {
        self.path.join(rel)
    }

    fn open_at(&self, rel: &Path, flags: OFlags, mode: u32) -> io::Result<OwnedFd> {
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        retry(|| {
            rfs::openat2(
                &self.fd,
                rel,
                flags | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::from_raw_mode(mode),
                BENEATH,
            )
        })
    }

    /// The directory `rel` below this one ("" for this one again).
    pub fn dir(&self, rel: &Path) -> io::Result<Dir> {
        let fd = self.open_at(rel, OFlags::RDONLY | OFlags::DIRECTORY, 0)?;
        Ok(Dir {
            fd,
            path: self.shown(rel),
        })
    }

    /// The file `rel` below this one.
    pub fn file(&self, rel: &Path, access: Access) -> io::Result<File> {
        let (flags, mode) = match access {
            Access::Read => (OFlags::RDONLY, 0),
            Access::Write => (OFlags::RDWR, 0),
            Access::Create => (OFlags::RDWR | OFlags::CREATE | OFlags::TRUNC, 0o600),
        };
        let fd = self.open_at(rel, flags, mode)?;
        let file = File::from(fd);
        // A directory opens read-only as a file would; it is no file.
        if access == Access::Read && file.metadata()?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a directory", self.shown(rel).display()),
            ));
        }
        Ok(file)
    }

    /// What `rel` is, not following it; `None` if nothing has the name.
    pub fn meta(&self, rel: &Path) -> io::Result<Option<Meta>> {
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        match rfs::statat(&parent.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Meta::of(&st))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// What the symbolic link `rel` holds, read without following it.
    pub fn read_link(&self, rel: &Path) -> io::Result<std::ffi::OsString> {
        use std::os::unix::ffi::OsStringExt;
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        let target = rfs::readlinkat(&parent.fd, name, Vec::new())?;
        Ok(std::ffi::OsString::from_vec(target.into_bytes()))
    }

    /// Makes `rel` a symbolic link to `target` (its parent exists, the name
    /// is free), owned as `owner` says. The link is only written: braid never
    /// follows one below a root, so where it points cannot lead a later
    /// session astray.
    pub fn symlink(&self, target: &str, rel: &Path, owner: Owner) -> io::Result<()> {
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        rfs::symlinkat(target, &parent.fd, name)?;
        if !owner.is_none() {
            let (uid, gid) = owner.ids();
            rfs::chownat(&parent.fd, name, uid, gid, AtFlags::SYMLINK_NOFOLLOW)?;
        }
        Ok(())
    }

    /// Makes `rel` a further name (a hard link) of the regular file `file`,
    /// both below this directory, reached without following a link; the
    /// name must be free. Anything but a regular file at `file` is refused.
    pub fn hard_link(&self, file: &Path, rel: &Path) -> io::Result<()> {
        let (from_dir, from_name) = split(file)?;
        let from_dir = self.dir(from_dir)?;
        let st = rfs::statat(&from_dir.fd, from_name, AtFlags::SYMLINK_NOFOLLOW)?;
        if Meta::of(&st).kind != Kind::File {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", file.display()),
            ));
        }
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        // Without AT_SYMLINK_FOLLOW: a link swapped in meanwhile is linked
        // as itself, never followed.
        rfs::linkat(&from_dir.fd, from_name, &parent.fd, name, AtFlags::empty())?;
        Ok(())
    }

    /// Makes the directory `rel` (its parent exists).
    pub fn create_dir(&self, rel: &Path, mode: u32) -> io::Result<()> {
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        rfs::mkdirat(&parent.fd, name, Mode::from_raw_mode(mode))?;
        Ok(())
    }

    /// Removes the file (not a directory) `rel`; a link there goes, not what it names.
    pub fn remove_file(&self, rel: &Path) -> io::Result<()> {
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        rfs::unlinkat(&parent.fd, name, AtFlags::empty())?;
        Ok(())
    }

    /// Removes the empty directory `rel`.
    pub fn remove_dir(&self, rel: &Path) -> io::Result<()> {
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        rfs::unlinkat(&parent.fd, name, AtFlags::REMOVEDIR)?;
        Ok(())
    }

    /// Renames `from` to `to`, both below this directory.
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (fp, fname) = split(from)?;
        let (tp, tname) = split(to)?;
        let (fdir, tdir) = (self.dir(fp)?, self.dir(tp)?);
        rfs::renameat(&fdir.fd, fname, &tdir.fd, tname)?;
        Ok(())
    }

    /// The names in this directory (not `.` and `..`), with what each is, in
    /// no order; a name that is not UTF-8 is given as its bytes, lossily.
    pub fn entries(&self) -> io::Result<Vec<(std::ffi::OsString, Kind)>> {
        use std::os::unix::ffi::OsStrExt;
        let mut out = Vec::new();
        for e in rfs::Dir::read_from(&self.fd)? {
            let e = e?;
            let name = e.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match e.file_type() {
                rfs::FileType::RegularFile => Kind::File,
                rfs::FileType::Directory => Kind::Dir,
                rfs::FileType::Symlink => Kind::Link,
                rfs::FileType::Unknown => {
                    match rfs::statat(&self.fd, e.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => Meta::of(&st).kind,
                        Err(_) => Kind::Other,
                    }
                }
                _ => Kind::Other,
            };
            out.push((std::ffi::OsStr::from_bytes(name).to_owned(), kind));
        }
        Ok(out)
    }

    /// Gives this directory `owner`, `mode` (permission bits) and `mtime_ns`.
    pub fn stamp(&self, mode: u32, mtime_ns: i64, owner: Owner) -> io::Result<()> {
        stamp(&self.fd, mode, mtime_ns, owner)
    }

    pub fn meta_here(&self) -> io::Result<Meta> {
        Meta::of_fd(&self.fd)
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The ids an entry is given (--owner, --group); `None` leaves one as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owner {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

impl Owner {
    pub fn is_none(&self) -> bool {
        self.uid.is_none() && self.gid.is_none()
    }

    fn ids(&self) -> (Option<rfs::Uid>, Option<rfs::Gid>) {
        (
            self.uid.map(rfs::Uid::from_raw),
            self.gid.map(rfs::Gid::from_raw),
        )
    }
}

/// Gives an open file or directory `owner`, `mode` and `mtime_ns`, through
/// its descriptor (what the name means now does not matter). The owner
/// comes first: changing it clears setuid and setgid, which the mode then
/// sets where they are kept.
pub fn stamp(fd: impl AsFd, mode: u32, mtime_ns: i64, owner: Owner) -> io::Result<()> {
    if !owner.is_none() {
        let (uid, gid) = owner.ids();
        rfs::fchown(&fd, uid, gid)?;
    }
    rfs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777))?;
    let t = UNIX_EPOCH + Duration::from_nanos(mtime_ns.max(0) as u64);
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let ts = Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as _,
    };
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: rfs::UTIME_OMIT,
        },
        last_modification: ts,
    };
    rfs::futimens(&fd, &times)?;
    Ok(())
}

/// A relative path of plain names (no root, `.`, `..`): what a path below a
/// root must be before it is resolved.
pub fn is_plain(rel: &Path) -> bool {
    rel.components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_and_climbs_are_refused_at_every_step() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"s").unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/f"), b"f").unwrap();
        symlink(outside.path(), d.path().join("a/out")).unwrap();
        symlink("f", d.path().join("a/near")).unwrap();
        let root = Dir::open(d.path()).unwrap();
        assert!(root.file(Path::new("a/f"), Access::Read).is_ok());
        for bad in ["a/out/secret", "a/near", "../x", "a/../../x"] {
            assert!(
                root.file(Path::new(bad), Access::Read).is_err(),
                "{bad} opened"
            );
        }
        assert!(root.file(Path::new("a/out/new"), Access::Create).is_err());
        assert!(!outside.path().join("new").exists());
        assert!(root.dir(Path::new("a/out")).is_err());
        assert!(root.create_dir(Path::new("a/out/d"), 0o700).is_err());
        assert_eq!(
            root.meta(Path::new("a/out")).unwrap().unwrap().kind,
            Kind::Link
        );
        assert_eq!(root.meta(Path::new("a/none")).unwrap(), None);
        // A link removed is the link, not what it names.
        root.remove_file(Path::new("a/out")).unwrap();
        assert!(outside.path().join("secret").exists());
    }

    #[test]
    fn a_directory_swapped_for_a_link_stops_what_runs_through_it() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = Dir::open(d.path()).unwrap();
        root.create_dir(Path::new("s"), 0o700).unwrap();
        let s = root.dir(Path::new("s")).unwrap();
        std::fs::rename(d.path().join("s"), d.path().join("moved")).unwrap();
        symlink(outside.path(), d.path().join("s")).unwrap();
        // By path from the root: refused. By the descriptor held: still the real one.
        assert!(root.file(Path::new("s/x"), Access::Create).is_err());
        assert!(root.dir(Path::new("s")).is_err());
        std::fs::write(d.path().join("moved/y"), b"y").unwrap();
        let names: Vec<_> = s.entries().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["y"]);
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_stamp_goes_through_the_descriptor() {
        let d = tempfile::tempdir().unwrap();
        let root = Dir::open(d.path()).unwrap();
        root.create_dir(Path::new("x"), 0o700).unwrap();
        root.dir(Path::new("x"))
            .unwrap()
            .stamp(0o750, 1_500_000_000_000_000_000, Owner::default())
            .unwrap();
        let m = root.meta(Path::new("x")).unwrap().unwrap();
        assert_eq!((m.mode, m.mtime_ns), (0o750, 1_500_000_000_000_000_000));
        root.rename(Path::new("x"), Path::new("y")).unwrap();
        root.remove_dir(Path::new("y")).unwrap();
        assert!(root.entries().unwrap().is_empty());
    }
}
