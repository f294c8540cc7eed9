//! Which local files a transfer moves, named as they will be at the far end.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use braid_wire::{FileEntry, MODE_DIR};

use crate::error::{Code, Error, Result};
use crate::pathsafe;

/// A file to send: its manifest entry and where it is here.
#[derive(Clone, Debug)]
pub struct Source {
    pub entry: FileEntry,
    pub local: PathBuf,
}

/// Lists `sources` (files and directories, recursively) with manifest paths
/// under `prefix` ("" for none): a file keeps its name, a directory its name
/// and everything below it, itself included as an entry (so an empty one
/// arrives too). Symbolic links below a directory are skipped (and
/// reported), so a tree cannot smuggle in what it points to; so is braid's
/// own staging directory. Every file is opened once here, so one that
/// cannot be read is an error before any data moves.
pub fn list(sources: &[PathBuf], prefix: &str) -> Result<(Vec<Source>, Vec<String>)> {
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
        if meta.is_dir() {
            out.push(source(src, &top, &meta));
            walk(src, &top, &mut out, &mut skipped)?;
        } else if meta.is_file() {
            readable(src)?;
            out.push(source(src, &top, &meta));
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

fn source(local: &Path, path: &str, meta: &fs::Metadata) -> Source {
    let dir = meta.is_dir();
    Source {
        entry: FileEntry {
            path: path.to_owned(),
            size: if dir { 0 } else { meta.len() },
            mode: (meta.permissions().mode() & 0o7777) | if dir { MODE_DIR } else { 0 },
            mtime_ns: mtime_ns(meta),
        },
        local: local.to_owned(),
    }
}

fn readable(p: &Path) -> Result<()> {
    fs::File::open(p)
        .map(drop)
        .map_err(|e| Error::io(format!("cannot read {}", p.display()), e))
}

/// A file's modification time in nanoseconds since the epoch, as manifests carry it.
pub fn mtime_ns(meta: &fs::Metadata) -> i64 {
    meta.mtime() * 1_000_000_000 + meta.mtime_nsec()
}

/// BLAKE3 of a file's content, and how many bytes it had.
pub fn blake3_file(path: &Path) -> std::io::Result<([u8; 32], u64)> {
    let mut f = fs::File::open(path)?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = std::io::Read::read(&mut f, &mut buf)?;
        if k == 0 {
            return Ok((*h.finalize().as_bytes(), n));
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
}

fn walk(dir: &Path, path: &str, out: &mut Vec<Source>, skipped: &mut Vec<String>) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let local = e.path();
        let Some(name) = e.file_name().to_str().map(str::to_owned) else {
            skipped.push(format!("{}: not UTF-8", local.display()));
            continue;
        };
        let meta = fs::symlink_metadata(&local)
            .map_err(|e| Error::io(format!("reading {}", local.display()), e))?;
        let p = join(path, &name);
        if meta.file_type().is_symlink() {
            skipped.push(format!("{}: a symbolic link", local.display()));
        } else if pathsafe::is_internal(&name) {
            skipped.push(format!(
                "{}: braid's staging directory (part files of an unfinished transfer)",
                local.display()
            ));
        } else if meta.is_dir() {
            out.push(source(&local, &p, &meta));
            walk(&local, &p, out, skipped)?;
        } else if meta.is_file() {
            readable(&local)?;
            out.push(source(&local, &p, &meta));
        } else {
            skipped.push(format!("{}: not a regular file", local.display()));
        }
    }
    Ok(())
}

/// Server side of `get`: resolves requested paths below `root`, refusing
/// anything that would leave it, symbolic links on the way included. `.`
/// (or an empty path) is the root itself: its contents, named as below it.
pub fn resolve_request(root: &Path, requested: &[String]) -> Result<Vec<Source>> {
    let mut locals = Vec::new();
    let mut out = Vec::new();
    for r in requested {
        if r.is_empty() || r == "." {
            let mut skipped = Vec::new();
            walk(root, "", &mut out, &mut skipped)?;
            continue;
        }
        let parts =
            pathsafe::components(r).map_err(|e| forbidden(format!("refusing {r:?}: {e}")))?;
        let mut at = root.to_path_buf();
        for p in &parts {
            at.push(p);
            let meta = fs::symlink_metadata(&at).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    Error::refused(Code::NotFound, format!("{r} does not exist"))
                }
                _ => Error::io(format!("reading {}", at.display()), e),
            })?;
            if meta.file_type().is_symlink() {
                return Err(forbidden(format!(
                    "refusing {r:?}: it goes through a symbolic link"
                )));
            }
        }
        locals.push(at);
    }
    out.extend(list(&locals, "")?.0);
    let mut seen = std::collections::HashSet::new();
    if let Some(s) = out.iter().find(|s| !seen.insert(&s.entry.path)) {
        return Err(Error::refused(
            Code::BadRequest,
            format!("{} is asked for twice", s.entry.path),
        ));
    }
    Ok(out)
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
        let (files, skipped) = list(std::slice::from_ref(&top), "./dest/").unwrap();
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
        assert!(skipped[0].contains("symbolic link"));
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
        let (files, skipped) = list(std::slice::from_ref(&top), "").unwrap();
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
        assert!(skipped[0].contains("staging directory"), "{skipped:?}");
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
        fs::set_permissions(&f, fs::Permissions::from_mode(0o000)).unwrap();
        let e = list(&[f], "").unwrap_err();
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
            resolve_request(&root, &["pub/f".into()]).unwrap()[0]
                .entry
                .path,
            "f"
        );
        let all: Vec<String> = resolve_request(&root, &[".".into()])
            .unwrap()
            .into_iter()
            .map(|s| s.entry.path)
            .collect();
        assert_eq!(
            all,
            ["pub", "pub/f"],
            "the link is left out, the root is the top"
        );
        for bad in ["../secret", "/etc/passwd", "pub/escape"] {
            let e = resolve_request(&root, &[bad.into()]).unwrap_err();
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
            resolve_request(&root, &["nope".into()]),
            Err(Error::Refused {
                code: Code::NotFound,
                ..
            })
        ));
    }
}
