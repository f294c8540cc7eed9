//! rsync's ways of treating what the receiving end already has, as a send
//! or get asks for them: `--exclude`/`--include` (a `Filter`), `--update`,
//! `--checksum`, `--dry-run`, `--delete`, `--owner`, `--group` and `-H`. Here: the options and their
//! flags, the `Filter`, `Sums`, `Owners` and `Removed` frames, the content
//! comparison `--checksum` makes, and what a dry run says it would do.

use std::fs::File;
use std::path::Path;

use braid_wire::{
    FileEntry, Message, FLAG_CHECKSUM, FLAG_DELETE, FLAG_DRY_RUN, FLAG_FILTER, FLAG_GROUP,
    FLAG_HARD_LINKS, FLAG_LINKS, FLAG_OWNER, FLAG_UPDATE,
};

use crate::error::{Code, Error, Result};
use crate::files::beneath::{Access, Dir, Kind, Owner};
use crate::files::filter::Filter;
use crate::files::manifest::{blake3_ticking, Links, Source};
use crate::proto::unexpected;
use crate::proto::Answer;
use crate::session::conn::Conn;
use crate::session::receive::SyncOptions;

/// What a send or get asks of the receiving end's existing files.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Entries left out of the listing (and kept from `delete`).
    pub filter: Filter,
    /// Keep a file that is newer at the receiver.
    pub update: bool,
    /// Skip by content (size and BLAKE3) rather than size and time.
    pub checksum: bool,
    /// Say what would happen; write, move and remove nothing.
    pub dry_run: bool,
    /// Remove what the transfer's directories hold at the receiver and the
    /// sender does not.
    pub delete: bool,
    /// Say at the end what became of each entry (not a flag of the session:
    /// this end alone prints it).
    pub itemize: bool,
    /// What a send's listing does with the links below its directories
    /// (kept as links unless --copy-links; a get's server never follows one).
    pub links: Links,
    /// Which ids the receiver gives each entry (--owner, --group).
    pub ids: Ids,
    /// Further names of a file travel as hard links to its first (-H).
    pub hard_links: bool,
}

/// Which of an entry's ids a session keeps: its owner (--owner), its group
/// (--group), by number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ids {
    pub owner: bool,
    pub group: bool,
}

impl Ids {
    pub fn any(self) -> bool {
        self.owner || self.group
    }

    fn of(self, (uid, gid): (u32, u32)) -> Owner {
        Owner {
            uid: self.owner.then_some(uid),
            gid: self.group.then_some(gid),
        }
    }

    /// Whether this end may give received entries their ids: it must be
    /// root, and a server must have been started to (`allowed`), since a
    /// peer that names owners (root's among them, setuid bits kept) makes
    /// programs that run as them.
    pub fn check_receiving(self, allowed: bool) -> Result<()> {
        if !self.any() {
            return Ok(());
        }
        if !allowed {
            return Err(Error::refused(
                Code::BadRequest,
                "this server does not give files their owners (start it with serve \
                 --keep-owners); send without --owner and --group",
            ));
        }
        if !rustix::process::geteuid().is_root() {
            return Err(Error::refused(
                Code::BadRequest,
                "--owner and --group need a receiver that runs as root",
            ));
        }
        Ok(())
    }
}

impl Options {
    /// The session flags these options set.
    pub fn flags(&self) -> u32 {
        [
            (self.update, FLAG_UPDATE),
            (self.checksum, FLAG_CHECKSUM),
            (self.dry_run, FLAG_DRY_RUN),
            (self.delete, FLAG_DELETE),
            (!self.filter.is_empty(), FLAG_FILTER),
            (self.ids.owner, FLAG_OWNER),
            (self.ids.group, FLAG_GROUP),
            (self.hard_links, FLAG_HARD_LINKS),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .fold(0, |f, (_, flag)| f | flag)
    }

    /// The options a peer's flags ask for (the filter arrives apart).
    pub fn from_flags(flags: u32, filter: Filter) -> Options {
        Options {
            filter,
            update: flags & FLAG_UPDATE != 0,
            checksum: flags & FLAG_CHECKSUM != 0,
            dry_run: flags & FLAG_DRY_RUN != 0,
            delete: flags & FLAG_DELETE != 0,
            itemize: false,
            links: if flags & FLAG_LINKS != 0 {
                Links::Keep
            } else {
                Links::Skip
            },
            ids: Ids {
                owner: flags & FLAG_OWNER != 0,
                group: flags & FLAG_GROUP != 0,
            },
            hard_links: flags & FLAG_HARD_LINKS != 0,
        }
    }

    /// The receiving end's part, given what `same_content` found.
    pub fn receiving(&self, same: Option<Vec<Option<[u8; 32]>>>) -> SyncOptions {
        SyncOptions {
            update: self.update,
            same,
            dry_run: self.dry_run,
            delete: self.delete.then(|| self.filter.clone()),
        }
    }
}

/// Sends the client's filter, if it has one (its flag says one follows).
pub fn send_filter(conn: &mut Conn, filter: &Filter) -> Result<()> {
    if filter.is_empty() {
        return Ok(());
    }
    conn.send_or_reason(&Message::Filter {
        rules: filter.wire(),
    })
}

/// Reads the client's filter where its flags say one follows.
pub fn read_filter(conn: &mut Conn, flags: u32) -> Result<Filter> {
    if flags & FLAG_FILTER == 0 {
        return Ok(Filter::default());
    }
    match conn.recv()? {
        Message::Filter { rules } => Filter::from_wire(&rules)
            .map_err(|e| Error::refused(Code::BadRequest, format!("the filter: {e}"))),
        m => Err(unexpected("the filter", &m)),
    }
}

/// Sends each link's target, in the manifest's order.
pub fn send_links(conn: &mut Conn, sources: &[Source]) -> Result<()> {
    for (i, s) in sources.iter().enumerate() {
        if let Some(target) = &s.link {
            conn.send_or_reason(&Message::Link {
                file: i as u32,
                target: target.clone(),
            })?;
        }
    }
    Ok(())
}

/// Reads the target of each link of `manifest`, in order (none if it has no
/// link); a target that is empty, holds a NUL or is longer than a path may
/// be is refused.
fn read_links(conn: &mut Conn, manifest: &[FileEntry]) -> Result<Vec<Option<String>>> {
    let mut out = vec![None; manifest.len()];
    for (i, _) in manifest.iter().enumerate().filter(|(_, e)| e.is_link()) {
        match conn.recv()? {
            Message::Link { file, target } if file as usize == i => {
                if target.is_empty() || target.contains('\0') || target.len() >= 4096 {
                    return Err(Error::refused(
                        Code::BadRequest,
                        format!(
                            "{} is a link to {target:?}, which no link can hold",
                            manifest[i].path
                        ),
                    ));
                }
                out[i] = Some(target);
            }
            m => return Err(unexpected("the manifest's links, in order", &m)),
        }
    }
    Ok(out)
}

/// Sends, for each further name of a file (-H), the entry of its first.
pub fn send_hard_links(conn: &mut Conn, sources: &[Source]) -> Result<()> {
    for (i, s) in sources.iter().enumerate() {
        if let Some(to) = s.hard_link {
            conn.send_or_reason(&Message::HardLink { file: i as u32, to })?;
        }
    }
    Ok(())
}

/// Reads, for each hard link of `manifest` in order, the path of the file
/// it names: an earlier entry of the manifest, and a file with content
/// (not a directory, nor a link of either kind); anything else is refused.
fn read_hard_links(conn: &mut Conn, manifest: &[FileEntry]) -> Result<Vec<Option<String>>> {
    let mut out = vec![None; manifest.len()];
    for (i, e) in manifest
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_hard_link())
    {
        match conn.recv()? {
            Message::HardLink { file, to } if file as usize == i => {
                match manifest.get(to as usize) {
                    Some(t) if (to as usize) < i && t.is_file() => out[i] = Some(t.path.clone()),
                    _ => {
                        return Err(Error::refused(
                            Code::BadRequest,
                            format!(
                                "{} is a hard link to entry {to}, which is not a file listed \
                                 before it",
                                e.path
                            ),
                        ))
                    }
                }
            }
            m => return Err(unexpected("the manifest's hard links, in order", &m)),
        }
    }
    Ok(out)
}

/// Entries per `Sums` or `Owners` frame: 32 KiB of hashes, 8 KiB of ids,
/// far below a frame's limit.
const PER_FRAME: usize = 1024;

/// Sends one value per manifest entry, in order, as frames of `PER_FRAME`
/// values, each made by `frame` from its first entry's index.
fn send_per_entry<T: Clone>(
    conn: &mut Conn,
    all: &[T],
    frame: impl Fn(u32, Vec<T>) -> Message,
) -> Result<()> {
    for (i, chunk) in all.chunks(PER_FRAME).enumerate() {
        conn.send_or_reason(&frame((i * PER_FRAME) as u32, chunk.to_vec()))?;
    }
    Ok(())
}

/// Reads one value per entry of a manifest of `n` entries from frames that
/// `take` opens (their first entry's index and values; any other message is
/// given back and refused as not `what`), each starting where the last ended.
fn read_per_entry<T>(
    conn: &mut Conn,
    n: usize,
    what: &str,
    take: impl Fn(Message) -> std::result::Result<(u32, Vec<T>), Message>,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(n.min(1 << 20));
    while out.len() < n {
        match take(conn.recv()?) {
            Ok((first, got)) if first as usize == out.len() && out.len() + got.len() <= n => {
                out.extend(got)
            }
            Ok((first, _)) => {
                let m = format!(
                    "a frame from entry {first} where entry {} was due",
                    out.len()
                );
                return Err(Error::Protocol(format!("expected {what}, got {m}")));
            }
            Err(m) => return Err(unexpected(what, &m)),
        }
    }
    Ok(out)
}

/// `--checksum`'s sending end: every file's BLAKE3 before the transfer (as
/// rsync's --checksum reads every file first), kept in its `Source`; `tick`
/// runs every few megabytes, for keepalives.
pub fn sums(sources: &mut [Source], tick: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    for s in sources.iter_mut().filter(|s| s.entry.is_file()) {
        let f = s
            .open()
            .map_err(|e| Error::io(format!("reading {}", s.local.display()), e))?;
        s.sum = Some(hash(&f, &s.local.display(), tick)?);
    }
    Ok(())
}

/// Sends the sums as `Sums` frames (a directory's or a link's: zeros).
pub fn send_sums(conn: &mut Conn, sources: &[Source]) -> Result<()> {
    let sums: Vec<[u8; 32]> = sources.iter().map(|s| s.sum.unwrap_or([0; 32])).collect();
    send_per_entry(conn, &sums, |first, hashes| Message::Sums { first, hashes })
}

/// Reads the sender's sums of a manifest of `n` entries, in order.
fn read_sums(conn: &mut Conn, n: usize) -> Result<Vec<[u8; 32]>> {
    read_per_entry(conn, n, "the sender's sums, in order", |m| match m {
        Message::Sums { first, hashes } => Ok((first, hashes)),
        m => Err(m),
    })
}

/// Sends each entry's owner and group as `Owners` frames (--owner, --group).
pub fn send_owners(conn: &mut Conn, sources: &[Source], ids: Ids) -> Result<()> {
    if !ids.any() {
        return Ok(());
    }
    let all: Vec<(u32, u32)> = sources.iter().map(|s| s.owner).collect();
    send_per_entry(conn, &all, |first, ids| Message::Owners { first, ids })
}

/// Reads the sender's ids of a manifest of `n` entries, in order, as the
/// ids this end gives them; an id of -1 (which chown reads as "leave it")
/// is refused.
fn read_owners(conn: &mut Conn, manifest: &[FileEntry], ids: Ids) -> Result<Vec<Owner>> {
    let pairs = read_per_entry(
        conn,
        manifest.len(),
        "the sender's owners, in order",
        |m| match m {
            Message::Owners { first, ids } => Ok((first, ids)),
            m => Err(m),
        },
    )?;
    pairs
        .into_iter()
        .zip(manifest)
        .map(|(pair, e)| {
            if pair.0 == u32::MAX || pair.1 == u32::MAX {
                return Err(Error::refused(
                    Code::BadRequest,
                    format!("{} has an owner or group of -1", e.path),
                ));
            }
            Ok(ids.of(pair))
        })
        .collect()
}

/// What follows the manifest at the receiving end: the sender's sums
/// (--checksum), each link's target (where the session carries links), the
/// entries' owners (--owner, --group), each hard link's file (-H), then
/// which files here hold the sums' content already (hashed while
/// keepalives go out). An error is told to the sender.
pub fn receive_extras(
    conn: &mut Conn,
    root: &Path,
    manifest: &[FileEntry],
    asked: &Options,
    links: bool,
) -> Result<Extras> {
    let (checksum, ids) = (asked.checksum, asked.ids);
    let theirs = if checksum {
        let theirs = read_sums(conn, manifest.len());
        Some(conn.tell(theirs)?)
    } else {
        None
    };
    let targets = if links {
        let targets = read_links(conn, manifest);
        conn.tell(targets)?
    } else {
        Vec::new()
    };
    let owners = if ids.any() {
        let owners = read_owners(conn, manifest, ids);
        conn.tell(owners)?
    } else {
        Vec::new()
    };
    let hard_links = if asked.hard_links {
        let hard = read_hard_links(conn, manifest);
        conn.tell(hard)?
    } else {
        Vec::new()
    };
    let same = match theirs {
        Some(theirs) => {
            let w = &mut conn.w;
            let same = same_content(root, manifest, &theirs, &mut || w.keepalive());
            Some(conn.tell(same)?)
        }
        None => None,
    };
    Ok(Extras {
        same,
        links: targets,
        owners,
        hard_links,
    })
}

/// What a receiving end learns after the manifest (`receive_extras`).
pub struct Extras {
    /// For `SyncOptions::same`.
    pub same: Option<Vec<Option<[u8; 32]>>>,
    /// For `RecvOptions::links`.
    pub links: Vec<Option<String>>,
    /// For `RecvOptions::owners`.
    pub owners: Vec<Owner>,
    /// For `RecvOptions::hard_links`.
    pub hard_links: Vec<Option<String>>,
}

/// `--checksum`'s receiving end: for each entry, the BLAKE3 of the file
/// below `root` at its path where that file has the sender's size and
/// content (read through descriptors below the root, never through a link).
fn same_content(
    root: &Path,
    manifest: &[FileEntry],
    theirs: &[[u8; 32]],
    tick: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<Option<[u8; 32]>>> {
    let root = Dir::open(root).map_err(|e| Error::io(format!("opening {}", root.display()), e))?;
    let mut out = Vec::with_capacity(manifest.len());
    for (e, sum) in manifest.iter().zip(theirs) {
        let rel = Path::new(&e.path);
        let here = match root.meta(rel) {
            Ok(Some(m)) => m,
            _ => {
                out.push(None);
                continue;
            }
        };
        if !e.is_file() || here.kind != Kind::File || here.size != e.size {
            out.push(None);
            continue;
        }
        let f = root
            .file(rel, Access::Read)
            .map_err(|err| Error::io(format!("reading {}", root.shown(rel).display()), err))?;
        let ours = hash(&f, &root.shown(rel).display(), tick)?;
        out.push((&ours == sum).then_some(ours));
    }
    Ok(out)
}

enum Hashing {
    Io(std::io::Error),
    Tick(Error),
}

impl From<std::io::Error> for Hashing {
    fn from(e: std::io::Error) -> Hashing {
        Hashing::Io(e)
    }
}

/// `f`'s BLAKE3 with `tick` between reads; `shown` names it in an error.
pub(crate) fn hash(
    f: &File,
    shown: &dyn std::fmt::Display,
    tick: &mut dyn FnMut() -> Result<()>,
) -> Result<[u8; 32]> {
    blake3_ticking(f, &mut || tick().map_err(Hashing::Tick))
        .map(|(h, _)| h)
        .map_err(|e| match e {
            Hashing::Io(e) => Error::io(format!("hashing {shown}"), e),
            Hashing::Tick(e) => e,
        })
}

/// Bytes of paths per `Removed` frame.
const REMOVED_CHUNK: usize = 1 << 20;

/// Sends what `--delete` removed (or would) as `Removed` frames: at least
/// one, so the sender knows the list is whole.
pub fn send_removed(conn: &mut crate::session::conn::FrameWriter, paths: &[String]) -> Result<()> {
    let mut start = 0;
    loop {
        let (mut end, mut bytes) = (start, 0);
        while end < paths.len() && (end == start || bytes + paths[end].len() + 2 <= REMOVED_CHUNK) {
            bytes += paths[end].len() + 2;
            end += 1;
        }
        conn.send(&Message::Removed {
            paths: paths[start..end].to_vec(),
            more: end < paths.len(),
        })?;
        if end >= paths.len() {
            return Ok(());
        }
        start = end;
    }
}

/// What a peer's `--delete` removed, as this end learns it: the first
/// `SHOWN` paths kept to tell the user, all of them counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    pub shown: Vec<String>,
    pub count: u64,
    /// The last frame arrived (`more` was false).
    pub whole: bool,
}

impl Removed {
    /// Paths a peer may make this end keep; the rest are counted only.
    pub const SHOWN: usize = 10_000;

    pub fn add(&mut self, paths: Vec<String>, more: bool) {
        self.count += paths.len() as u64;
        let room = Self::SHOWN.saturating_sub(self.shown.len());
        self.shown.extend(paths.into_iter().take(room));
        self.whole = !more;
    }

    pub fn from_paths(paths: Vec<String>) -> Removed {
        let mut r = Removed::default();
        r.add(paths, false);
        r
    }
}

/// What a dry run says of one entry of the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Would {
    /// Sent whole.
    Send,
    /// Continued: this much of it is there already.
    Resume(u64),
    /// Skipped: the receiver has it (same size and time, or same content).
    Skip,
    /// Kept: newer at the receiver (--update).
    Keep,
    /// A directory (made if missing).
    Dir,
    /// A symbolic link (made, or put in place of what is there).
    Link,
    /// A further name of a file of the session (-H): linked to it.
    HardLink,
}

impl Would {
    /// What the receiver's answer for `e` means.
    pub fn of(e: &FileEntry, a: &Answer) -> Would {
        match a {
            _ if e.is_dir() => Would::Dir,
            _ if e.is_link() => Would::Link,
            _ if e.is_hard_link() => Would::HardLink,
            Answer::Keeps => Would::Keep,
            Answer::Holds(h) if e.size > 0 && h.is_complete(e.size) => Would::Skip,
            Answer::Holds(h) if h.covered() > 0 => Would::Resume(h.covered().min(e.size)),
            Answer::Holds(_) => Would::Send,
        }
    }

    /// The word a line and a record use.
    pub fn word(&self) -> &'static str {
        match self {
            Would::Send => "send",
            Would::Resume(_) => "resume",
            Would::Skip => "skip",
            Would::Keep => "keep",
            Would::Dir => "dir",
            Would::Link => "link",
            Would::HardLink => "hardlink",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::filter::Rule;
    use crate::files::ranges::RangeSet;

    #[test]
    fn options_travel_as_flags_and_back() {
        let o = Options {
            filter: Filter::new(vec![Rule::new(false, "*.o").unwrap()]).unwrap(),
            update: true,
            checksum: false,
            dry_run: true,
            delete: true,
            itemize: false,
            links: Links::Keep,
            ids: Ids {
                owner: false,
                group: true,
            },
            hard_links: true,
        };
        let back = Options::from_flags(o.flags(), o.filter.clone());
        assert_eq!(
            o.flags(),
            FLAG_UPDATE | FLAG_DRY_RUN | FLAG_DELETE | FLAG_FILTER | FLAG_GROUP | FLAG_HARD_LINKS
        );
        assert!(back.hard_links);
        assert!(back.update && back.dry_run && back.delete && !back.checksum);
        assert_eq!(back.ids, o.ids);
        assert_eq!(
            back.ids.of((7, 9)),
            Owner {
                uid: None,
                gid: Some(9)
            }
        );
        assert_eq!(Options::default().flags(), 0);
        let r = o.receiving(None);
        assert_eq!(r.delete, Some(o.filter));
    }

    #[test]
    fn removed_keeps_a_bounded_list_and_counts_all() {
        let mut r = Removed::default();
        r.add(
            (0..Removed::SHOWN + 5).map(|i| i.to_string()).collect(),
            true,
        );
        assert!(!r.whole);
        r.add(vec!["x".into()], false);
        assert_eq!(r.count, Removed::SHOWN as u64 + 6);
        assert_eq!(r.shown.len(), Removed::SHOWN);
        assert!(r.whole);
    }

    #[test]
    fn a_dry_run_reads_the_receivers_answers() {
        let f = |size| FileEntry {
            path: "f".into(),
            size,
            mode: 0o644,
            mtime_ns: 0,
        };
        let holds = |r: &[(u64, u64)]| Answer::Holds(RangeSet::from_ranges(r));
        assert_eq!(Would::of(&f(10), &holds(&[])), Would::Send);
        assert_eq!(Would::of(&f(10), &holds(&[(0, 4)])), Would::Resume(4));
        assert_eq!(Would::of(&f(10), &holds(&[(0, 10)])), Would::Skip);
        assert_eq!(Would::of(&f(10), &Answer::Keeps), Would::Keep);
        assert_eq!(Would::of(&f(0), &holds(&[])), Would::Send);
    }
}
