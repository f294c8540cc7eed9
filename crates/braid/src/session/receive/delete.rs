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
pub fn extraneous(
    root: &Dir,
    manifest: &[FileEntry],
    filter: &Filter,
    max: usize,
) -> Result<Vec<Extra>> {
    let named: HashSet<&str> = manifest.iter().map(|e| e.path.as_str()).collect();
    let mut out = Vec::new();
    for d in manifest.iter().filter(|e| e.is_dir()) {
        let rel = Path::new(&d.path);
        // A directory the session did not make (a dry run) holds nothing.
        let Ok(dir) = root.dir(rel) else { continue };
        for (name, kind) in listing(&dir, root, rel)? {
            let path = rel.join(&name);
            if pathsafe::is_internal(&name.to_string_lossy())
                || path.to_str().is_some_and(|p| named.contains(p))
            {
                continue;
            }
            collect(root, &path, kind, filter, max, &mut out)?;
        }
    }
    Ok(out)
}

/// Adds `path` (and, for a directory, what lies below it, first) to `out`,
/// unless the filter protects it; returns whether it is to be removed.
fn collect(
    root: &Dir,
    path: &Path,
    kind: Kind,
    filter: &Filter,
    max: usize,
    out: &mut Vec<Extra>,
) -> Result<bool> {
    let dir = kind == Kind::Dir;
    if protected(filter, path, dir) {
        return Ok(false);
    }
    let mut empties = true;
    if dir {
        let d = root
            .dir(path)
            .map_err(|e| Error::io(format!("listing {}", root.shown(path).display()), e))?;
        for (name, kind) in listing(&d, root, path)? {
            let below = path.join(&name);
            // The staging directory is braid's: neither removed nor emptied.
            let removable = !pathsafe::is_internal(&name.to_string_lossy())
                && collect(root, &below, kind, filter, max, out)?;
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

fn listing(d: &Dir, root: &Dir, rel: &Path) -> Result<Vec<(OsString, Kind)>> {
    let mut l = d
        .entries()
        .map_err(|e| Error::io(format!("listing {}", root.shown(rel).display()), e))?;
    l.sort_by(|a, b| a.0.cmp(&b.0));
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
pub fn remove(root: &Dir, extras: &[Extra]) -> Vec<(PathBuf, std::io::Error)> {
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
    }
    failed
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
        let x = extraneous(&root, &manifest, &keep_logs, 100).unwrap();
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
        assert!(remove(&root, &x).is_empty());
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
        let x = extraneous(&root, &manifest, &keep_logs, 100).unwrap();
        assert_eq!(
            x,
            [Extra {
                path: "m/old/x".into(),
                dir: false
            }]
        );
        // An anchored pattern is tried at every depth: it protects, never exposes.
        let anchored = Filter::new(vec![Rule::new(false, "/old/x").unwrap()]).unwrap();
        let x = extraneous(&root, &manifest, &anchored, 100).unwrap();
        assert_eq!(x.len(), 1, "{x:?}");
        assert_eq!(x[0].path, Path::new("m/old/notes.log"));
        let e = extraneous(&root, &manifest, &Filter::default(), 2).unwrap_err();
        assert!(e.to_string().contains("more than 2"), "{e}");
    }
}
