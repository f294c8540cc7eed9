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
//!
//! Here: a session's files and how a block lands. The checks are in
//! `admit`, the part files and the staging directory in `staging`, the
//! journal's format in `journal`, verifying and publishing (or keeping for
//! `--resume`) in `publish`, a receiving stream in `stream`.

mod admit;
pub mod claims;
pub mod delete;
pub mod journal;
mod publish;
pub mod staging;
mod stream;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use braid_wire::FileEntry;

use crate::error::{Code, Error, Result};
use crate::files::beneath::{Dir, Kind, Owner};
use crate::files::filter::Filter;
use crate::files::ranges::RangeSet;
use crate::files::treehash::{self, BlockHasher, BlockTree};
use crate::proto::Answer;
use crate::telemetry::{human_bytes, Telemetry};
use admit::{check_dirs, check_paths, forbidden, free_space, parent_of};
use claims::{Claim, Claims};
use staging::Names;
pub use stream::{worker, Ended};

/// Blocks of one session's files that this end keeps hash state for, by
/// default: 4 TiB in 1 MiB blocks, about 140 MB of memory.
pub const DEFAULT_MAX_BLOCKS: u64 = 1 << 22;
/// Leftovers of a transfer untouched this long are removed by the next
/// session that receives into the same directory.
pub const DEFAULT_PARTIAL_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Entries one `--delete` removes at most, by default: a server's own
/// limit of files a session (--max-files) replaces it.
pub const DEFAULT_MAX_REMOVALS: usize = 1_000_000;
/// Part files open at once; past this a file is closed after each write, so
/// a tree of any number of files stays within the descriptor limit.
const OPEN_FILES: usize = 128;

/// How one receiving session treats its files.
#[derive(Clone)]
pub struct RecvOptions {
    /// Files the receiver holds whole (same size and mtime) are skipped, as
    /// rsync's quick check; a partial copy is continued either way.
    pub resume: bool,
    pub block_size: u32,
    /// The destinations of this process's live sessions.
    pub claims: Arc<Claims>,
    pub max_blocks: u64,
    pub partial_ttl: Duration,
    /// What the receiver already has, and what it does with it (`sync`).
    pub sync: SyncOptions,
    /// The most entries one `--delete` removes.
    pub max_removals: usize,
    /// Each symbolic link's target, by its place in the manifest (empty:
    /// the manifest has none).
    pub links: Vec<Option<String>>,
    /// The ids each entry is given, by its place in the manifest (empty:
    /// none, as this process makes them).
    pub owners: Vec<Owner>,
    /// The path of the file each hard link names, by its place in the
    /// manifest (empty: the manifest has none).
    pub hard_links: Vec<Option<String>>,
}

/// rsync's ways of treating what the receiving end already has.
#[derive(Clone, Debug, Default)]
pub struct SyncOptions {
    /// Keep a file that is newer here than the sender's (--update).
    pub update: bool,
    /// --checksum: for each entry, the BLAKE3 of the file here where it has
    /// the sender's size and content (`sync::receive_extras`); such a file is
    /// skipped whatever its time, and any other is sent whole.
    pub same: Option<Vec<Option<[u8; 32]>>>,
    /// Check everything, create nothing (--dry-run).
    pub dry_run: bool,
    /// Remove what the manifest's directories hold here and the manifest
    /// does not; what the filter excludes is kept (--delete).
    pub delete: Option<Filter>,
}

impl RecvOptions {
    pub fn new(resume: bool, block_size: u32, claims: Arc<Claims>) -> Self {
        RecvOptions {
            resume,
            block_size,
            claims,
            max_blocks: DEFAULT_MAX_BLOCKS,
            partial_ttl: DEFAULT_PARTIAL_TTL,
            sync: SyncOptions::default(),
            max_removals: DEFAULT_MAX_REMOVALS,
            links: Vec::new(),
            owners: Vec::new(),
            hard_links: Vec::new(),
        }
    }
}

/// The permission bits a received file or directory is given: setuid and
/// setgid travel only with the owner and group they are about (--owner,
/// --group, which a server allows only if started to keep owners); else a
/// peer's 06755 file would land as a privileged program of whoever received
/// it. rsync and scp drop them too.
pub fn kept_mode(mode: u32, owner: Owner) -> u32 {
    let uid = if owner.uid.is_some() { 0o4000 } else { 0 };
    let gid = if owner.gid.is_some() { 0o2000 } else { 0 };
    mode & (0o1777 | uid | gid)
}

/// One entry of the manifest being received. A peer chooses how many there
/// are, so an entry keeps little: its paths (where it lands, its staging
/// names) are derived from its manifest path when needed.
pub struct Incoming {
    pub entry: FileEntry,
    /// The part file, open while blocks arrive.
    file: Option<File>,
    /// Ranges on disk; `synced` is what the journal says.
    held: RangeSet,
    synced: RangeSet,
    /// The BLAKE3 tree of what was written in this session.
    tree: BlockTree,
    /// The destination already holds this exact file (resume): nothing to write.
    pub existing: bool,
    /// The destination's own file is kept as it is (--update): nothing is
    /// written or verified.
    pub kept: bool,
    /// The BLAKE3 of the destination's file, where it was hashed to compare
    /// (--checksum): not read again to verify.
    known: Option<[u8; 32]>,
    /// A directory: made before any data moved, its mode set at the end.
    pub dir: bool,
    /// A symbolic link's target: the link is made once every file is
    /// published, in place of what has its name.
    link: Option<String>,
    /// The ids it is given (--owner, --group).
    owner: Owner,
    /// A hard link's file (its path in the manifest): linked once every
    /// file is published, in place of what has its name.
    hard_link: Option<String>,
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
    /// Everything this session touches is reached through it (see `beneath`);
    /// also held for syncfs(2) on the root's filesystem.
    root: Dir,
    open: AtomicUsize,
    /// Verified files and our hash of each, to publish with the next batch.
    pending: Mutex<Vec<(u32, [u8; 32])>>,
    /// Directories this session made, parents first: removed again when a
    /// failed session leaves them empty.
    made: Vec<PathBuf>,
    /// Destination directories whose staging directory this session used.
    staged: Vec<PathBuf>,
    /// --delete: the filter whose exclusions are kept, and how many entries
    /// may go at most.
    delete: Option<(Filter, usize)>,
    removed: Mutex<Vec<String>>,
    _claim: Claim,
}

/// What the checks learnt of one entry before anything is created.
struct Checked {
    existing: bool,
    kept: bool,
    known: Option<[u8; 32]>,
    held: RangeSet,
    /// Filled in by `create`: whether the part file was made up front.
    part_made: bool,
}

impl RecvShared {
    /// Prepares every entry of the manifest below `root`. Nothing is created
    /// until every check has passed; on an error later, what this call made
    /// is removed again.
    pub fn new(
        root_path: &Path,
        manifest: &[FileEntry],
        opts: &RecvOptions,
        tel: Arc<Telemetry>,
    ) -> Result<Arc<Self>> {
        let root = Dir::open(root_path)
            .map_err(|e| Error::io(format!("opening {}", root_path.display()), e))?;
        check_paths(&root, manifest)?;
        let claim = opts.claims.claim(
            manifest
                .iter()
                .filter(|e| !e.is_dir())
                .map(|e| root_path.join(&e.path))
                .collect(),
            |p| p.strip_prefix(root_path).unwrap_or(p).display().to_string(),
        )?;
        let dirs = check_dirs(&root, manifest)?;
        let mut swept = HashSet::new();
        let mut checked = Vec::with_capacity(manifest.len());
        for (i, e) in manifest.iter().enumerate() {
            let parts: Vec<&str> = e.path.split('/').collect();
            let name = parts[parts.len() - 1];
            let dir = parent_of(&parts);
            let rel = dir.join(name);
            let names = Names::new(&dir, name);
            let mut c = Checked {
                existing: false,
                kept: false,
                known: None,
                held: RangeSet::new(),
                part_made: false,
            };
            if e.is_dir() {
                checked.push(c);
                continue;
            }
            // A link of either kind has no content and names what the
            // frames after the manifest gave; it never replaces a directory.
            if e.is_link() || e.is_hard_link() {
                let (kind, names, given) = if e.is_link() {
                    ("link", "target", &opts.links)
                } else {
                    ("hard link", "file", &opts.hard_links)
                };
                if e.size != 0 || given.get(i).is_none_or(|t| t.is_none()) {
                    return Err(Error::refused(
                        Code::BadRequest,
                        format!(
                            "{} is a {kind}, but with content or without its {names}",
                            e.path
                        ),
                    ));
                }
                if let Ok(Some(m)) = root.meta(&rel) {
                    if m.kind == Kind::Dir {
                        return Err(forbidden(format!(
                            "{} exists and is a directory; a {kind} cannot take its place",
                            root.shown(&rel).display()
                        )));
                    }
                }
                checked.push(c);
                continue;
            }
            if !dirs.get(&dir).copied().unwrap_or(true) {
                checked.push(c);
                continue;
            }
            if let Ok(Some(m)) = root.meta(&rel) {
                if m.kind != Kind::File {
                    return Err(forbidden(format!(
                        "{} exists and is not a regular file",
                        root.shown(&rel).display()
                    )));
                }
                let sync = &opts.sync;
                if sync.update && m.mtime_ns > e.mtime_ns {
                    c.kept = true;
                    checked.push(c);
                    continue;
                }
                let same = match &sync.same {
                    Some(same) => {
                        c.known = same.get(i).copied().flatten();
                        c.known.is_some()
                    }
                    None => opts.resume && m.size == e.size && m.mtime_ns == e.mtime_ns,
                };
                if same {
                    c.existing = true;
                    c.held.insert(0, e.size);
                    checked.push(c);
                    continue;
                }
            }
            // A dry run removes nothing, not even an old session's leftovers.
            if !opts.sync.dry_run && swept.insert(dir.clone()) {
                staging::sweep(&root, &dir, opts.partial_ttl, &[]);
            }
            // A journal of this same source (its name, size and mtime) is
            // what an earlier session of it left: continued whether or not
            // --resume was given, since throwing it away only moves it again
            // (the whole file's hash still checks every byte).
            if let Some(r) = journal::read(&root, &names, name, e.size, e.mtime_ns) {
                c.held = RangeSet::from_ranges(&r);
            }
            checked.push(c);
        }
        let (mut needed, mut blocks) = (0u64, 0u64);
        for (e, c) in manifest.iter().zip(&checked) {
            if !c.existing && !c.kept && !e.is_dir() {
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
        let free = free_space(&root)?;
        if needed > free {
            return Err(Error::refused(
                Code::NoSpace,
                format!(
                    "no space: the files need {} and {} has {} free",
                    human_bytes(needed),
                    root_path.display(),
                    human_bytes(free)
                ),
            ));
        }
        let root_dev = root.meta_here().map(|m| m.dev).ok();
        let mut made = Vec::new();
        let mut staged = Vec::new();
        let mut created = Vec::new();
        let built = if opts.sync.dry_run {
            Ok(())
        } else {
            Self::create(
                &root,
                manifest,
                &mut checked,
                &dirs,
                opts.block_size,
                &mut made,
                &mut staged,
                &mut created,
            )
        };
        if let Err(e) = built {
            for p in &created {
                let _ = root.remove_file(p);
            }
            for d in &staged {
                staging::remove_if_empty(&root, d);
            }
            for d in made.iter().rev() {
                let _ = root.remove_dir(d);
            }
            return Err(e);
        }
        let files: Vec<Incoming> = manifest
            .iter()
            .zip(checked)
            .enumerate()
            .map(|(i, (e, c))| {
                let resumed = !c.held.is_empty() && !c.existing;
                let writes = e.is_file() && !c.existing && !c.kept;
                let other_device = root_dev.is_some()
                    && writes
                    && !opts.sync.dry_run
                    && staging::device(&root, &names_of(e).dir) != root_dev;
                Incoming {
                    tree: BlockTree::new(if writes { e.size } else { 0 }, opts.block_size),
                    entry: e.clone(),
                    file: None,
                    synced: c.held.clone(),
                    held: c.held,
                    existing: c.existing,
                    kept: c.kept,
                    known: c.known,
                    dir: e.is_dir(),
                    link: e
                        .is_link()
                        .then(|| opts.links.get(i).cloned().flatten())
                        .flatten(),
                    owner: opts.owners.get(i).copied().unwrap_or_default(),
                    hard_link: e
                        .is_hard_link()
                        .then(|| opts.hard_links.get(i).cloned().flatten())
                        .flatten(),
                    verified: false,
                    published: !writes && !c.existing,
                    other_device,
                    journaled: resumed,
                    part_made: c.part_made || resumed,
                    stamped: false,
                }
            })
            .collect();
        let expected = files
            .iter()
            .filter(|f| !f.kept)
            .map(|f| f.entry.size - f.held.covered().min(f.entry.size))
            .sum();
        tel.expected.store(expected, Ordering::Relaxed);
        Ok(Arc::new(RecvShared {
            sizes: files.iter().map(|f| f.entry.size).collect(),
            files: files.into_iter().map(Mutex::new).collect(),
            block_size: opts.block_size,
            tel,
            root,
            open: AtomicUsize::new(0),
            pending: Mutex::new(Vec::new()),
            made,
            staged,
            delete: opts.sync.delete.clone().map(|f| (f, opts.max_removals)),
            removed: Mutex::new(Vec::new()),
            _claim: claim,
        }))
    }

    /// Makes the directories, staging directories and the part files of
    /// files of more than one block (their space claimed now), recording
    /// each for a rollback. A smaller file's part is made at its first
    /// block: the free space was checked for all of them already.
    #[allow(clippy::too_many_arguments)]
    fn create(
        root: &Dir,
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
            match root.create_dir(d, 0o777) {
                Ok(()) => made.push(d.clone()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if !root
                        .meta(d)
                        .is_ok_and(|m| m.is_some_and(|m| m.kind == Kind::Dir))
                    {
                        return Err(forbidden(format!(
                            "{} appeared meanwhile and is not a directory",
                            root.shown(d).display()
                        )));
                    }
                }
                Err(e) => {
                    return Err(Error::io(
                        format!("creating {}", root.shown(d).display()),
                        e,
                    ))
                }
            }
        }
        // Staging directories this session made hold no journal of an earlier one.
        let mut fresh: HashMap<PathBuf, bool> = HashMap::new();
        for (e, c) in manifest.iter().zip(checked.iter_mut()) {
            if !e.is_file() || c.existing || c.kept {
                continue;
            }
            let names = names_of(e);
            let dir = Path::new(&e.path)
                .parent()
                .expect("a destination has a directory");
            let new_staging = match fresh.get(dir) {
                Some(f) => *f,
                None => {
                    let f = staging::ensure(root, dir)?;
                    fresh.insert(dir.to_path_buf(), f);
                    staged.push(dir.to_path_buf());
                    f
                }
            };
            if c.held.is_empty() {
                if !new_staging {
                    journal::remove(root, &names);
                }
                if e.size > block_size as u64 {
                    staging::create_part(root, &names.part, e.size)?;
                    created.push(names.part.clone());
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
            .map(|f| f.lock().unwrap().held.ranges())
            .collect()
    }

    /// `--delete`: what this session's directories hold here and its
    /// manifest does not (children first); nothing without --delete.
    fn extraneous(&self, tick: &mut dyn FnMut() -> Result<()>) -> Result<Vec<delete::Extra>> {
        let Some((filter, max)) = &self.delete else {
            return Ok(Vec::new());
        };
        let manifest: Vec<FileEntry> = self
            .files
            .iter()
            .map(|f| f.lock().unwrap().entry.clone())
            .collect();
        delete::extraneous(&self.root, &manifest, filter, *max, tick)
    }

    /// With --delete, removes what `extraneous` lists, once every file is
    /// published, and returns the paths removed (also kept for `removed`).
    /// An entry that cannot be removed fails the session once the others
    /// are gone. `tick` runs while it walks and removes: a large tree takes
    /// long, and its error stops the work there.
    pub fn delete_extraneous(
        &self,
        tick: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Option<Vec<String>>> {
        if self.delete.is_none() {
            return Ok(None);
        }
        let extras = self.extraneous(tick)?;
        let failed = delete::remove(&self.root, &extras, tick)?;
        if let Some((path, e)) = failed.into_iter().next() {
            return Err(Error::io(
                format!("removing {} (--delete)", self.root.shown(&path).display()),
                e,
            ));
        }
        let paths = shown(&extras);
        *self.removed.lock().unwrap() = paths.clone();
        Ok(Some(paths))
    }

    /// What `--delete` would remove now (a dry run's answer), as paths
    /// below the root; nothing without --delete.
    pub fn would_remove(&self, tick: &mut dyn FnMut() -> Result<()>) -> Result<Vec<String>> {
        Ok(shown(&self.extraneous(tick)?))
    }

    /// What this session's --delete removed.
    pub fn removed(&self) -> Vec<String> {
        self.removed.lock().unwrap().clone()
    }

    /// What the receiver says of each file before data moves: what it holds,
    /// or that it keeps its own.
    pub fn answers(&self) -> Vec<Answer> {
        self.files
            .iter()
            .map(|f| {
                let f = f.lock().unwrap();
                if f.kept {
                    Answer::Keeps
                } else {
                    Answer::Holds(f.held.clone())
                }
            })
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
            let names = f.names();
            if other_device {
                let part = staging::open_part(&self.root, &names.part)?;
                part.sync_data()
                    .map_err(|e| Error::io(format!("syncing {}", f.entry.path), e))?;
            }
            let name = f.entry.path.rsplit('/').next().unwrap_or("");
            journal::write(
                &self.root,
                &names,
                name,
                f.entry.size,
                f.entry.mtime_ns,
                &held.ranges(),
            )?;
            f.journaled = true;
            f.synced = held;
        }
        Ok(())
    }

    /// Checks where a block lands before any of its data is taken.
    pub(crate) fn begin(&self, file: u32, offset: u64, len: u32) -> Result<Landing> {
        let f = self.files.get(file as usize).ok_or_else(|| {
            Error::Protocol(format!("a block of file {file}, which the manifest lacks"))
        })?;
        let size = self.sizes[file as usize];
        let f = f.lock().unwrap();
        if f.dir {
            return Err(Error::Protocol(format!(
                "a block of {}, which is a directory",
                f.entry.path
            )));
        }
        let end = offset
            .checked_add(len as u64)
            .filter(|end| *end <= size)
            .ok_or_else(|| {
                Error::Protocol(format!(
                    "a block at {offset}+{len} is outside {} ({size} bytes)",
                    f.entry.path
                ))
            })?;
        let hasher = treehash::block_index(size, self.block_size, offset, len as u64)
            .map(|i| (i, BlockHasher::new(offset, len as u64, size)));
        Ok(Landing {
            file,
            offset,
            end,
            at: offset,
            hasher,
        })
    }

    /// Writes a block's next piece in place (hashed here, before the file's
    /// lock is taken). Blocks of zeros become holes.
    pub(crate) fn piece(&self, l: &mut Landing, data: &[u8]) -> Result<()> {
        let (start, end) = (l.at, l.at + data.len() as u64);
        debug_assert!(end <= l.end, "a piece past its block");
        l.at = end;
        if let Some((_, h)) = &mut l.hasher {
            h.update(data);
        }
        let mut f = self.files[l.file as usize].lock().unwrap();
        // A block sent again after a lost stream, of a file already whole.
        if f.is_settled() {
            return Ok(());
        }
        if f.file.is_none() {
            let part = if f.part_made {
                staging::open_part(&self.root, &f.names().part)?
            } else {
                staging::new_part(&self.root, &f.names().part)?
            };
            f.part_made = true;
            f.file = Some(part);
            self.open.fetch_add(1, Ordering::Relaxed);
        }
        let part = f.file.as_ref().expect("opened above");
        let hole = staging::is_zero(data) && staging::punch_hole(part, start, end).is_ok();
        if !hole {
            part.write_all_at(data, start)
                .map_err(|e| Error::io(format!("writing {}", f.entry.path), e))?;
        }
        Ok(())
    }

    /// A block whose pieces have all been written: it counts as held, and a
    /// file it completes is stamped and closed.
    pub(crate) fn land(&self, l: Landing) -> Result<()> {
        debug_assert_eq!(l.at, l.end, "a block lands whole");
        let mut f = self.files[l.file as usize].lock().unwrap();
        if f.is_settled() {
            return Ok(());
        }
        f.held.insert(l.offset, l.end);
        if let Some(part) = &f.file {
            staging::write_behind(part, l.offset, l.end);
        }
        if let Some((i, h)) = l.hasher {
            f.tree.set(i, h.finish());
        }
        let complete = f.held.is_complete(f.entry.size);
        if complete || self.open.load(Ordering::Relaxed) > OPEN_FILES {
            if let Some(part) = f.file.take() {
                if complete {
                    // Stamped while the descriptor is at hand; nothing writes to it again.
                    f.stamp(&part)?;
                }
                self.open.fetch_sub(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Writes a whole block at once (tests; streams land blocks in pieces).
    #[cfg(test)]
    fn write(&self, file: u32, offset: u64, data: &[u8]) -> Result<()> {
        let mut l = self.begin(file, offset, data.len() as u32)?;
        self.piece(&mut l, data)?;
        self.land(l)
    }
}

/// A block on its way to disk: where it lands, how far it has come, and its
/// value in the file's tree as its pieces pass.
pub(crate) struct Landing {
    file: u32,
    offset: u64,
    end: u64,
    /// Where the next piece goes.
    at: u64,
    hasher: Option<(usize, BlockHasher)>,
}

impl Incoming {
    /// Whole already: published, verified, held before the session, or every
    /// byte in place. A block sent again is then not written.
    fn is_settled(&self) -> bool {
        self.published || self.existing || self.verified || self.held.is_complete(self.entry.size)
    }
}

/// The staging names of a manifest entry.
/// Paths to remove as they cross the wire and are reported.
fn shown(extras: &[delete::Extra]) -> Vec<String> {
    extras
        .iter()
        .map(|x| x.path.to_string_lossy().into_owned())
        .collect()
}

fn names_of(e: &FileEntry) -> Names {
    let (dir, name) = e.path.rsplit_once('/').unwrap_or(("", &e.path));
    Names::new(Path::new(dir), name)
}

impl Incoming {
    /// Where it lands, relative to the receiving root.
    fn rel(&self) -> &Path {
        Path::new(&self.entry.path)
    }

    fn names(&self) -> Names {
        names_of(&self.entry)
    }

    /// Removes the part file and journal: what they hold is of no use.
    pub fn discard(&mut self, root: &Dir) {
        self.file = None;
        if self.part_made {
            let _ = root.remove_file(&self.names().part);
        }
        if self.journaled {
            journal::remove(root, &self.names());
        }
        self.part_made = false;
        self.journaled = false;
        self.stamped = false;
        self.held = RangeSet::new();
        self.synced = RangeSet::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::manifest::mtime_ns;
    use crate::telemetry::Output;
    use braid_wire::MODE_DIR;
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

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
        s.verify(file, &h, &mut || Ok(())).unwrap();
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
        let part = root.path().join(Names::new(Path::new("d"), "f.txt").part);
        assert!(part.exists());
        assert!(matches!(
            s.verify(0, &[0; 32], &mut || Ok(())),
            Err(Error::Verify(_))
        ));
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
        s.verify(0, &h, &mut || Ok(())).unwrap();
        s.verify(1, &h, &mut || Ok(())).unwrap();
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
        // Without --resume the same source's partial copy is continued too.
        let s = open(root.path(), std::slice::from_ref(&e), &opts(false)).unwrap();
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

    // Reading back a resumed file's blocks can take minutes, with nothing
    // else said on the session: each block read back gives the caller a turn
    // (the engine's keepalive), and an error there ends the check.
    #[test]
    fn a_read_back_for_the_hash_ticks_between_blocks_and_stops_at_an_error() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 13 + i / 7) as u8).collect();
        let e = entry("f", &data);
        // Three blocks before the resume, two after it, in a directory of its own.
        let resumed = |root: &Path| {
            let s = open(root, std::slice::from_ref(&e), &opts(false)).unwrap();
            s.write(0, 0, &data[..12_288]).unwrap();
            s.sync_journals().unwrap();
            drop(s);
            let s = open(root, std::slice::from_ref(&e), &opts(true)).unwrap();
            s.write(0, 12_288, &data[12_288..16_384]).unwrap();
            s.write(0, 16_384, &data[16_384..]).unwrap();
            s
        };
        let h = *blake3::hash(&data).as_bytes();
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let s = resumed(first.path());
        let mut ticks = 0;
        let stop = s.verify(0, &h, &mut || {
            ticks += 1;
            Err(Error::Interrupted)
        });
        assert!(matches!(stop, Err(Error::Interrupted)), "{stop:?}");
        assert_eq!(ticks, 1, "the check ends at the tick's error");
        let s = resumed(second.path());
        let mut ticks = 0;
        s.verify(0, &h, &mut || {
            ticks += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(
            ticks, 3,
            "one tick for each of the three blocks from before the resume"
        );
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
    fn a_hard_link_needs_its_file_and_never_takes_a_directorys_place() {
        let root = tempfile::tempdir().unwrap();
        let link = FileEntry {
            mode: braid_wire::MODE_HARD_LINK | 0o640,
            ..entry("b", b"")
        };
        let m = [entry("a", b"x"), link];
        let e = open(root.path(), &m, &opts(false)).err().unwrap();
        assert!(e.to_string().contains("b is a hard link"), "{e}");
        let with = RecvOptions {
            hard_links: vec![None, Some("a".into())],
            ..opts(false)
        };
        fs::create_dir(root.path().join("b")).unwrap();
        let e = open(root.path(), &m, &with).err().unwrap();
        assert!(e.to_string().contains("is a directory"), "{e}");
        fs::remove_dir(root.path().join("b")).unwrap();
        let s = open(root.path(), &m, &with).unwrap();
        s.write(0, 0, b"x").unwrap();
        publish_one(&s, 0, b"x");
        s.finish().unwrap();
        let ino = |n: &str| fs::metadata(root.path().join(n)).unwrap().ino();
        assert_eq!(ino("a"), ino("b"));
        assert_eq!(tree(root.path()), ["a", "b"]);
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

    /// A directory of the manifest swapped for a link to a directory outside
    /// the root before the session ends: its mode and mtime are not set there.
    #[test]
    fn finishing_stamps_no_directory_through_a_swapped_link() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::set_permissions(outside.path(), fs::Permissions::from_mode(0o700)).unwrap();
        let before = fs::metadata(outside.path()).unwrap();
        let mut open_dir = dir("t");
        open_dir.mode = MODE_DIR | 0o777;
        open_dir.mtime_ns = 0;
        let m = [open_dir, entry("t/f", b"abc")];
        let s = open(root.path(), &m, &opts(false)).unwrap();
        s.write(1, 0, b"abc").unwrap();
        publish_one(&s, 1, b"abc");
        fs::rename(root.path().join("t"), root.path().join("t.moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("t")).unwrap();
        assert!(
            s.finish().is_err(),
            "a link in the directory's place was stamped"
        );
        let after = fs::metadata(outside.path()).unwrap();
        assert_eq!(after.permissions().mode() & 0o7777, 0o700);
        assert_eq!(mtime_ns(&after), mtime_ns(&before));
    }

    #[test]
    fn setuid_and_setgid_bits_do_not_travel() {
        let root = tempfile::tempdir().unwrap();
        let mut e = entry("prog", b"#!/bin/sh");
        e.mode = 0o6755;
        let mut d = dir("shared");
        d.mode = MODE_DIR | 0o3777;
        let s = open(root.path(), &[e, d], &opts(false)).unwrap();
        s.write(0, 0, b"#!/bin/sh").unwrap();
        publish_one(&s, 0, b"#!/bin/sh");
        s.finish().unwrap();
        let mode = |p: &str| {
            fs::metadata(root.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode("prog"), 0o755);
        assert_eq!(mode("shared"), 0o1777, "the sticky bit stays");
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
        let part = root.path().join(Names::new(Path::new("got"), "some").part);
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
