//! `--delete`: what the manifest's directories hold at the receiving end
//! and the manifest does not name is removed once every file is published,
//! as rsync's --delete makes a mirror.
//!
//! What is removed is bounded and checked before the first removal: only
//! below a directory the manifest names, reached through descriptors below
//! the root without following a link (a link is removed as a link, never
//! what it points to); never braid's staging directory; never what the
//! transfer's filter excludes (a directory holding such an entry is kept
//! with it); and no more entries than the session's limit, past which
//! nothing at all is removed.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use braid_wire::FileEntry;

use crate::error::{Code, Error, Result};
use crate::files::beneath::{Dir, Kind};
use crate::files::filter::{endings, Filter};
use crate::files::pathsafe;

/// One entry to remove, relative to the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extra {
    pub path: PathBuf,
    pub dir: bool,
}

/// What `--delete` removes below `root` for `manifest`, children before
/// their directory; at most `max` entries, or an error and nothing listed.
/// `tick` runs after each directory listed: a walk of a large tree keeps
/// the session from falling silent, and its error ends the walk.
pub fn extraneous(
    root: &Dir,
    manifest: &[FileEntry],
    filter: &Filter,
    max: usize,
    tick: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<Extra>> {
    let named: HashSet<&str> = manifest.iter().map(|e| e.path.as_str()).collect();
    let mut out = Vec::new();
    let mut walk = Walk {
        root,
        filter,
        max,
        tick,
    };
    for d in manifest.iter().filter(|e| e.is_dir()) {
        let rel = Path::new(&d.path);
        // A directory the session did not make (a dry run) holds nothing.
        let Ok(dir) = root.dir(rel) else { continue };
        for (name, kind) in listing(&dir, root, rel, walk.tick)? {
            let path = rel.join(&name);
            if pathsafe::is_internal(&name.to_string_lossy())
                || path.to_str().is_some_and(|p| named.contains(p))
            {
                continue;
            }
            walk.collect(&path, kind, &mut out)?;
        }
    }
    Ok(out)
}

/// A walk below one of the manifest's directories.
struct Walk<'a, 't> {
    root: &'a Dir,
    filter: &'a Filter,
    max: usize,
    tick: &'t mut dyn FnMut() -> Result<()>,
}

impl Walk<'_, '_> {
    /// Adds `path` (and, for a directory, what lies below it, first) to `out`,
    /// unless the filter protects it; returns whether it is to be removed.
    fn collect(&mut self, path: &Path, kind: Kind, out: &mut Vec<Extra>) -> Result<bool> {
        let (root, max) = (self.root, self.max);
        let dir = kind == Kind::Dir;
        if protected(self.filter, path, dir) {
            return Ok(false);
        }
        let mut empties = true;
        if dir {
            let d = root
                .dir(path)
                .map_err(|e| Error::io(format!("listing {}", root.shown(path).display()), e))?;
            for (name, kind) in listing(&d, root, path, self.tick)? {
                let below = path.join(&name);
                // The staging directory is braid's: neither removed nor emptied.
                let removable = !pathsafe::is_internal(&name.to_string_lossy())
                    && self.collect(&below, kind, out)?;
                empties &= removable;
            }
        }
        if !empties {
            return Ok(false);
        }
        if out.len() >= max {
            return Err(Error::refused(
                Code::TooLarge,
                format!(
                    "--delete would remove more than {max} entries (this end's limit); \
                 nothing was removed"
                ),
            ));
        }
        out.push(Extra {
            path: path.to_owned(),
            dir,
        });
        Ok(true)
    }
}

/// A directory's entries by name; `tick` after the listing.
fn listing(
    d: &Dir,
    root: &Dir,
    rel: &Path,
    tick: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<(OsString, Kind)>> {
    let mut l = d
        .entries()
        .map_err(|e| Error::io(format!("listing {}", root.shown(rel).display()), e))?;
    l.sort_by(|a, b| a.0.cmp(&b.0));
    tick()?;
    Ok(l)
}

/// Whether the filter keeps `path` from removal. The receiver does not know
/// where the sender's listing began (a send's destination prefix), so every
/// ending of the path at a component boundary is tried: one the filter
/// excludes protects it. A pattern anchored at the listing's top may then
/// protect more than the sender left out, never less.
fn protected(filter: &Filter, path: &Path, dir: bool) -> bool {
    if filter.is_empty() {
        return false;
    }
    endings(&path.to_string_lossy()).any(|end| filter.excludes(end, dir))
}

/// Removes `extras` (children before their directories), each through its
/// directory's descriptor: a name that became a link meanwhile is removed as
/// a link. A directory that is no longer empty stays, and is reported.
/// `tick` runs after each removal; its error stops them there.
pub fn remove(
    root: &Dir,
    extras: &[Extra],
    tick: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<(PathBuf, std::io::Error)>> {
    let mut failed = Vec::new();
    for x in extras {
        let r = if x.dir {
            root.remove_dir(&x.path)
        } else {
            root.remove_file(&x.path)
        };
        if let Err(e) = r {
            failed.push((x.path.clone(), e));
        }
        tick()?;
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::filter::Rule;
    use braid_wire::MODE_DIR;
    use std::fs;

    fn entry(path: &str, dir: bool) -> FileEntry {
        FileEntry {
            path: path.into(),
            size: 0,
            mode: if dir { MODE_DIR | 0o755 } else { 0o644 },
            mtime_ns: 0,
        }
    }

    #[test]
    fn what_the_manifest_does_not_name_goes_children_first_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path();
        fs::create_dir_all(t.join("m/old/deep")).unwrap();
        fs::create_dir_all(t.join("m/.braid-partial")).unwrap();
        fs::create_dir_all(t.join("outside")).unwrap();
        for f in [
            "m/a",
            "m/b",
            "m/old/x",
            "m/old/deep/y",
            "m/keep.log",
            "outside/z",
        ] {
            fs::write(t.join(f), b"1").unwrap();
        }
        std::os::unix::fs::symlink("/etc", t.join("m/link")).unwrap();
        let root = Dir::open(t).unwrap();
        let manifest = [entry("m", true), entry("m/a", false)];
        let keep_logs = Filter::new(vec![Rule::new(false, "*.log").unwrap()]).unwrap();
        // A tick after each directory listed: m, m/old, m/old/deep (not the staging directory).
        let mut listed = 0;
        let x = extraneous(&root, &manifest, &keep_logs, 100, &mut || {
            listed += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(listed, 3);
        let paths: Vec<_> = x.iter().map(|e| e.path.to_str().unwrap()).collect();
        assert_eq!(
            paths,
            [
                "m/b",
                "m/link",
                "m/old/deep/y",
                "m/old/deep",
                "m/old/x",
                "m/old"
            ]
        );
        // A tick's error stops the removals there: the first is done, no other.
        let stop = remove(&root, &x, &mut || Err(Error::Interrupted));
        assert!(matches!(stop, Err(Error::Interrupted)));
        assert!(!t.join("m/b").exists() && t.join("m/link").exists());
        let mut ticks = 0;
        let failed = remove(&root, &x[1..], &mut || {
            ticks += 1;
            Ok(())
        })
        .unwrap();
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(ticks, x.len() - 1);
        assert!(t.join("m/a").exists() && t.join("m/keep.log").exists());
        assert!(t.join("m/.braid-partial").exists() && t.join("outside/z").exists());
        assert!(!t.join("m/old").exists() && !t.join("m/link").exists());
        assert!(fs::metadata("/etc").is_ok(), "a link is removed as a link");
    }

    #[test]
    fn a_directory_holding_what_the_filter_keeps_stays_and_the_limit_removes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path();
        fs::create_dir_all(t.join("m/old")).unwrap();
        fs::write(t.join("m/old/notes.log"), b"1").unwrap();
        fs::write(t.join("m/old/x"), b"1").unwrap();
        let root = Dir::open(t).unwrap();
        let manifest = [entry("m", true)];
        let keep_logs = Filter::new(vec![Rule::new(false, "*.log").unwrap()]).unwrap();
        let x = extraneous(&root, &manifest, &keep_logs, 100, &mut || Ok(())).unwrap();
        assert_eq!(
            x,
            [Extra {
                path: "m/old/x".into(),
                dir: false
            }]
        );
        // An anchored pattern is tried at every depth: it protects, never exposes.
        let anchored = Filter::new(vec![Rule::new(false, "/old/x").unwrap()]).unwrap();
        let x = extraneous(&root, &manifest, &anchored, 100, &mut || Ok(())).unwrap();
        assert_eq!(x.len(), 1, "{x:?}");
        assert_eq!(x[0].path, Path::new("m/old/notes.log"));
        let e = extraneous(&root, &manifest, &Filter::default(), 2, &mut || Ok(())).unwrap_err();
        assert!(e.to_string().contains("more than 2"), "{e}");
    }
}
