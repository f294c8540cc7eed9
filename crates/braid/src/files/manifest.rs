//! Which local files a transfer moves, named as they will be at the far end.
//!
//! Every file listed is opened again later (to send it, to finish its hash)
//! below the directory it was listed from, through that directory's
//! descriptor and never through a link (see `beneath`), and only if it is
//! still the file that was listed (its device and inode): a name swapped for
//! a link or another file after the listing is refused, not followed. A
//! server's `get` lists below its root this way, so nothing outside the root
//! is ever read for a peer.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use braid_wire::{FileEntry, MODE_DIR, MODE_HARD_LINK, MODE_LINK};

use crate::error::{Code, Error, Result};
use crate::files::beneath::{Access, Dir, Kind, Meta};
use crate::files::filter::Filter;
use crate::files::pathsafe;

/// A file to send: its manifest entry and where it is here.
#[derive(Clone, Debug)]
pub struct Source {
    pub entry: FileEntry,
    /// Where it is here, for messages.
    pub local: PathBuf,
    /// How to open it again (files only).
    origin: Option<Origin>,
    /// A symbolic link's target (links only).
    pub link: Option<String>,
    /// The content's BLAKE3, where it was read before the transfer
    /// (--checksum): a file the receiver holds whole is not read again to
    /// verify it.
    pub sum: Option<[u8; 32]>,
    /// Its owner's and group's ids here (sent with --owner, --group).
    pub owner: (u32, u32),
    /// A further name of the file of this entry of the listing (-H): it
    /// travels as a hard link to it, not as content.
    pub hard_link: Option<u32>,
}

/// What a listing does with the symbolic links it meets below a directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Links {
    /// Sends each as a link (rsync -l; the default).
    #[default]
    Keep,
    /// Sends what each names, a file or a tree (rsync -L); a link that
    /// leads back into a tree already listed is skipped, as is a broken one.
    Follow,
    /// Leaves them out, each reported (for a peer that cannot take them).
    Skip,
}

/// A listed file's directory, its path below it, and which file it was.
#[derive(Clone, Debug)]
struct Origin {
    base: Arc<Dir>,
    rel: PathBuf,
    dev: u64,
    ino: u64,
}

impl Source {
    /// Opens the file for reading: below the directory it was listed from,
    /// through no link, and only if it is the very file that was listed.
    pub fn open(&self) -> io::Result<fs::File> {
        let o = self.origin.as_ref().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "a directory has no content")
        })?;
        let f = o.base.file(&o.rel, Access::Read)?;
        let m = Meta::of_fd(&f)?;
        if (m.dev, m.ino) != (o.dev, o.ino) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "another file took its name since it was listed",
            ));
        }
        Ok(f)
    }
}

/// An entry the listing leaves out, and why: said on stderr, or with
/// `--json` as a `skipped` record.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// As the user named it (the local path).
    pub path: String,
    pub reason: String,
}

impl Skipped {
    fn new(path: impl AsRef<Path>, reason: &str) -> Skipped {
        Skipped {
            path: path.as_ref().display().to_string(),
            reason: reason.to_owned(),
        }
    }
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

/// Lists `sources` (files and directories, recursively) with manifest paths
/// under `prefix` ("" for none): a file keeps its name, a directory its name
/// and everything below it, itself included as an entry (so an empty one
/// arrives too). Symbolic links below a directory are skipped (and
/// reported), so a tree cannot smuggle in what it points to; so is braid's
/// own staging directory. A source the user names is theirs: a link they
/// name is followed. Every file is opened once here, so one that cannot be
/// read is an error before any data moves. `filter` leaves out what it
/// excludes (a directory with all below it), matched against the path as
/// listed: a named directory's own name first; `links` says what becomes of
/// the links below a directory.
pub fn list(
    sources: &[PathBuf],
    prefix: &str,
    filter: &Filter,
    links: Links,
) -> Result<(Vec<Source>, Vec<Skipped>)> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for src in sources {
        let meta =
            fs::metadata(src).map_err(|e| Error::io(format!("reading {}", src.display()), e))?;
        let name = src
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| Error::Usage(format!("{} has no usable file name", src.display())))?;
        if pathsafe::is_internal(name) {
            return Err(Error::Usage(format!(
                "{} is braid's staging directory (an unfinished transfer's part files); \
                 it is not sent",
                src.display()
            )));
        }
        let top = join(prefix, name);
        if filter.excludes(name, meta.is_dir()) {
            skipped.push(Skipped::new(src, "excluded"));
            continue;
        }
        let io_err = |e| Error::io(format!("reading {}", src.display()), e);
        if meta.is_dir() {
            let base = Arc::new(Dir::open(src).map_err(io_err)?);
            let mut w = Walk {
                filter,
                links,
                from: top.len() - name.len(),
                ancestors: Vec::new(),
                out: &mut out,
                skipped: &mut skipped,
            };
            w.tree(&base, src, &top)?;
        } else if meta.is_file() {
            let real = fs::canonicalize(src).map_err(io_err)?;
            let file = real_file(&real, src, &top)?
                .ok_or_else(|| Error::Usage(format!("{} is not a file", src.display())))?;
            out.push(file);
        } else {
            return Err(Error::Usage(format!(
                "{} is neither a file nor a directory",
                src.display()
            )));
        }
    }
    for s in &out {
        pathsafe::components(&s.entry.path)
            .map_err(|e| Error::Usage(format!("cannot send {}: {e}", s.local.display())))?;
    }
    let mut seen = std::collections::HashSet::new();
    for s in &out {
        if !seen.insert(&s.entry.path) {
            return Err(Error::Usage(format!(
                "two sources would both be written as {}",
                s.entry.path
            )));
        }
    }
    Ok((out, skipped))
}

fn join(prefix: &str, name: &str) -> String {
    let prefix: Vec<&str> = prefix
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let prefix = prefix.join("/");
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

fn entry(path: &str, meta: &Meta) -> FileEntry {
    let dir = meta.kind == Kind::Dir;
    FileEntry {
        path: path.to_owned(),
        size: if dir { 0 } else { meta.size },
        mode: meta.mode | if dir { MODE_DIR } else { 0 },
        mtime_ns: meta.mtime_ns,
    }
}

fn dir_source(local: &Path, path: &str, meta: &Meta) -> Source {
    Source {
        entry: entry(path, meta),
        local: local.to_owned(),
        origin: None,
        link: None,
        sum: None,
        owner: (meta.uid, meta.gid),
        hard_link: None,
    }
}

/// The file `rel` below `base`, opened once now (so one that cannot be read
/// fails before anything moves) and described from that descriptor.
fn file_source(base: &Arc<Dir>, rel: &Path, local: &Path, path: &str) -> Result<Source> {
    let f = base
        .file(rel, Access::Read)
        .map_err(|e| Error::io(format!("cannot read {}", local.display()), e))?;
    let meta = Meta::of_fd(&f).map_err(|e| Error::io(format!("reading {}", local.display()), e))?;
    Ok(Source {
        entry: entry(path, &meta),
        local: local.to_owned(),
        origin: Some(Origin {
            base: Arc::clone(base),
            rel: rel.to_owned(),
            dev: meta.dev,
            ino: meta.ino,
        }),
        link: None,
        sum: None,
        owner: (meta.uid, meta.gid),
        hard_link: None,
    })
}

/// Makes each further name of a file in `sources` (the same device and
/// inode as an earlier file of the listing) a hard link to its first: an
/// entry of [`MODE_HARD_LINK`] and no content, as rsync -H sends one.
pub fn mark_hard_links(sources: &mut [Source]) {
    let mut first = std::collections::HashMap::new();
    for (i, s) in sources.iter_mut().enumerate() {
        let Some(o) = s.origin.as_ref().filter(|_| s.entry.is_file()) else {
            continue;
        };
        match first.entry((o.dev, o.ino)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i as u32);
            }
            std::collections::hash_map::Entry::Occupied(f) => {
                s.hard_link = Some(*f.get());
                s.entry.mode = MODE_HARD_LINK | (s.entry.mode & 0o7777);
                s.entry.size = 0;
                s.origin = None;
            }
        }
    }
}

/// The file at the canonical path `real` (named `local` here, `path` in the
/// manifest), listed from the directory that really holds it, so that it is
/// opened again there without following the link that led to it; none for
/// a path without a parent.
fn real_file(real: &Path, local: &Path, path: &str) -> Result<Option<Source>> {
    let (Some(parent), Some(file)) = (real.parent(), real.file_name()) else {
        return Ok(None);
    };
    let base = Arc::new(
        Dir::open(parent).map_err(|e| Error::io(format!("reading {}", local.display()), e))?,
    );
    file_source(&base, Path::new(file), local, path).map(Some)
}

/// A file's modification time in nanoseconds since the epoch, as manifests carry it.
pub fn mtime_ns(meta: &fs::Metadata) -> i64 {
    meta.mtime() * 1_000_000_000 + meta.mtime_nsec()
}

/// BLAKE3 of a file's content, and how many bytes it had.
pub fn blake3_file(path: &Path) -> std::io::Result<([u8; 32], u64)> {
    blake3_of(&fs::File::open(path)?)
}

/// BLAKE3 of an open file's content from its start, and how many bytes it had.
pub fn blake3_of(f: &fs::File) -> std::io::Result<([u8; 32], u64)> {
    blake3_ticking(f, &mut || Ok(()))
}

/// `blake3_of`, with `tick` run after each 64 MiB read: a long read keeps a
/// session's connection alive from it, and its error ends the read.
pub fn blake3_ticking<E: From<io::Error>>(
    mut f: &fs::File,
    tick: &mut dyn FnMut() -> std::result::Result<(), E>,
) -> std::result::Result<([u8; 32], u64), E> {
    const TICK: u64 = 64 << 20;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = std::io::Read::read(&mut f, &mut buf)?;
        if k == 0 {
            return Ok((*h.finalize().as_bytes(), n));
        }
        h.update(&buf[..k]);
        if (n % TICK) + k as u64 >= TICK {
            tick()?;
        }
        n += k as u64;
    }
}

/// A listing under way: what it leaves out and what it found.
struct Walk<'a> {
    filter: &'a Filter,
    links: Links,
    /// The directories (device, inode) from the top down to where the walk
    /// is: a followed link to one of them is a loop.
    ancestors: Vec<(u64, u64)>,
    /// Where, in a manifest path, the path the filter matches begins (after
    /// a `send`'s destination prefix).
    from: usize,
    out: &'a mut Vec<Source>,
    skipped: &'a mut Vec<Skipped>,
}

impl Walk<'_> {
    /// Lists the directory `there` (named `local` here, `p` in the
    /// manifest) and all below it; false, and nothing listed, if it is one
    /// of the directories the walk is in already (a loop).
    fn tree(&mut self, there: &Arc<Dir>, local: &Path, p: &str) -> Result<bool> {
        let m = Meta::of_fd(&**there)
            .map_err(|e| Error::io(format!("reading {}", local.display()), e))?;
        if self.ancestors.contains(&(m.dev, m.ino)) {
            return Ok(false);
        }
        self.out.push(dir_source(local, p, &m));
        self.ancestors.push((m.dev, m.ino));
        self.walk(there, Path::new(""), p)?;
        self.ancestors.pop();
        Ok(true)
    }

    /// A link met below a directory, as `links` says.
    fn link(&mut self, base: &Arc<Dir>, rel: &Path, local: &Path, p: &str) -> Result<()> {
        match self.links {
            Links::Skip => self.skipped.push(Skipped::new(local, "a symbolic link")),
            Links::Keep => {
                let target = base
                    .read_link(rel)
                    .map_err(|e| Error::io(format!("reading the link {}", local.display()), e))?;
                let meta = base
                    .meta(rel)
                    .map_err(|e| Error::io(format!("reading {}", local.display()), e))?
                    .ok_or_else(|| Error::Usage(format!("{} went away", local.display())))?;
                match target.into_string() {
                    Ok(t) if !t.is_empty() && t.len() < 4096 => {
                        let mut src = dir_source(local, p, &meta);
                        // Its target travels apart: no content, no size.
                        src.entry.mode = MODE_LINK | 0o777;
                        src.entry.size = 0;
                        src.link = Some(t);
                        self.out.push(src);
                    }
                    _ => self.skipped.push(Skipped::new(
                        local,
                        "a link whose target is not UTF-8 (or is empty or too long)",
                    )),
                }
            }
            Links::Follow => {
                // The user asked for what the link names, wherever it is:
                // listed from the directory that really holds it.
                let Ok(real) = fs::canonicalize(local) else {
                    self.skipped
                        .push(Skipped::new(local, "a broken symbolic link"));
                    return Ok(());
                };
                let io_err = |e| Error::io(format!("reading {}", local.display()), e);
                let meta = fs::metadata(&real).map_err(io_err)?;
                if meta.is_dir() {
                    let there = Arc::new(Dir::open(&real).map_err(io_err)?);
                    if !self.tree(&there, local, p)? {
                        self.skipped.push(Skipped::new(
                            local,
                            "a link to a directory it lies in (a loop)",
                        ));
                    }
                } else if let (true, Some(file)) = (meta.is_file(), real_file(&real, local, p)?) {
                    self.out.push(file);
                } else {
                    self.skipped.push(Skipped::new(
                        local,
                        "links to neither a file nor a directory",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Lists the tree below `base`'s `rel` (its entries named under `path`),
    /// in name order, through descriptors; a link is what `links` makes of it.
    fn walk(&mut self, base: &Arc<Dir>, rel: &Path, path: &str) -> Result<()> {
        let shown = base.shown(rel);
        let listing = base
            .dir(rel)
            .and_then(|d| d.entries())
            .map_err(|e| Error::io(format!("listing {}", shown.display()), e))?;
        let mut entries = listing;
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in entries {
            let local = shown.join(&name);
            let Some(name) = name.to_str().map(str::to_owned) else {
                self.skipped.push(Skipped::new(local, "not UTF-8"));
                continue;
            };
            let r = rel.join(&name);
            let p = join(path, &name);
            if self.filter.excludes(&p[self.from..], kind == Kind::Dir) {
                // Left out as asked: not a surprise worth a line.
                continue;
            }
            if kind == Kind::Link {
                self.link(base, &r, &local, &p)?;
            } else if pathsafe::is_internal(&name) {
                self.skipped.push(Skipped::new(
                    local,
                    "braid's staging directory (part files of an unfinished transfer)",
                ));
            } else if kind == Kind::Dir {
                let meta = base
                    .dir(&r)
                    .and_then(|d| d.meta_here())
                    .map_err(|e| Error::io(format!("reading {}", local.display()), e))?;
                self.out.push(dir_source(&local, &p, &meta));
                self.ancestors.push((meta.dev, meta.ino));
                self.walk(base, &r, &p)?;
                self.ancestors.pop();
            } else if kind == Kind::File {
                self.out.push(file_source(base, &r, &local, &p)?);
            } else {
                self.skipped.push(Skipped::new(local, "not a regular file"));
            }
        }
        Ok(())
    }
}

/// Server side of `get`: resolves requested paths below `root`, refusing
/// anything that would leave it, symbolic links on the way included, and
/// braid's own staging directories. `.` (or an empty path) is the root
/// itself: its contents, named as below it. `filter` (the client's) leaves
/// out what it excludes, matched against the paths as offered; links below
/// a directory are sent as links, or left out (`Links::Skip`) for a client
/// that cannot take them; never followed.
pub fn resolve_request(
    root: &Path,
    requested: &[String],
    filter: &Filter,
    links: Links,
) -> Result<Vec<Source>> {
    let links = if links == Links::Follow {
        Links::Keep
    } else {
        links
    };
    let base =
        Arc::new(Dir::open(root).map_err(|e| Error::io(format!("opening {}", root.display()), e))?);
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let mut w = Walk {
        filter,
        links,
        from: 0,
        ancestors: Vec::new(),
        out: &mut out,
        skipped: &mut skipped,
    };
    for r in requested {
        if r.is_empty() || r == "." {
            w.walk(&base, Path::new(""), "")?;
            continue;
        }
        let parts =
            pathsafe::components(r).map_err(|e| forbidden(format!("refusing {r:?}: {e}")))?;
        if parts.iter().any(|p| pathsafe::is_internal(p)) {
            return Err(forbidden(format!(
                "refusing {r:?}: {} is braid's staging directory",
                pathsafe::STAGING_DIR
            )));
        }
        let rel: PathBuf = parts.iter().collect();
        let name = parts[parts.len() - 1];
        let through_link = || forbidden(format!("refusing {r:?}: it goes through a symbolic link"));
        let meta = match base.meta(&rel) {
            Ok(Some(m)) => m,
            Ok(None) => {
                return Err(Error::refused(
                    Code::NotFound,
                    format!("{r} does not exist"),
                ))
            }
            // Resolution below the root stopped on the way: at a link (refused
            // for what it is), or at something that is no directory.
            Err(e) => {
                let link_on_the_way = (1..parts.len()).any(|i| {
                    let on_the_way: PathBuf = parts[..i].iter().collect();
                    matches!(base.meta(&on_the_way), Ok(Some(m)) if m.kind == Kind::Link)
                });
                return Err(match e.raw_os_error() {
                    _ if link_on_the_way => through_link(),
                    Some(libc::ELOOP) => through_link(),
                    Some(libc::ENOENT | libc::ENOTDIR) => {
                        Error::refused(Code::NotFound, format!("{r} does not exist"))
                    }
                    _ => Error::io(format!("reading {}", base.shown(&rel).display()), e),
                });
            }
        };
        let local = base.shown(&rel);
        match meta.kind {
            Kind::Link => return Err(through_link()),
            Kind::Dir => {
                if !filter.excludes(name, true) {
                    w.out.push(dir_source(&local, name, &meta));
                    w.walk(&base, &rel, name)?;
                }
            }
            Kind::File if filter.excludes(name, false) => {}
            Kind::File => w.out.push(file_source(&base, &rel, &local, name)?),
            Kind::Other => {
                return Err(Error::refused(
                    Code::BadRequest,
                    format!("{r} is neither a file nor a directory"),
                ))
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(s) = out.iter().find(|s| !seen.insert(&s.entry.path)) {
        return Err(Error::refused(
            Code::BadRequest,
            format!("{} is asked for twice", s.entry.path),
        ));
    }
    Ok(out)
}

/// The name a path asked of a `get` arrives under: its last component
/// (`photos` of `incoming/photos/`), or none for the root itself.
pub fn asked_name(path: &str) -> Option<&str> {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
}

/// Client side of `get`: every entry the server offers must be one of the
/// names asked for or lie below one (a path asked for is named by its last
/// component; `.` asks for the root's whole contents). A server is not trusted
/// with the rest of the destination: one that offers `.bashrc` for a get of
/// `photos` is refused before anything is written.
pub fn check_offer(asked: &[String], offered: &[FileEntry]) -> Result<()> {
    if asked.iter().any(|a| a.is_empty() || a == ".") {
        return Ok(());
    }
    let tops: std::collections::HashSet<&str> =
        asked.iter().filter_map(|a| asked_name(a)).collect();
    for f in offered {
        let top = f.path.split('/').next().unwrap_or("");
        if !tops.contains(top) {
            return Err(Error::Protocol(format!(
                "the server offered {:?}, which is not below anything asked for ({}); \
                 nothing was written",
                braid_wire::cut(&f.path, 200),
                asked.join(", ")
            )));
        }
    }
    Ok(())
}

fn forbidden(message: String) -> Error {
    Error::refused(Code::ForbiddenPath, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_recurse_in_name_order_under_the_prefix() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("tree");
        fs::create_dir_all(top.join("b/c")).unwrap();
        fs::write(top.join("a.txt"), b"aa").unwrap();
        fs::write(top.join("b/c/z"), b"").unwrap();
        fs::write(top.join("b/y"), b"yyy").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", top.join("link")).unwrap();
        let (files, skipped) = list(
            std::slice::from_ref(&top),
            "./dest/",
            &Filter::default(),
            Links::Skip,
        )
        .unwrap();
        let paths: Vec<_> = files
            .iter()
            .map(|s| (s.entry.path.as_str(), s.entry.size))
            .collect();
        assert_eq!(
            paths,
            vec![
                ("dest/tree", 0),
                ("dest/tree/a.txt", 2),
                ("dest/tree/b", 0),
                ("dest/tree/b/c", 0),
                ("dest/tree/b/c/z", 0),
                ("dest/tree/b/y", 3)
            ]
        );
        let dirs: Vec<bool> = files.iter().map(|s| s.entry.is_dir()).collect();
        assert_eq!(dirs, [true, false, true, true, false, false]);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].reason.contains("symbolic link"));
    }

    #[test]
    fn a_filter_leaves_out_what_it_excludes_and_what_lies_below_an_excluded_directory() {
        use crate::files::filter::Rule;
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("proj");
        fs::create_dir_all(top.join("build/deep")).unwrap();
        fs::create_dir_all(top.join("src")).unwrap();
        for f in [
            "a.rs",
            "a.o",
            "keep.o",
            "build/x",
            "build/deep/keep.o",
            "src/b.rs",
            "src/c.o",
        ] {
            fs::write(top.join(f), b"x").unwrap();
        }
        let filter = Filter::new(vec![
            Rule::new(true, "/proj/keep.o").unwrap(),
            Rule::new(false, "*.o").unwrap(),
            Rule::new(false, "build/").unwrap(),
        ])
        .unwrap();
        let names = |files: Vec<Source>| -> Vec<String> {
            files.into_iter().map(|s| s.entry.path).collect()
        };
        let (files, skipped) =
            list(std::slice::from_ref(&top), "dest", &filter, Links::Skip).unwrap();
        assert_eq!(
            names(files),
            [
                "dest/proj",
                "dest/proj/a.rs",
                "dest/proj/keep.o",
                "dest/proj/src",
                "dest/proj/src/b.rs"
            ]
        );
        assert!(skipped.is_empty(), "{skipped:?}");
        // A get's server lists with the client's filter, matched as offered.
        let got = resolve_request(d.path(), &["proj".into()], &filter, Links::Skip).unwrap();
        assert_eq!(
            names(got),
            [
                "proj",
                "proj/a.rs",
                "proj/keep.o",
                "proj/src",
                "proj/src/b.rs"
            ]
        );
        let only = Filter::new(vec![Rule::new(false, "proj").unwrap()]).unwrap();
        let (files, skipped) = list(std::slice::from_ref(&top), "", &only, Links::Skip).unwrap();
        assert!(
            files.is_empty() && skipped[0].reason.contains("excluded"),
            "{skipped:?}"
        );
    }

    #[test]
    fn links_below_a_tree_are_kept_as_links_or_followed_and_a_loop_is_not() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("t");
        fs::create_dir_all(top.join("sub")).unwrap();
        fs::create_dir_all(d.path().join("outside")).unwrap();
        fs::write(d.path().join("outside/o"), b"oo").unwrap();
        fs::write(top.join("sub/f"), b"f").unwrap();
        std::os::unix::fs::symlink("sub/f", top.join("to-f")).unwrap();
        std::os::unix::fs::symlink("../outside", top.join("to-outside")).unwrap();
        std::os::unix::fs::symlink("..", top.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("nowhere", top.join("broken")).unwrap();
        let paths = |files: &[Source]| -> Vec<String> {
            files.iter().map(|s| s.entry.path.clone()).collect()
        };
        let (kept, skipped) = list(
            std::slice::from_ref(&top),
            "",
            &Filter::default(),
            Links::Keep,
        )
        .unwrap();
        let links: Vec<(&str, &str)> = kept
            .iter()
            .filter(|s| s.entry.is_link())
            .map(|s| (s.entry.path.as_str(), s.link.as_deref().unwrap()))
            .collect();
        assert_eq!(
            links,
            [
                ("t/broken", "nowhere"),
                ("t/sub/up", ".."),
                ("t/to-f", "sub/f"),
                ("t/to-outside", "../outside")
            ]
        );
        assert!(skipped.is_empty(), "{skipped:?}");
        let (followed, skipped) = list(
            std::slice::from_ref(&top),
            "",
            &Filter::default(),
            Links::Follow,
        )
        .unwrap();
        assert_eq!(
            paths(&followed),
            [
                "t",
                "t/sub",
                "t/sub/f",
                "t/to-f",
                "t/to-outside",
                "t/to-outside/o"
            ]
        );
        assert_eq!(followed[3].entry.size, 1, "the file a link names");
        assert!(
            skipped.iter().any(|s| s.reason.contains("broken")),
            "{skipped:?}"
        );
        assert!(
            skipped.iter().any(|s| s.reason.contains("a loop")),
            "{skipped:?}"
        );
    }

    #[test]
    fn names_braid_once_skipped_are_sent_and_its_staging_directory_is_named() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("t");
        fs::create_dir_all(top.join(".braid-partial")).unwrap();
        fs::create_dir_all(top.join("empty")).unwrap();
        for n in ["a.braid-part", ".b.braid-journal", ".c.tmp"] {
            fs::write(top.join(n), b"x").unwrap();
        }
        let (files, skipped) = list(
            std::slice::from_ref(&top),
            "",
            &Filter::default(),
            Links::Skip,
        )
        .unwrap();
        let paths: Vec<&str> = files.iter().map(|s| s.entry.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "t",
                "t/.b.braid-journal",
                "t/.c.tmp",
                "t/a.braid-part",
                "t/empty"
            ]
        );
        assert_eq!(skipped.len(), 1);
        assert!(
            skipped[0].reason.contains("staging directory"),
            "{skipped:?}"
        );
    }

    #[test]
    fn an_unreadable_file_is_an_error_before_anything_moves() {
        if unsafe { libc::geteuid() } == 0 {
            // root reads anything; the system tests cover this as a user.
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("locked");
        fs::write(&f, b"x").unwrap();
        fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        let e = list(&[f], "", &Filter::default(), Links::Skip).unwrap_err();
        assert!(e.to_string().contains("cannot read"), "{e}");
    }

    #[test]
    fn get_requests_stay_below_the_root() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        fs::create_dir_all(root.join("pub")).unwrap();
        fs::write(root.join("pub/f"), b"x").unwrap();
        fs::write(d.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), root.join("pub/escape")).unwrap();
        assert_eq!(
            resolve_request(&root, &["pub/f".into()], &Filter::default(), Links::Skip).unwrap()[0]
                .entry
                .path,
            "f"
        );
        let all: Vec<String> =
            resolve_request(&root, &[".".into()], &Filter::default(), Links::Skip)
                .unwrap()
                .into_iter()
                .map(|s| s.entry.path)
                .collect();
        assert_eq!(
            all,
            ["pub", "pub/f"],
            "the link is left out, the root is the top"
        );
        fs::create_dir_all(root.join("pub/.braid-partial")).unwrap();
        fs::write(root.join("pub/.braid-partial/x.part"), b"another session's").unwrap();
        for bad in [
            "../secret",
            "/etc/passwd",
            "pub/escape",
            "pub/escape/x",
            "pub/.braid-partial/x.part",
            ".braid-partial",
        ] {
            let e =
                resolve_request(&root, &[bad.into()], &Filter::default(), Links::Skip).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Refused {
                        code: Code::ForbiddenPath,
                        ..
                    }
                ),
                "{bad}: {e}"
            );
        }
        assert!(matches!(
            resolve_request(&root, &["nope".into()], &Filter::default(), Links::Skip),
            Err(Error::Refused {
                code: Code::NotFound,
                ..
            })
        ));
    }

    #[test]
    fn a_get_takes_only_the_names_it_asked_for() {
        let e = |p: &str| FileEntry {
            path: p.into(),
            size: 0,
            mode: 0,
            mtime_ns: 0,
        };
        let asked = ["photos".to_string(), "docs/2024/report.pdf".to_string()];
        let good = [e("photos"), e("photos/a.jpg"), e("report.pdf")];
        assert!(check_offer(&asked, &good).is_ok());
        for bad in [".bashrc", ".ssh/authorized_keys", "photosx/a", "docs"] {
            let err = check_offer(&asked, &[e("photos"), e(bad)]).unwrap_err();
            assert!(matches!(err, Error::Protocol(_)), "{bad}: {err}");
            assert!(
                err.to_string().contains("not below anything asked for"),
                "{err}"
            );
        }
        assert!(
            check_offer(&[".".into()], &[e(".bashrc")]).is_ok(),
            "the root's contents"
        );
    }

    /// A listed file swapped for a link to a file outside the root (or for
    /// another file) after the listing is not sent.
    #[test]
    fn a_source_swapped_after_the_listing_is_refused_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        fs::create_dir_all(root.join("pub")).unwrap();
        fs::write(root.join("pub/f"), b"listed").unwrap();
        fs::write(root.join("pub/g"), b"listed too").unwrap();
        fs::write(d.path().join("shadow"), b"secret").unwrap();
        let sources =
            resolve_request(&root, &["pub".into()], &Filter::default(), Links::Skip).unwrap();
        let f = sources.iter().find(|s| s.entry.path == "pub/f").unwrap();
        let g = sources.iter().find(|s| s.entry.path == "pub/g").unwrap();
        assert_eq!(fs::read_to_string(root.join("pub/f")).unwrap(), "listed");
        assert!(f.open().is_ok());
        fs::remove_file(root.join("pub/f")).unwrap();
        std::os::unix::fs::symlink(d.path().join("shadow"), root.join("pub/f")).unwrap();
        assert!(
            f.open().is_err(),
            "a link in the listed file's place was followed"
        );
        // Written beside it and renamed over it: a new inode.
        fs::write(root.join("pub/g.new"), b"another file").unwrap();
        fs::rename(root.join("pub/g.new"), root.join("pub/g")).unwrap();
        let e = g.open().unwrap_err();
        assert!(e.to_string().contains("since it was listed"), "{e}");
        // The directory it was listed from swapped for a link: refused too.
        fs::rename(root.join("pub"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink(d.path(), root.join("pub")).unwrap();
        assert!(f.open().is_err());
    }
}
