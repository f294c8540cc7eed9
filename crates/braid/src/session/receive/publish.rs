//! A received file's end: its hash checked against the sender's, then
//! published with others in a batch (one filesystem sync for the data, the
//! renames, one more for the directory entries); or, after a failure, kept
//! for `--resume` or discarded.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::{journal, kept_mode, staging, Incoming, RecvShared};
use crate::error::{Error, Result};
use crate::files::beneath::{self, Access, Dir};
use crate::files::treehash::{self, hex};

impl RecvShared {
    /// Checks a whole file against the sender's hash; a match waits in the
    /// batch that `publish` makes durable and renames into place. Where the
    /// check reads the file back (blocks from before a resume, a file kept
    /// here), `tick` runs between reads: a read of many GB keeps the session
    /// from falling silent, and its error ends the check.
    pub fn verify(
        &self,
        file: u32,
        theirs: &[u8; 32],
        tick: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let f = self.files.get(file as usize).ok_or_else(|| {
            Error::Protocol(format!(
                "verify names file {file}, the manifest has {}",
                self.files.len()
            ))
        })?;
        let mut f = f.lock().unwrap();
        let ours = f.check(&self.root, theirs, tick)?;
        if !f.existing && !f.part_made {
            // An empty file: no block ever made its part.
            let part = staging::new_part(&self.root, &f.names().part)?;
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
                // Skipped by content (--checksum): the file here is the
                // sender's, and takes its mode and time, as a sent one would.
                if f.known.is_some() {
                    let here = self
                        .root
                        .file(f.rel(), Access::Read)
                        .map_err(|e| Error::io(format!("opening {}", f.entry.path), e))?;
                    f.stamp(&here)?;
                }
                continue;
            }
            let names = f.names();
            if !f.stamped || f.other_device {
                let part = staging::open_part(&self.root, &names.part)?;
                f.stamp(&part)?;
                if f.other_device {
                    part.sync_all()
                        .map_err(|e| Error::io(format!("syncing {}", f.entry.path), e))?;
                }
            }
            renames.push((names, f.entry.path.clone(), f.journaled));
        }
        if !renames.is_empty() {
            staging::sync_filesystem(&self.root, "the receiving root")?;
            for (names, dest, journaled) in &renames {
                self.root
                    .rename(&names.part, Path::new(dest))
                    .map_err(|e| Error::io(format!("publishing {dest}"), e))?;
                if *journaled {
                    journal::remove(&self.root, names);
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
    /// (a read-only directory must not stop what is written below it). Each
    /// is opened below the root without following a link and stamped through
    /// its descriptor: a directory swapped for a link meanwhile is refused,
    /// not followed to wherever it points.
    pub fn finish(&self) -> Result<()> {
        self.make_links()?;
        for d in &self.staged {
            staging::remove_if_empty(&self.root, d);
        }
        let mut dirs: Vec<_> = self
            .files
            .iter()
            .filter_map(|f| {
                let f = f.lock().unwrap();
                f.dir.then(|| {
                    let e = &f.entry;
                    (
                        e.path.clone(),
                        kept_mode(e.mode, f.owner),
                        e.mtime_ns,
                        f.owner,
                    )
                })
            })
            .collect();
        dirs.sort_by_key(|(d, ..)| std::cmp::Reverse(d.len()));
        for (dir, mode, mtime, owner) in dirs {
            let set = self
                .root
                .dir(Path::new(&dir))
                .and_then(|d| d.stamp(mode, mtime, owner));
            set.map_err(|e| Error::io(format!("setting the mode of {dir}"), e))?;
        }
        Ok(())
    }

    /// Makes each link of the manifest, symbolic or hard (to a file of the
    /// session, published by now): in the staging directory beside its
    /// destination, then renamed into place, so the name holds the file that
    /// was there or the link, never nothing.
    fn make_links(&self) -> Result<()> {
        for f in &self.files {
            let f = f.lock().unwrap();
            if f.link.is_none() && f.hard_link.is_none() {
                continue;
            }
            if let Some(file) = &f.hard_link {
                // Already a name of that file (a session before this one made
                // it): renaming a link over another name of its own file does
                // nothing, and would leave the staged name behind.
                let id = |p: &Path| self.root.meta(p).ok().flatten().map(|m| (m.dev, m.ino));
                let here = id(Path::new(&f.entry.path));
                if here.is_some() && here == id(Path::new(file)) {
                    continue;
                }
            }
            let names = f.names();
            let dir = Path::new(&f.entry.path)
                .parent()
                .expect("a destination has a directory");
            staging::ensure(&self.root, dir)?;
            let made = (|| {
                // A leftover of a session that stopped here is only braid's.
                let _ = self.root.remove_file(&names.part);
                match (&f.link, &f.hard_link) {
                    (Some(target), _) => self.root.symlink(target, &names.part, f.owner)?,
                    (None, Some(file)) => self.root.hard_link(Path::new(file), &names.part)?,
                    (None, None) => unreachable!("passed over above"),
                }
                self.root.rename(&names.part, Path::new(&f.entry.path))
            })();
            staging::remove_if_empty(&self.root, dir);
            made.map_err(|e| Error::io(format!("making the link {}", f.entry.path), e))?;
        }
        Ok(())
    }

    /// After a failure that makes the data useless (disk full, bad hash).
    pub fn discard_all(&self) {
        for f in &self.files {
            let mut f = f.lock().unwrap();
            if !f.published && !f.existing && !f.dir {
                f.discard(&self.root);
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
                f.discard(&self.root);
                continue;
            }
            if let Ok(part) = staging::open_part(&self.root, &f.names().part) {
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
            staging::remove_if_empty(&self.root, d);
        }
        for d in self.made.iter().rev() {
            let _ = self.root.remove_dir(d);
        }
    }
}

impl Incoming {
    /// Gives the part file the entry's mode and mtime, through its descriptor.
    pub(super) fn stamp(&mut self, part: &File) -> Result<()> {
        let mode = kept_mode(self.entry.mode, self.owner);
        beneath::stamp(part, mode, self.entry.mtime_ns, self.owner)
            .map_err(|e| Error::io(format!("setting the mode of {}", self.entry.path), e))?;
        self.stamped = true;
        Ok(())
    }

    /// Our hash of the whole file, checked against the sender's.
    fn check(
        &mut self,
        root: &Dir,
        theirs: &[u8; 32],
        tick: &mut dyn FnMut() -> Result<()>,
    ) -> Result<[u8; 32]> {
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
        let ours = if let (true, Some(known)) = (self.existing, self.known) {
            known
        } else if self.existing {
            let f = root
                .file(self.rel(), Access::Read)
                .map_err(|e| Error::io(format!("hashing {}", self.entry.path), e))?;
            crate::session::sync::hash(&f, &self.entry.path, tick)?
        } else {
            self.tree_root(root, tick)?
        };
        if &ours != theirs {
            if !self.existing {
                self.discard(root);
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
    /// blocks that arrived before a resume or in pieces of another size;
    /// `tick` after each block read back.
    fn tree_root(&mut self, root: &Dir, tick: &mut dyn FnMut() -> Result<()>) -> Result<[u8; 32]> {
        let missing = self.tree.missing();
        if !missing.is_empty() {
            let part = staging::open_part(root, &self.names().part)?;
            let mut buf = Vec::new();
            for (i, offset, len) in missing {
                buf.resize(len, 0);
                part.read_exact_at(&mut buf, offset)
                    .map_err(|e| Error::io(format!("hashing {}", self.entry.path), e))?;
                self.tree
                    .set(i, treehash::hash_block(&buf, offset, self.entry.size));
                tick()?;
            }
        }
        Ok(self.tree.root().expect("every block has a value"))
    }
}
