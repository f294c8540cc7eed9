//! The receiving end of a file transfer. Every check runs before anything
//! is created: paths stay below the root and never pass a link or braid's own
//! staging name, no live session of this process writes the same file, the
//! files fit in the free space and their blocks within this end's limit.
//! Blocks then land in place (pwrite; blocks of zeros as holes) in a
//! preallocated part file in the staging directory beside the destination
//! (see `staging`); a journal records what is durable (`journal`); a file is
//! published by rename once its BLAKE3 matches the sender's, in batches that
//! share one filesystem sync. That hash is assembled from the blocks as they
//! arrive (see `treehash`), so nothing is read back but blocks held from
//! before a resume. The destination name never holds a partial file, and a
//! failed session leaves only what `--resume` can use.

pub mod claims;
pub mod journal;
pub mod staging;

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use braid_wire::{FileEntry, Message};

use crate::conn::Conn;
use crate::error::{Code, Error, Result};
use crate::manifest::mtime_ns;
use crate::pathsafe;
use crate::ranges::RangeSet;
use crate::telemetry::{human_bytes, Telemetry};
use crate::treehash::{self, BlockTree};
use claims::{Claim, Claims};
use staging::Names;

/// Blocks of one session's files that this end keeps hash state for, by
/// default: 4 TiB in 1 MiB blocks, about 140 MB of memory.
pub const DEFAULT_MAX_BLOCKS: u64 = 1 << 22;
/// Leftovers of a transfer untouched this long are removed by the next
/// session that receives into the same directory.
pub const DEFAULT_PARTIAL_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// A receiving stream acknowledges at least this often while blocks stream in.
const ACK_EVERY: u64 = 4 << 20;
/// Part files open at once; past this a file is closed after each write, so
/// a tree of any number of files stays within the descriptor limit.
const OPEN_FILES: usize = 128;

/// How one receiving session treats its files.
#[derive(Clone)]
pub struct RecvOptions {
    pub resume: bool,
    pub block_size: u32,
    /// The destinations of this process's live sessions.
    pub claims: Arc<Claims>,
    pub max_blocks: u64,
    pub partial_ttl: Duration,
}

impl RecvOptions {
    pub fn new(resume: bool, block_size: u32, claims: Arc<Claims>) -> Self {
        RecvOptions {
            resume,
            block_size,
            claims,
            max_blocks: DEFAULT_MAX_BLOCKS,
            partial_ttl: DEFAULT_PARTIAL_TTL,
        }
    }
}

/// One entry of the manifest being received.
pub struct Incoming {
    pub entry: FileEntry,
    pub dest: PathBuf,
    names: Names,
    /// The part file, open while blocks arrive.
    file: Option<File>,
    /// Ranges on disk; `synced` is what the journal says.
    held: RangeSet,
    synced: RangeSet,
    /// The BLAKE3 tree of what was written in this session.
    tree: BlockTree,
    /// The destination already holds this exact file (resume): nothing to write.
    pub existing: bool,
    /// A directory: made before any data moved, its mode set at the end.
    pub dir: bool,
    /// The hash matched; the file waits for the next published batch.
    verified: bool,
    pub published: bool,
    /// The part file's filesystem, when it is not the root's (synced apart).
    other_device: bool,
    /// The part file exists: made up front for a file of more than one
    /// block, at its first block for a smaller one.
    part_made: bool,
    /// A journal may exist for it.
    journaled: bool,
    /// The part file has the entry's mode and mtime.
    stamped: bool,
}

pub struct RecvShared {
    pub files: Vec<Mutex<Incoming>>,
    sizes: Vec<u64>,
    block_size: u32,
    pub tel: Arc<Telemetry>,
    /// Held open for syncfs(2) on the root's filesystem.
    root: File,
    open: AtomicUsize,
    /// Verified files and our hash of each, to publish with the next batch.
    pending: Mutex<Vec<(u32, [u8; 32])>>,
    /// Directories this session made, parents first: removed again when a
    /// failed session leaves them empty.
    made: Vec<PathBuf>,
    /// Destination directories whose staging directory this session used.
    staged: Vec<PathBuf>,
    _claim: Claim,
}

/// What the checks learnt of one entry before anything is created.
struct Checked {
    dest: PathBuf,
    names: Names,
    existing: bool,
    held: RangeSet,
    /// Filled in by `create`: whether the part file was made up front.
    part_made: bool,
}

fn forbidden(message: String) -> Error {
    Error::refused(Code::ForbiddenPath, message)
}

/// The directory a path of the manifest lies in, below `root`.
fn parent_of(root: &Path, parts: &[&str]) -> PathBuf {
    let mut at = root.to_path_buf();
    at.extend(&parts[..parts.len() - 1]);
    at
}

/// Checks every directory on the way to each entry, once each: existing
/// ones must be directories and not links. Returns which exist.
fn check_dirs(root: &Path, manifest: &[FileEntry]) -> Result<HashMap<PathBuf, bool>> {
    let mut known: HashMap<PathBuf, bool> = HashMap::new();
    for e in manifest {
        let parts: Vec<&str> = e.path.split('/').collect();
        let upto = if e.is_dir() {
            parts.len()
        } else {
            parts.len() - 1
        };
        let mut at = root.to_path_buf();
        let mut parent_exists = true;
        for p in &parts[..upto] {
            at.push(p);
            if let Some(&exists) = known.get(&at) {
                parent_exists = exists;
                continue;
            }
            let exists = parent_exists
                && match fs::symlink_metadata(&at) {
                    Ok(m) if m.file_type().is_symlink() => {
                        return Err(forbidden(format!(
                            "{} is a symbolic link; braid does not write through links",
                            at.display()
                        )))
                    }
                    Ok(m) if m.is_dir() => true,
                    Ok(_) => {
                        return Err(Error::refused(
                            Code::BadRequest,
                            format!("{} exists and is not a directory", at.display()),
                        ))
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                    Err(e) => return Err(Error::io(format!("reading {}", at.display()), e)),
                };
            known.insert(at.clone(), exists);
            parent_exists = exists;
        }
    }
    Ok(known)
}

/// The manifest's own consistency: each path once, allowed, short enough,
/// and no file that is also the directory of another entry.
fn check_paths(root: &Path, manifest: &[FileEntry]) -> Result<()> {
    let root_len = root.as_os_str().len();
    let mut seen = HashSet::with_capacity(manifest.len());
    for e in manifest {
        let parts = pathsafe::components(&e.path)
            .map_err(|m| forbidden(format!("refusing {:?}: {m}", e.path)))?;
        if parts.iter().any(|p| pathsafe::is_internal(p)) {
            return Err(forbidden(format!(
                "refusing {:?}: {} is braid's staging directory",
                e.path,
                staging::STAGING_DIR
            )));
        }
        let name = parts[parts.len() - 1];
        let dir_len = root_len + 1 + e.path.len() - name.len();
        if root_len + 1 + e.path.len() >= staging::PATH_MAX
            || dir_len + staging::STAGING_OVERHEAD >= staging::PATH_MAX
        {
            return Err(Error::refused(
                Code::BadRequest,
                format!(
                    "refusing {}...: below {} the path would pass {} bytes",
                    shorten(&e.path, 60),
                    root.display(),
                    staging::PATH_MAX
                ),
            ));
        }
        if !seen.insert(e.path.as_str()) {
            return Err(Error::Protocol(format!(
                "the manifest names {} twice",
                e.path
            )));
        }
    }
    let files: HashSet<&str> = manifest
        .iter()
        .filter(|e| !e.is_dir())
        .map(|e| e.path.as_str())
        .collect();
    for e in manifest {
        for (i, _) in e.path.match_indices('/') {
            if files.contains(&e.path[..i]) {
                return Err(Error::refused(
                    Code::BadRequest,
                    format!(
                        "the manifest names {} as a file and as the directory of {}",
                        &e.path[..i],
                        e.path
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Bytes free for an unprivileged writer on `path`'s filesystem.
fn free_space(path: &Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::Usage(format!("{} contains a NUL byte", path.display())))?;
    // SAFETY: a NUL-terminated path and a zeroed struct the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(Error::io(
            format!("reading the free space of {}", path.display()),
            io::Error::last_os_error(),
        ));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// The first `n` bytes of `s` or fewer, cut at a character.
fn shorten(s: &str, n: usize) -> &str {
    let mut end = s.len().min(n);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl RecvShared {
    /// Prepares every entry of the manifest below `root`. Nothing is created
    /// until every check has passed; on an error later, what this call made
    /// is removed again.
    pub fn new(
        root: &Path,
        manifest: &[FileEntry],
        opts: &RecvOptions,
        tel: Arc<Telemetry>,
    ) -> Result<Arc<Self>> {
        check_paths(root, manifest)?;
        let claim = opts.claims.claim(
            manifest
                .iter()
                .filter(|e| !e.is_dir())
                .map(|e| root.join(&e.path))
                .collect(),
            |p| p.strip_prefix(root).unwrap_or(p).display().to_string(),
        )?;
        let dirs = check_dirs(root, manifest)?;
        let mut swept = HashSet::new();
        let mut checked = Vec::with_capacity(manifest.len());
        for e in manifest {
            let parts: Vec<&str> = e.path.split('/').collect();
            let name = parts[parts.len() - 1];
            let dir = parent_of(root, &parts);
            let dest = dir.join(name);
            let names = Names::new(&dir, name);
            let mut c = Checked {
                dest,
                names,
                existing: false,
                held: RangeSet::new(),
                part_made: false,
            };
            if e.is_dir() {
                checked.push(c);
                continue;
            }
            if !dirs.get(&dir).copied().unwrap_or(true) {
                checked.push(c);
                continue;
            }
            if let Ok(m) = fs::symlink_metadata(&c.dest) {
                if m.file_type().is_symlink() || m.is_dir() {
                    return Err(forbidden(format!(
                        "{} exists and is not a regular file",
                        c.dest.display()
                    )));
                }
                if opts.resume && m.len() == e.size && mtime_ns(&m) == e.mtime_ns {
                    c.existing = true;
                    c.held.insert(0, e.size);
                    checked.push(c);
                    continue;
                }
            }
            if swept.insert(dir.clone()) {
                staging::sweep(&dir, opts.partial_ttl, &[]);
            }
            if opts.resume {
                if let Some(r) = journal::read(&c.names, name, e.size, e.mtime_ns) {
                    c.held = RangeSet::from_ranges(&r);
                }
            }
            checked.push(c);
        }
        let (mut needed, mut blocks) = (0u64, 0u64);
        for (e, c) in manifest.iter().zip(&checked) {
            if !c.existing && !e.is_dir() {
                needed = needed.saturating_add(e.size - c.held.covered().min(e.size));
                blocks = blocks.saturating_add(e.size.div_ceil(opts.block_size as u64));
            }
        }
        if blocks > opts.max_blocks {
            return Err(Error::refused(
                Code::TooLarge,
                format!(
                    "{} blocks of {} would pass this end's limit of {} blocks a session; \
                     use a larger --block-size",
                    blocks,
                    human_bytes(opts.block_size as u64),
                    opts.max_blocks
                ),
            ));
        }
        let free = free_space(root)?;
        if needed > free {
            return Err(Error::refused(
                Code::NoSpace,
                format!(
                    "no space: the files need {} and {} has {} free",
                    human_bytes(needed),
                    root.display(),
                    human_bytes(free)
                ),
            ));
        }
        let root_file =
            File::open(root).map_err(|e| Error::io(format!("opening {}", root.display()), e))?;
        let root_dev = root_file.metadata().map(|m| m.dev()).ok();
        let mut made = Vec::new();
        let mut staged = Vec::new();
        let mut created = Vec::new();
        let built = Self::create(
            manifest,
            &mut checked,
            &dirs,
            opts.block_size,
            &mut made,
            &mut staged,
            &mut created,
        );
        if let Err(e) = built {
            for p in &created {
                let _ = fs::remove_file(p);
            }
            for d in &staged {
                staging::remove_if_empty(d);
            }
            for d in made.iter().rev() {
                let _ = fs::remove_dir(d);
            }
            return Err(e);
        }
        let files: Vec<Incoming> = manifest
            .iter()
            .zip(checked)
            .map(|(e, c)| {
                let resumed = !c.held.is_empty() && !c.existing;
                let other_device = root_dev.is_some()
                    && !e.is_dir()
                    && !c.existing
                    && staging::device(&c.names.dir) != root_dev;
                Incoming {
                    tree: BlockTree::new(
                        if c.existing || e.is_dir() { 0 } else { e.size },
                        opts.block_size,
                    ),
                    entry: e.clone(),
                    dest: c.dest,
                    names: c.names,
                    file: None,
                    synced: c.held.clone(),
                    held: c.held,
                    existing: c.existing,
                    dir: e.is_dir(),
                    verified: false,
                    published: e.is_dir(),
                    other_device,
                    journaled: resumed,
                    part_made: c.part_made || resumed,
                    stamped: false,
                }
            })
            .collect();
        let expected = files
            .iter()
            .map(|f| f.entry.size - f.held.covered().min(f.entry.size))
            .sum();
        tel.expected.store(expected, Ordering::Relaxed);
        Ok(Arc::new(RecvShared {
            sizes: files.iter().map(|f| f.entry.size).collect(),
            files: files.into_iter().map(Mutex::new).collect(),
            block_size: opts.block_size,
            tel,
            root: root_file,
            open: AtomicUsize::new(0),
            pending: Mutex::new(Vec::new()),
            made,
            staged,
            _claim: claim,
        }))
    }

    /// Makes the directories, staging directories and the part files of
    /// files of more than one block (their space claimed now), recording
    /// each for a rollback. A smaller file's part is made at its first
    /// block: the free space was checked for all of them already.
    fn create(
        manifest: &[FileEntry],
        checked: &mut [Checked],
        dirs: &HashMap<PathBuf, bool>,
        block_size: u32,
        made: &mut Vec<PathBuf>,
        staged: &mut Vec<PathBuf>,
        created: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let mut missing: Vec<&PathBuf> = dirs
            .iter()
            .filter(|(_, exists)| !**exists)
            .map(|(d, _)| d)
            .collect();
        // Parents before children: a parent's path is a prefix of its child's.
        missing.sort_by_key(|d| d.as_os_str().len());
        for d in missing {
            match fs::create_dir(d) {
                Ok(()) => made.push(d.clone()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if !fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) {
                        return Err(forbidden(format!(
                            "{} appeared meanwhile and is not a directory",
                            d.display()
                        )));
                    }
                }
                Err(e) => return Err(Error::io(format!("creating {}", d.display()), e)),
            }
        }
        // Staging directories this session made hold no journal of an earlier one.
        let mut fresh: HashMap<PathBuf, bool> = HashMap::new();
        for (e, c) in manifest.iter().zip(checked.iter_mut()) {
            if e.is_dir() || c.existing {
                continue;
            }
            let dir = c.dest.parent().expect("a destination has a directory");
            let new_staging = match fresh.get(dir) {
                Some(f) => *f,
                None => {
                    let f = staging::ensure(dir)?;
                    fresh.insert(dir.to_path_buf(), f);
                    staged.push(dir.to_path_buf());
                    f
                }
            };
            if c.held.is_empty() {
                if !new_staging {
                    journal::remove(&c.names);
                }
                if e.size > block_size as u64 {
                    staging::create_part(&c.names.part, e.size)?;
                    created.push(c.names.part.clone());
                    c.part_made = true;
                }
            }
        }
        Ok(())
    }

    /// What the receiver holds of each file, for the sender's `Ranges`.
    pub fn held(&self) -> Vec<Vec<(u64, u64)>> {
        self.files
            .iter()
            .map(|f| f.lock().unwrap().held.as_slice().to_vec())
            .collect()
    }

    /// Makes what arrived durable and records it in the journals: one
    /// filesystem sync for all files, then each changed journal.
    pub fn sync_journals(&self) -> Result<()> {
        let mut dirty = Vec::new();
        for (i, f) in self.files.iter().enumerate() {
            let f = f.lock().unwrap();
            // A verified file is about to be published: no journal for it, or one
            // written now could outlive the rename.
            if !(f.published || f.verified || f.existing || f.dir || f.held == f.synced) {
                dirty.push((i, f.held.clone(), f.other_device));
            }
        }
        if dirty.is_empty() {
            return Ok(());
        }
        staging::sync_filesystem(&self.root, "the receiving root")?;
        for (i, held, other_device) in dirty {
            let mut f = self.files[i].lock().unwrap();
            if f.published || f.verified {
                continue;
            }
            if other_device {
                let part = staging::open_part(&f.names.part)?;
                part.sync_data()
                    .map_err(|e| Error::io(format!("syncing {}", f.names.part.display()), e))?;
            }
            let name = f.dest.file_name().and_then(|n| n.to_str()).unwrap_or("");
            journal::write(
                &f.names,
                name,
                f.entry.size,
                f.entry.mtime_ns,
                held.as_slice(),
            )?;
            f.journaled = true;
            f.synced = held;
        }
        Ok(())
    }

    /// Checks a whole file against the sender's hash; a match waits in the
    /// batch that `publish` makes durable and renames into place.
    pub fn verify(&self, file: u32, theirs: &[u8; 32]) -> Result<()> {
        let f = self.files.get(file as usize).ok_or_else(|| {
            Error::Protocol(format!(
                "verify names file {file}, the manifest has {}",
                self.files.len()
            ))
        })?;
        let mut f = f.lock().unwrap();
        let ours = f.check(theirs)?;
        if !f.existing && !f.part_made {
            // An empty file: no block ever made its part.
            let part = staging::new_part(&f.names.part)?;
            f.part_made = true;
            f.stamp(&part)?;
        }
        if f.file.take().is_some() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        f.verified = true;
        self.pending.lock().unwrap().push((file, ours));
        Ok(())
    }

    /// How many verified files wait to be published.
    pub fn pending(&self) -> usize {
        self.pending.lock().unwrap().len()
    }

    /// Publishes every verified file: modes and mtimes set, one filesystem
    /// sync for the data, the renames, one more sync for the directory
    /// entries. Returns the answers to send, in the order verified.
    pub fn publish(&self) -> Result<Vec<(u32, [u8; 32])>> {
        let batch = std::mem::take(&mut *self.pending.lock().unwrap());
        if batch.is_empty() {
            return Ok(batch);
        }
        let mut renames = Vec::new();
        for &(i, _) in &batch {
            let mut f = self.files[i as usize].lock().unwrap();
            if f.existing {
                continue;
            }
            if !f.stamped || f.other_device {
                let part = staging::open_part(&f.names.part)?;
                f.stamp(&part)?;
                if f.other_device {
                    part.sync_all()
                        .map_err(|e| Error::io(format!("syncing {}", f.dest.display()), e))?;
                }
            }
            renames.push((f.names.clone(), f.dest.clone(), f.journaled));
        }
        if !renames.is_empty() {
            staging::sync_filesystem(&self.root, "the receiving root")?;
            for (names, dest, journaled) in &renames {
                fs::rename(&names.part, dest)
                    .map_err(|e| Error::io(format!("publishing {}", dest.display()), e))?;
                if *journaled {
                    journal::remove(names);
                }
            }
            staging::sync_filesystem(&self.root, "the receiving root")?;
        }
        for &(i, _) in &batch {
            self.files[i as usize].lock().unwrap().published = true;
        }
        Ok(batch)
    }

    pub fn all_published(&self) -> bool {
        self.files.iter().all(|f| f.lock().unwrap().published)
    }

    /// After every file is published: the staging directories go, and
    /// directories of the manifest get their modes and mtimes, deepest first
    /// (a read-only directory must not stop what is written below it).
    pub fn finish(&self) -> Result<()> {
        for d in &self.staged {
            staging::remove_if_empty(d);
        }
        let mut dirs: Vec<_> = self
            .files
            .iter()
            .filter_map(|f| {
                let f = f.lock().unwrap();
                f.dir
                    .then(|| (f.dest.clone(), f.entry.mode, f.entry.mtime_ns))
            })
            .collect();
        dirs.sort_by_key(|(d, _, _)| std::cmp::Reverse(d.as_os_str().len()));
        for (d, mode, mtime) in dirs {
            let set = fs::set_permissions(&d, fs::Permissions::from_mode(mode & 0o7777))
                .and_then(|_| File::open(&d))
                .and_then(|f| {
                    f.set_modified(UNIX_EPOCH + Duration::from_nanos(mtime.max(0) as u64))
                });
            set.map_err(|e| Error::io(format!("setting the mode of {}", d.display()), e))?;
        }
        Ok(())
    }

    /// After a failure that makes the data useless (disk full, bad hash).
    pub fn discard_all(&self) {
        for f in &self.files {
            let mut f = f.lock().unwrap();
            if !f.published && !f.existing && !f.dir {
                f.discard();
            }
        }
        self.tidy();
    }

    /// After a failure that leaves the data useful: what arrived is journaled
    /// for --resume, the space of what did not is given back, and a file
    /// that received nothing leaves nothing behind.
    pub fn keep_for_resume(&self) {
        let _ = self.sync_journals();
        for f in &self.files {
            let mut f = f.lock().unwrap();
            if f.published || f.existing || f.dir {
                continue;
            }
            if f.synced.is_empty() {
                f.discard();
                continue;
            }
            if let Ok(part) = staging::open_part(&f.names.part) {
                for (a, b) in f.synced.missing(f.entry.size) {
                    let _ = staging::punch_hole(&part, a, b);
                }
            }
        }
        self.tidy();
    }

    /// Removes staging directories and directories this session made that
    /// are left empty.
    fn tidy(&self) {
        for d in &self.staged {
            staging::remove_if_empty(d);
        }
        for d in self.made.iter().rev() {
            let _ = fs::remove_dir(d);
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
        if f.dir {
            return Err(Error::Protocol(format!(
                "a block of {}, which is a directory",
                f.entry.path
            )));
        }
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|end| *end <= f.entry.size)
            .ok_or_else(|| {
                Error::Protocol(format!(
                    "a block at {offset}+{} is outside {} ({} bytes)",
                    data.len(),
                    f.entry.path,
                    f.entry.size
                ))
            })?;
        // A block sent again after a lost stream, of a file already whole.
        if f.published || f.existing || f.verified || f.held.is_complete(f.entry.size) {
            return Ok(());
        }
        if f.file.is_none() {
            let part = if f.part_made {
                staging::open_part(&f.names.part)?
            } else {
                staging::new_part(&f.names.part)?
            };
            f.part_made = true;
            f.file = Some(part);
            self.open.fetch_add(1, Ordering::Relaxed);
        }
        let part = f.file.as_ref().expect("opened above");
        let hole = staging::is_zero(data) && staging::punch_hole(part, offset, end).is_ok();
        if !hole {
            part.write_all_at(data, offset)
                .map_err(|e| Error::io(format!("writing {}", f.dest.display()), e))?;
        }
        f.held.insert(offset, end);
        if let Some((i, v)) = value {
            f.tree.set(i, v);
        }
        let complete = f.held.is_complete(f.entry.size);
        if complete || self.open.load(Ordering::Relaxed) > OPEN_FILES {
            let part = f.file.take().expect("opened above");
            if complete {
                // Stamped while the descriptor is at hand; nothing writes to it again.
                f.stamp(&part)?;
            }
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Incoming {
    /// Gives the part file the entry's mode and mtime.
    fn stamp(&mut self, part: &File) -> Result<()> {
        part.set_permissions(fs::Permissions::from_mode(self.entry.mode & 0o7777))
            .map_err(|e| Error::io(format!("setting the mode of {}", self.dest.display()), e))?;
        let mtime = UNIX_EPOCH + Duration::from_nanos(self.entry.mtime_ns.max(0) as u64);
        part.set_modified(mtime)
            .map_err(|e| Error::io(format!("setting the mtime of {}", self.dest.display()), e))?;
        self.stamped = true;
        Ok(())
    }

    /// Our hash of the whole file, checked against the sender's.
    fn check(&mut self, theirs: &[u8; 32]) -> Result<[u8; 32]> {
        if self.published || self.verified {
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
        Ok(ours)
    }

    /// The part file's BLAKE3 from the blocks' values, reading back the
    /// blocks that arrived before a resume or in pieces of another size.
    fn tree_root(&mut self) -> Result<[u8; 32]> {
        let missing = self.tree.missing();
        if !missing.is_empty() {
            let part = staging::open_part(&self.names.part)?;
            let mut buf = Vec::new();
            for (i, offset, len) in missing {
                buf.resize(len, 0);
                part.read_exact_at(&mut buf, offset)
                    .map_err(|e| Error::io(format!("hashing {}", self.names.part.display()), e))?;
                self.tree
                    .set(i, treehash::hash_block(&buf, offset, self.entry.size));
            }
        }
        Ok(self.tree.root().expect("every block has a value"))
    }

    /// Removes the part file and journal: what they hold is of no use.
    pub fn discard(&mut self) {
        self.file = None;
        if self.part_made {
            let _ = fs::remove_file(&self.names.part);
        }
        if self.journaled {
            journal::remove(&self.names);
        }
        self.part_made = false;
        self.journaled = false;
        self.stamped = false;
        self.held = RangeSet::new();
        self.synced = RangeSet::new();
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
    let (mut total, mut acked) = (0u64, 0u64);
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
                // One acknowledgement for the blocks read in one go (many small
                // files' blocks arrive together), and at least every few MiB.
                if r.buffered() == 0 || total - acked >= ACK_EVERY {
                    if let Err(e) = w.send(&Message::Progress { bytes: total }) {
                        return Ended::Lost(e);
                    }
                    acked = total;
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
    use braid_wire::MODE_DIR;

    fn entry(path: &str, data: &[u8]) -> FileEntry {
        FileEntry {
            path: path.into(),
            size: data.len() as u64,
            mode: 0o640,
            mtime_ns: 1_600_000_000_123_456_789,
        }
    }

    fn dir(path: &str) -> FileEntry {
        FileEntry {
            path: path.into(),
            size: 0,
            mode: MODE_DIR | 0o750,
            mtime_ns: 1_500_000_000_000_000_000,
        }
    }

    fn opts(resume: bool) -> RecvOptions {
        RecvOptions::new(resume, 4096, Claims::new())
    }

    fn open(root: &Path, m: &[FileEntry], o: &RecvOptions) -> Result<Arc<RecvShared>> {
        RecvShared::new(root, m, o, Telemetry::new(1, Output::Quiet))
    }

    /// Every name below `root`, sorted, as paths relative to it.
    fn tree(root: &Path) -> Vec<String> {
        fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
            for e in fs::read_dir(d).unwrap().flatten() {
                let p = e.path();
                out.push(p.strip_prefix(root).unwrap().display().to_string());
                if e.file_type().unwrap().is_dir() {
                    walk(root, &p, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(root, root, &mut out);
        out.sort();
        out
    }

    fn publish_one(s: &RecvShared, file: u32, data: &[u8]) -> [u8; 32] {
        let h = *blake3::hash(data).as_bytes();
        s.verify(file, &h).unwrap();
        let answers = s.publish().unwrap();
        assert_eq!(answers, vec![(file, h)]);
        h
    }

    #[test]
    fn blocks_land_in_the_staging_directory_until_verified() {
        let root = tempfile::tempdir().unwrap();
        let data = b"hello, braid";
        let e = entry("d/f.txt", data);
        let s = open(root.path(), std::slice::from_ref(&e), &opts(false)).unwrap();
        s.write(0, 6, &data[6..]).unwrap();
        s.write(0, 0, &data[..6]).unwrap();
        assert!(!root.path().join("d/f.txt").exists());
        let part = Names::new(&root.path().join("d"), "f.txt").part;
        assert!(part.exists());
        assert!(matches!(s.verify(0, &[0; 32]), Err(Error::Verify(_))));
        assert!(!part.exists(), "a file that fails its hash is removed");
    }

    #[test]
    fn a_verified_file_is_published_with_mode_and_mtime_and_nothing_left() {
        let root = tempfile::tempdir().unwrap();
        let data = b"0123456789";
        let e = entry("f", data);
        let s = open(root.path(), std::slice::from_ref(&e), &opts(false)).unwrap();
        s.write(0, 0, data).unwrap();
        publish_one(&s, 0, data);
        s.finish().unwrap();
        let m = fs::metadata(root.path().join("f")).unwrap();
        assert_eq!(fs::read(root.path().join("f")).unwrap(), data);
        assert_eq!(m.permissions().mode() & 0o777, 0o640);
        assert_eq!(mtime_ns(&m), e.mtime_ns);
        assert_eq!(
            tree(root.path()),
            ["f"],
            "no part, journal or staging directory left"
        );
    }

    #[test]
    fn the_journal_never_touches_a_users_file_or_follows_a_link() {
        // Regression: the journal's temporary file was `.NAME.tmp` beside the
        // destination, written with a call that replaced or followed it.
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("A")).unwrap();
        fs::create_dir_all(root.path().join("B")).unwrap();
        fs::write(root.path().join("A/.big.tmp"), b"keep").unwrap();
        fs::write(outside.path().join("v"), b"V").unwrap();
        std::os::unix::fs::symlink(outside.path().join("v"), root.path().join("B/.big.tmp"))
            .unwrap();
        let data = vec![5u8; 10_000];
        let m = [entry("A/big", &data), entry("B/big", &data)];
        let s = open(root.path(), &m, &opts(false)).unwrap();
        s.write(0, 0, &data[..4096]).unwrap();
        s.write(1, 0, &data[..4096]).unwrap();
        s.sync_journals().unwrap();
        assert_eq!(fs::read(root.path().join("A/.big.tmp")).unwrap(), b"keep");
        assert_eq!(fs::read(outside.path().join("v")).unwrap(), b"V");
        assert!(fs::symlink_metadata(root.path().join("B/.big.tmp"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_journal_never_outlives_its_file() {
        // Regression: a journal written for a whole file just before its
        // publication was left in the staging directory.
        let root = tempfile::tempdir().unwrap();
        let data = vec![3u8; 10_000];
        let m = [entry("a", &data), entry("b", &data)];
        let s = open(root.path(), &m, &opts(false)).unwrap();
        s.write(0, 0, &data).unwrap();
        s.write(1, 0, &data).unwrap();
        s.sync_journals().unwrap();
        let h = *blake3::hash(&data).as_bytes();
        s.verify(0, &h).unwrap();
        s.verify(1, &h).unwrap();
        s.sync_journals().unwrap();
        assert_eq!(s.publish().unwrap().len(), 2);
        s.finish().unwrap();
        assert_eq!(tree(root.path()), ["a", "b"]);
    }

    #[test]
    fn names_of_255_bytes_are_received() {
        let root = tempfile::tempdir().unwrap();
        let name = "x".repeat(255);
        let data = vec![1u8; 5000];
        let s = open(root.path(), &[entry(&name, &data)], &opts(false)).unwrap();
        s.write(0, 0, &data[..4096]).unwrap();
        s.sync_journals().unwrap();
        s.write(0, 4096, &data[4096..]).unwrap();
        publish_one(&s, 0, &data);
        assert_eq!(fs::read(root.path().join(&name)).unwrap(), data);
    }

    #[test]
    fn a_journal_lets_resume_keep_what_is_on_disk() {
        let root = tempfile::tempdir().unwrap();
        let data = vec![7u8; 10_000];
        let e = entry("big", &data);
        let s = open(root.path(), std::slice::from_ref(&e), &opts(false)).unwrap();
        s.write(0, 0, &data[..4096]).unwrap();
        s.write(0, 8192, &data[8192..]).unwrap();
        s.sync_journals().unwrap();
        drop(s);
        let s = open(root.path(), std::slice::from_ref(&e), &opts(true)).unwrap();
        assert_eq!(s.held(), vec![vec![(0, 4096), (8192, 10_000)]]);
        drop(s);
        // A different source (mtime changed) starts over.
        let mut other = e.clone();
        other.mtime_ns += 1;
        let s2 = open(root.path(), &[other], &opts(true)).unwrap();
        assert_eq!(s2.held(), vec![Vec::<(u64, u64)>::new()]);
    }

    #[test]
    fn the_hash_covers_blocks_from_before_a_resume_and_pieces_of_any_size() {
        let root = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + i / 300) as u8).collect();
        let e = entry("f", &data);
        let s = open(root.path(), std::slice::from_ref(&e), &opts(false)).unwrap();
        s.write(0, 4096, &data[4096..8192]).unwrap();
        s.sync_journals().unwrap();
        drop(s);
        // The rest arrives after the resume: whole blocks, and pieces cut
        // by some other block size, which are hashed back from disk.
        let s = open(root.path(), std::slice::from_ref(&e), &opts(true)).unwrap();
        s.write(0, 0, &data[..4096]).unwrap();
        s.write(0, 8192, &data[8192..9000]).unwrap();
        s.write(0, 9000, &data[9000..]).unwrap();
        publish_one(&s, 0, &data);
        assert_eq!(fs::read(root.path().join("f")).unwrap(), data);
    }

    #[test]
    fn blocks_of_zeros_arrive_as_holes() {
        let root = tempfile::tempdir().unwrap();
        let mut data = vec![0u8; 64 << 20];
        data[10] = 1;
        let s = open(root.path(), &[entry("sparse", &data)], &opts(false)).unwrap();
        for at in (0..data.len()).step_by(4096) {
            s.write(0, at as u64, &data[at..at + 4096]).unwrap();
        }
        publish_one(&s, 0, &data);
        let m = fs::metadata(root.path().join("sparse")).unwrap();
        assert_eq!(m.len(), 64 << 20);
        assert!(
            m.blocks() * 512 < 1 << 20,
            "{} bytes allocated for 4 KiB of data",
            m.blocks() * 512
        );
        assert_eq!(fs::read(root.path().join("sparse")).unwrap(), data);
    }

    #[test]
    fn a_second_session_for_the_same_file_is_refused_until_the_first_ends() {
        let root = tempfile::tempdir().unwrap();
        let claims = Claims::new();
        let o = RecvOptions::new(false, 4096, Arc::clone(&claims));
        let first = open(root.path(), &[entry("same", b"one")], &o).unwrap();
        first.write(0, 0, b"one").unwrap();
        let e = open(
            root.path(),
            &[entry("other", b"x"), entry("same", b"two")],
            &o,
        )
        .err()
        .unwrap();
        assert!(
            matches!(
                e,
                Error::Refused {
                    code: Code::Busy,
                    ..
                }
            ),
            "{e}"
        );
        assert!(!root.path().join("other").exists() && tree(root.path()).len() == 2);
        publish_one(&first, 0, b"one");
        drop(first);
        let second = open(root.path(), &[entry("same", b"two")], &o).unwrap();
        second.write(0, 0, b"two").unwrap();
        publish_one(&second, 0, b"two");
        assert_eq!(fs::read(root.path().join("same")).unwrap(), b"two");
    }

    #[test]
    fn a_manifest_past_the_space_or_the_block_limit_allocates_nothing() {
        let root = tempfile::tempdir().unwrap();
        let huge = FileEntry {
            path: "deep/huge".into(),
            size: 1 << 62,
            mode: 0o644,
            mtime_ns: 0,
        };
        let e = open(root.path(), std::slice::from_ref(&huge), &opts(false))
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                Error::Refused {
                    code: Code::TooLarge,
                    ..
                }
            ),
            "{e}"
        );
        let mut few = opts(false);
        few.max_blocks = u64::MAX;
        let e = open(root.path(), &[huge], &few).err().unwrap();
        assert!(
            matches!(
                e,
                Error::Refused {
                    code: Code::NoSpace,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("free"), "{e}");
        assert!(
            tree(root.path()).is_empty(),
            "no directory made: {:?}",
            tree(root.path())
        );
    }

    #[test]
    fn a_refused_manifest_leaves_no_directory_behind() {
        let root = tempfile::tempdir().unwrap();
        let deep = (0..1500).map(|_| "ab").collect::<Vec<_>>().join("/");
        let e = open(root.path(), &[entry(&deep, b"x")], &opts(false))
            .err()
            .unwrap();
        assert!(e.to_string().contains("4096 bytes"), "{e}");
        // A late failure (a name taken by a directory) removes what was made.
        fs::create_dir_all(root.path().join("taken")).unwrap();
        let e = open(
            root.path(),
            &[entry("new/a/b", b"x"), entry("taken", b"y")],
            &opts(false),
        )
        .err()
        .unwrap();
        assert!(matches!(e, Error::Refused { .. }), "{e}");
        assert_eq!(tree(root.path()), ["taken"]);
    }

    #[test]
    fn directories_arrive_empty_or_not_with_their_modes() {
        let root = tempfile::tempdir().unwrap();
        let m = [dir("t"), dir("t/empty"), entry("t/f", b"abc")];
        let s = open(root.path(), &m, &opts(false)).unwrap();
        assert!(root.path().join("t/empty").is_dir());
        s.write(2, 0, b"abc").unwrap();
        publish_one(&s, 2, b"abc");
        assert!(s.all_published());
        s.finish().unwrap();
        let meta = fs::metadata(root.path().join("t/empty")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o750);
        assert_eq!(mtime_ns(&meta), m[1].mtime_ns);
        assert_eq!(tree(root.path()), ["t", "t/empty", "t/f"]);
        assert!(matches!(s.write(1, 0, b""), Err(Error::Protocol(_))));
    }

    #[test]
    fn a_failed_session_keeps_only_what_arrived() {
        let root = tempfile::tempdir().unwrap();
        let data = vec![9u8; 1 << 20];
        let m = [
            entry("got/some", &data),
            entry("got/none", &data),
            entry("fresh/x", b"1"),
        ];
        let s = open(root.path(), &m, &opts(false)).unwrap();
        s.write(0, 0, &data[..4096]).unwrap();
        s.keep_for_resume();
        let staging = root.path().join("got").join(staging::STAGING_DIR);
        let left: Vec<_> = fs::read_dir(&staging).unwrap().flatten().collect();
        assert_eq!(left.len(), 2, "one part file and its journal");
        let part = Names::new(&root.path().join("got"), "some").part;
        let used = fs::metadata(&part).unwrap().blocks() * 512;
        assert!(used < 64 << 10, "{used} bytes kept for 4 KiB received");
        assert!(
            !root.path().join("fresh").exists(),
            "a directory made for nothing is removed"
        );
        drop(s);
        let s = open(root.path(), &m, &opts(true)).unwrap();
        assert_eq!(s.held()[0], vec![(0, 4096)]);
    }

    #[test]
    fn writes_outside_the_file_or_root_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let s = open(root.path(), &[entry("f", b"abc")], &opts(false)).unwrap();
        assert!(matches!(s.write(0, 2, b"xy"), Err(Error::Protocol(_))));
        assert!(matches!(s.write(1, 0, b"x"), Err(Error::Protocol(_))));
        for bad in [
            "../x",
            "/abs",
            "a/../../b",
            ".braid-partial/x",
            "d/.braid-partial",
        ] {
            let r = open(root.path(), &[entry(bad, b"1")], &opts(false));
            assert!(
                matches!(
                    r,
                    Err(Error::Refused {
                        code: Code::ForbiddenPath,
                        ..
                    })
                ),
                "{bad}"
            );
        }
        std::os::unix::fs::symlink("/tmp", root.path().join("link")).unwrap();
        let r = open(root.path(), &[entry("link/f", b"1")], &opts(false));
        assert!(matches!(
            r,
            Err(Error::Refused {
                code: Code::ForbiddenPath,
                ..
            })
        ));
        let r = open(
            root.path(),
            &[entry("a", b"1"), entry("a/b", b"2")],
            &opts(false),
        );
        assert!(r
            .err()
            .unwrap()
            .to_string()
            .contains("as a file and as the directory"));
    }
}
