//! The receiving end of a file transfer. Blocks land in place (pwrite) in a
//! preallocated hidden temporary file beside the destination; a journal
//! beside it records the ranges that are on disk, so `--resume` moves only
//! what is missing; a file is published by rename once its BLAKE3 matches
//! the sender's. That hash is assembled from the blocks as they arrive (see
//! `treehash`), so nothing is read back but blocks held from before a resume. Nothing is written outside the root, and the destination
//! name never holds a partial file.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use braid_wire::{FileEntry, Message};
use serde::{Deserialize, Serialize};

use crate::conn::Conn;
use crate::error::{code, Error, Result};
use crate::manifest::mtime_ns;
use crate::pathsafe;
use crate::ranges::RangeSet;
use crate::telemetry::Telemetry;
use crate::treehash::{self, BlockTree};

pub const PART_SUFFIX: &str = ".braid-part";
pub const JOURNAL_SUFFIX: &str = ".braid-journal";
const JOURNAL_VERSION: u32 = 1;

/// One file being received.
pub struct Incoming {
    pub entry: FileEntry,
    pub dest: PathBuf,
    part: PathBuf,
    journal: PathBuf,
    file: Option<File>,
    /// Ranges on disk; `synced` is what the journal says.
    held: RangeSet,
    synced: RangeSet,
    /// The BLAKE3 tree of what was written in this session.
    tree: BlockTree,
    /// The destination already holds this exact file (resume): nothing to write.
    pub existing: bool,
    pub published: bool,
}

#[derive(Serialize, Deserialize)]
struct Journal {
    version: u32,
    size: u64,
    mtime_ns: i64,
    ranges: Vec<(u64, u64)>,
}

pub struct RecvShared {
    pub files: Vec<Mutex<Incoming>>,
    sizes: Vec<u64>,
    block_size: u32,
    pub tel: Arc<Telemetry>,
    /// Set once the sender said Close or the session failed: a stream ending now is no loss.
    pub ending: AtomicBool,
}

/// Creates `dir`'s missing parents below `root`, refusing symbolic links on the way.
fn make_parents(root: &Path, parts: &[&str]) -> Result<PathBuf> {
    let mut at = root.to_path_buf();
    for p in &parts[..parts.len() - 1] {
        at.push(p);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::Remote {
                    code: code::FORBIDDEN_PATH,
                    message: format!(
                        "{} is a symbolic link; braid does not write through links",
                        at.display()
                    ),
                })
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "{} exists and is not a directory",
                    at.display()
                )))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&at)
                .map_err(|e| Error::io(format!("creating {}", at.display()), e))?,
            Err(e) => return Err(Error::io(format!("reading {}", at.display()), e)),
        }
    }
    Ok(at)
}

impl Incoming {
    /// Prepares a file of the manifest: checks its path, makes its directory,
    /// and either picks up a journal (resume) or preallocates a fresh part file.
    fn open(root: &Path, entry: &FileEntry, resume: bool, block_size: u32) -> Result<Incoming> {
        let parts = pathsafe::components(&entry.path).map_err(|e| Error::Remote {
            code: code::FORBIDDEN_PATH,
            message: format!("refusing {:?}: {e}", entry.path),
        })?;
        let name = parts[parts.len() - 1];
        if pathsafe::is_internal(name) {
            return Err(Error::Remote {
                code: code::FORBIDDEN_PATH,
                message: format!("refusing {:?}: a braid temporary name", entry.path),
            });
        }
        let dir = make_parents(root, &parts)?;
        let dest = dir.join(name);
        let part = dir.join(format!(".{name}{PART_SUFFIX}"));
        let journal = dir.join(format!(".{name}{JOURNAL_SUFFIX}"));
        let mut f = Incoming {
            entry: entry.clone(),
            dest,
            part,
            journal,
            file: None,
            held: RangeSet::new(),
            synced: RangeSet::new(),
            tree: BlockTree::new(entry.size, block_size),
            existing: false,
            published: false,
        };
        if let Ok(m) = fs::symlink_metadata(&f.dest) {
            if m.file_type().is_symlink() || m.is_dir() {
                return Err(Error::Remote {
                    code: code::FORBIDDEN_PATH,
                    message: format!("{} exists and is not a regular file", f.dest.display()),
                });
            }
            if resume && m.len() == entry.size && mtime_ns(&m) == entry.mtime_ns {
                f.existing = true;
                f.held.insert(0, entry.size);
                return Ok(f);
            }
        }
        if resume {
            if let Some(ranges) = f.read_journal() {
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&f.part)
                    .map_err(|e| Error::io(format!("opening {}", f.part.display()), e))?;
                f.held = RangeSet::from_ranges(&ranges);
                f.synced = f.held.clone();
                f.file = Some(file);
                return Ok(f);
            }
        }
        let _ = fs::remove_file(&f.journal);
        let _ = fs::remove_file(&f.part);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&f.part)
            .map_err(|e| Error::io(format!("creating {}", f.part.display()), e))?;
        if entry.size > 0 {
            // Claim the space now: a full disk shows up before any data moves.
            // SAFETY: fallocate on an fd we own, with in-range arguments.
            let rc = unsafe {
                libc::fallocate(
                    std::os::fd::AsRawFd::as_raw_fd(&file),
                    0,
                    0,
                    entry.size as libc::off_t,
                )
            };
            if rc != 0 {
                let e = io::Error::last_os_error();
                let _ = fs::remove_file(&f.part);
                return Err(Error::io(
                    format!("allocating {} bytes for {}", entry.size, f.dest.display()),
                    e,
                ));
            }
        }
        f.file = Some(file);
        Ok(f)
    }

    fn read_journal(&self) -> Option<Vec<(u64, u64)>> {
        let j: Journal = serde_json::from_slice(&fs::read(&self.journal).ok()?).ok()?;
        let part_len = fs::symlink_metadata(&self.part)
            .ok()
            .filter(|m| m.is_file())?
            .len();
        (j.version == JOURNAL_VERSION
            && j.size == self.entry.size
            && j.mtime_ns == self.entry.mtime_ns
            && part_len == j.size)
            .then_some(j.ranges)
            .filter(|r| r.iter().all(|&(a, b)| a <= b && b <= self.entry.size))
    }

    /// Makes the data on disk durable, then records it in the journal
    /// (written beside and renamed over, so a crash leaves the old or the new).
    fn sync_journal(&mut self) -> Result<()> {
        if self.published || self.existing || self.held == self.synced {
            return Ok(());
        }
        if let Some(f) = &self.file {
            f.sync_data()
                .map_err(|e| Error::io(format!("syncing {}", self.part.display()), e))?;
        }
        let j = Journal {
            version: JOURNAL_VERSION,
            size: self.entry.size,
            mtime_ns: self.entry.mtime_ns,
            ranges: self.held.as_slice().to_vec(),
        };
        let tmp = self.journal.with_extension("tmp");
        fs::write(&tmp, serde_json::to_vec(&j).expect("a journal serialises"))
            .and_then(|_| fs::rename(&tmp, &self.journal))
            .map_err(|e| Error::io(format!("writing {}", self.journal.display()), e))?;
        self.synced = self.held.clone();
        Ok(())
    }

    /// Checks the whole file against the sender's hash and publishes it.
    fn verify_and_publish(&mut self, theirs: &[u8; 32]) -> Result<[u8; 32]> {
        if self.published {
            return Err(Error::Protocol(format!(
                "{} was verified already",
                self.entry.path
            )));
        }
        if !self.held.is_complete(self.entry.size) {
            return Err(Error::Protocol(format!(
                "{} is not complete: {} of {} bytes arrived",
                self.entry.path,
                self.held.covered(),
                self.entry.size
            )));
        }
        let ours = if self.existing {
            hash_path(&self.dest)?
        } else {
            self.tree_root()?
        };
        if &ours != theirs {
            if !self.existing {
                self.discard();
            }
            return Err(Error::Verify(format!(
                "{}: BLAKE3 {} here, {} at the sender",
                self.entry.path,
                hex(&ours[..8]),
                hex(&theirs[..8])
            )));
        }
        if !self.existing {
            let f = self.file.take().expect("a part file is open");
            f.set_permissions(fs::Permissions::from_mode(self.entry.mode & 0o7777))
                .map_err(|e| {
                    Error::io(format!("setting the mode of {}", self.part.display()), e)
                })?;
            let mtime = UNIX_EPOCH + Duration::from_nanos(self.entry.mtime_ns.max(0) as u64);
            f.set_modified(mtime).map_err(|e| {
                Error::io(format!("setting the mtime of {}", self.part.display()), e)
            })?;
            f.sync_all()
                .map_err(|e| Error::io(format!("syncing {}", self.part.display()), e))?;
            fs::rename(&self.part, &self.dest)
                .map_err(|e| Error::io(format!("publishing {}", self.dest.display()), e))?;
            let _ = fs::remove_file(&self.journal);
        }
        self.published = true;
        Ok(ours)
    }

    /// The part file's BLAKE3 from the blocks' values, reading back the
    /// blocks that arrived before a resume or in pieces of another size.
    fn tree_root(&mut self) -> Result<[u8; 32]> {
        let file = self.file.as_ref().expect("an unpublished file is open");
        let mut buf = Vec::new();
        for (i, offset, len) in self.tree.missing() {
            buf.resize(len, 0);
            file.read_exact_at(&mut buf, offset)
                .map_err(|e| Error::io(format!("hashing {}", self.part.display()), e))?;
            self.tree
                .set(i, treehash::hash_block(&buf, offset, self.entry.size));
        }
        Ok(self.tree.root().expect("every block has a value"))
    }

    /// Removes the temporary file and journal: what they hold is of no use.
    pub fn discard(&mut self) {
        self.file = None;
        let _ = fs::remove_file(&self.part);
        let _ = fs::remove_file(&self.journal);
    }
}

fn hash_path(p: &Path) -> Result<[u8; 32]> {
    crate::manifest::blake3_file(p)
        .map(|(h, _)| h)
        .map_err(|e| Error::io(format!("hashing {}", p.display()), e))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl RecvShared {
    /// Prepares every file of the manifest below `root`. On an error, the
    /// part files made so far are removed again.
    pub fn new(
        root: &Path,
        manifest: &[FileEntry],
        resume: bool,
        block_size: u32,
        tel: Arc<Telemetry>,
    ) -> Result<Arc<Self>> {
        let mut files: Vec<Incoming> = Vec::with_capacity(manifest.len());
        let mut seen = std::collections::HashSet::new();
        for e in manifest {
            if !seen.insert(e.path.as_str()) {
                for f in &mut files {
                    f.discard();
                }
                return Err(Error::Protocol(format!(
                    "the manifest names {} twice",
                    e.path
                )));
            }
            match Incoming::open(root, e, resume, block_size) {
                Ok(f) => files.push(f),
                Err(err) => {
                    for f in &mut files {
                        if !resume {
                            f.discard();
                        }
                    }
                    return Err(err);
                }
            }
        }
        let expected = files
            .iter()
            .map(|f| f.entry.size - f.held.covered().min(f.entry.size))
            .sum();
        tel.expected.store(expected, Ordering::Relaxed);
        Ok(Arc::new(RecvShared {
            sizes: files.iter().map(|f| f.entry.size).collect(),
            files: files.into_iter().map(Mutex::new).collect(),
            block_size,
            tel,
            ending: AtomicBool::new(false),
        }))
    }

    /// What the receiver holds of each file, for the sender's `Ranges`.
    pub fn held(&self) -> Vec<Vec<(u64, u64)>> {
        self.files
            .iter()
            .map(|f| f.lock().unwrap().held.as_slice().to_vec())
            .collect()
    }

    /// Records every file's progress in its journal.
    pub fn sync_journals(&self) -> Result<()> {
        for f in &self.files {
            f.lock().unwrap().sync_journal()?;
        }
        Ok(())
    }

    pub fn verify(&self, file: u32, theirs: &[u8; 32]) -> Result<[u8; 32]> {
        let f = self.files.get(file as usize).ok_or_else(|| {
            Error::Protocol(format!(
                "verify names file {file}, the manifest has {}",
                self.files.len()
            ))
        })?;
        f.lock().unwrap().verify_and_publish(theirs)
    }

    pub fn all_published(&self) -> bool {
        self.files.iter().all(|f| f.lock().unwrap().published)
    }

    /// After a failure that makes the data useless (disk full, bad hash).
    pub fn discard_all(&self) {
        for f in &self.files {
            let mut f = f.lock().unwrap();
            if !f.published && !f.existing {
                f.discard();
            }
        }
    }

    /// Writes a block in place and records its value in the file's tree
    /// (hashed here, before the file's lock is taken).
    fn write(&self, file: u32, offset: u64, data: &[u8]) -> Result<()> {
        let f = self.files.get(file as usize).ok_or_else(|| {
            Error::Protocol(format!("a block of file {file}, which the manifest lacks"))
        })?;
        let size = self.sizes[file as usize];
        let value = treehash::block_index(size, self.block_size, offset, data.len() as u64)
            .map(|i| (i, treehash::hash_block(data, offset, size)));
        let mut f = f.lock().unwrap();
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > f.entry.size)
        {
            return Err(Error::Protocol(format!(
                "a block at {offset}+{} is outside {} ({} bytes)",
                data.len(),
                f.entry.path,
                f.entry.size
            )));
        }
        if f.published || f.existing {
            return Ok(());
        }
        let file_ref = f.file.as_ref().expect("an unpublished file is open");
        file_ref
            .write_all_at(data, offset)
            .map_err(|e| Error::io(format!("writing {}", f.part.display()), e))?;
        f.held.insert(offset, offset + data.len() as u64);
        if let Some((i, v)) = value {
            f.tree.set(i, v);
        }
        Ok(())
    }
}

/// How a receiving stream ended.
pub enum Ended {
    /// The sender said Detach: this stream is finished.
    Detached,
    /// The connection died; the sender will send its blocks again.
    Lost(Error),
    /// The data or the disk failed: the session must stop.
    Fatal(Error),
}

/// Receives blocks on one stream and acknowledges them with a running count.
pub fn worker(stream: usize, conn: Conn, shared: &RecvShared) -> Ended {
    shared.tel.set_socket(stream, conn.stream());
    let Conn { mut r, mut w } = conn;
    let mut buf = vec![0u8; shared.block_size as usize];
    let mut total = 0u64;
    loop {
        let m = match r.recv_opt() {
            Ok(Some(m)) => m,
            Ok(None) => {
                return Ended::Lost(Error::Protocol(format!(
                    "stream {stream} closed without detaching"
                )))
            }
            Err(e @ Error::Connect { .. }) => return Ended::Lost(e),
            Err(e) => return Ended::Fatal(e),
        };
        match m {
            Message::Block {
                file,
                offset,
                len,
                checksum,
            } => {
                if len > shared.block_size {
                    return Ended::Fatal(Error::Protocol(format!(
                        "a block of {len} bytes; the session's blocks are {}",
                        shared.block_size
                    )));
                }
                let data = &mut buf[..len as usize];
                if let Err(e) = r.read_data(data) {
                    return Ended::Lost(e);
                }
                let crc = crc32c::crc32c(data);
                if crc != checksum {
                    return Ended::Fatal(Error::Verify(format!(
                        "block of file {file} at {offset}: CRC-32C {crc:08x}, the sender said {checksum:08x}"
                    )));
                }
                if let Err(e) = shared.write(file, offset, data) {
                    return Ended::Fatal(e);
                }
                total += len as u64;
                shared.tel.add(stream, len as u64);
                if let Err(e) = w.send(&Message::Progress { bytes: total }) {
                    return Ended::Lost(e);
                }
            }
            Message::Detach { .. } => return Ended::Detached,
            Message::Error { code, message } => {
                return Ended::Fatal(Error::Remote { code, message })
            }
            m => return Ended::Fatal(crate::session::unexpected("a block", &m)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::Output;

    fn entry(path: &str, data: &[u8]) -> FileEntry {
        FileEntry {
            path: path.into(),
            size: data.len() as u64,
            mode: 0o640,
            mtime_ns: 1_600_000_000_123_456_789,
        }
    }

    #[test]
    fn blocks_land_in_a_hidden_part_file_until_verified() {
        let root = tempfile::tempdir().unwrap();
        let data = b"hello, braid";
        let e = entry("d/f.txt", data);
        let s = RecvShared::new(
            root.path(),
            std::slice::from_ref(&e),
            false,
            4096,
            Telemetry::new(1, Output::Quiet),
        )
        .unwrap();
        s.write(0, 6, &data[6..]).unwrap();
        s.write(0, 0, &data[..6]).unwrap();
        assert!(!root.path().join("d/f.txt").exists());
        assert!(root.path().join("d/.f.txt.braid-part").exists());
        assert!(matches!(s.verify(0, &[0; 32]), Err(Error::Verify(_))));
        assert!(
            !root.path().join("d/.f.txt.braid-part").exists(),
            "a file that fails its hash is removed"
        );
    }

    #[test]
    fn a_verified_file_is_published_with_mode_and_mtime() {
        let root = tempfile::tempdir().unwrap();
        let data = b"0123456789";
        let e = entry("f", data);
        let s = RecvShared::new(
            root.path(),
            std::slice::from_ref(&e),
            false,
            4096,
            Telemetry::new(1, Output::Quiet),
        )
        .unwrap();
        s.write(0, 0, data).unwrap();
        let h = *blake3::hash(data).as_bytes();
        assert_eq!(s.verify(0, &h).unwrap(), h);
        let m = fs::metadata(root.path().join("f")).unwrap();
        assert_eq!(fs::read(root.path().join("f")).unwrap(), data);
        assert_eq!(m.permissions().mode() & 0o777, 0o640);
        assert_eq!(mtime_ns(&m), e.mtime_ns);
        assert!(
            fs::read_dir(root.path()).unwrap().count() == 1,
            "no part or journal left"
        );
    }

    #[test]
    fn a_journal_lets_resume_keep_what_is_on_disk() {
        let root = tempfile::tempdir().unwrap();
        let data = vec![7u8; 10_000];
        let e = entry("big", &data);
        let s = RecvShared::new(
            root.path(),
            std::slice::from_ref(&e),
            false,
            4096,
            Telemetry::new(1, Output::Quiet),
        )
        .unwrap();
        s.write(0, 0, &data[..4096]).unwrap();
        s.write(0, 8192, &data[8192..]).unwrap();
        s.sync_journals().unwrap();
        drop(s);
        let s = RecvShared::new(
            root.path(),
            std::slice::from_ref(&e),
            true,
            4096,
            Telemetry::new(1, Output::Quiet),
        )
        .unwrap();
        assert_eq!(s.held(), vec![vec![(0, 4096), (8192, 10_000)]]);
        // A different source (mtime changed) starts over.
        let mut other = e.clone();
        other.mtime_ns += 1;
        let s2 = RecvShared::new(
            root.path(),
            &[other],
            true,
            4096,
            Telemetry::new(1, Output::Quiet),
        )
        .unwrap();
        assert_eq!(s2.held(), vec![Vec::<(u64, u64)>::new()]);
    }

    #[test]
    fn the_hash_covers_blocks_from_before_a_resume_and_pieces_of_any_size() {
        let root = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
        let e = entry("f", &data);
        let want = *blake3::hash(&data).as_bytes();
        let open = |resume| {
            RecvShared::new(
                root.path(),
                std::slice::from_ref(&e),
                resume,
                4096,
                Telemetry::new(1, Output::Quiet),
            )
            .unwrap()
        };
        let s = open(false);
        s.write(0, 4096, &data[4096..8192]).unwrap();
        s.sync_journals().unwrap();
        drop(s);
        // The rest arrives after the resume: whole blocks, and pieces cut
        // by some other block size, which are hashed back from disk.
        let s = open(true);
        s.write(0, 0, &data[..4096]).unwrap();
        s.write(0, 8192, &data[8192..9000]).unwrap();
        s.write(0, 9000, &data[9000..]).unwrap();
        assert_eq!(s.verify(0, &want).unwrap(), want);
        assert_eq!(fs::read(root.path().join("f")).unwrap(), data);
    }

    #[test]
    fn writes_outside_the_file_or_root_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let s = RecvShared::new(
            root.path(),
            &[entry("f", b"abc")],
            false,
            4096,
            Telemetry::new(1, Output::Quiet),
        )
        .unwrap();
        assert!(matches!(s.write(0, 2, b"xy"), Err(Error::Protocol(_))));
        assert!(matches!(s.write(1, 0, b"x"), Err(Error::Protocol(_))));
        for bad in ["../x", "/abs", "a/../../b", ".f.braid-part"] {
            let r = RecvShared::new(
                root.path(),
                &[entry(bad, b"1")],
                false,
                4096,
                Telemetry::new(1, Output::Quiet),
            );
            assert!(
                matches!(
                    r,
                    Err(Error::Remote {
                        code: code::FORBIDDEN_PATH,
                        ..
                    })
                ),
                "{bad}"
            );
        }
        std::os::unix::fs::symlink("/tmp", root.path().join("link")).unwrap();
        let r = RecvShared::new(
            root.path(),
            &[entry("link/f", b"1")],
            false,
            4096,
            Telemetry::new(1, Output::Quiet),
        );
        assert!(matches!(
            r,
            Err(Error::Remote {
                code: code::FORBIDDEN_PATH,
                ..
            })
        ));
    }
}
