//! What a manifest must pass before anything of it is created: every path
//! allowed, named once, short enough and below the root without a link on
//! the way, and room for it on the filesystem. A refusal here is this end's
//! own (`Error::Refused`, with the wire's code for the peer).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use braid_wire::FileEntry;

use super::staging;
use crate::error::{Code, Error, Result};
use crate::files::beneath::{Dir, Kind};
use crate::files::pathsafe;

pub(super) fn forbidden(message: String) -> Error {
    Error::refused(Code::ForbiddenPath, message)
}

/// The directory a path of the manifest lies in, relative to the root.
pub(super) fn parent_of(parts: &[&str]) -> PathBuf {
    parts[..parts.len() - 1].iter().collect()
}

/// Checks every directory on the way to each entry, once each: existing
/// ones must be directories and not links. Returns which exist, by their
/// paths relative to the root.
pub(super) fn check_dirs(root: &Dir, manifest: &[FileEntry]) -> Result<HashMap<PathBuf, bool>> {
    let mut known: HashMap<PathBuf, bool> = HashMap::new();
    for e in manifest {
        let parts: Vec<&str> = e.path.split('/').collect();
        let upto = if e.is_dir() {
            parts.len()
        } else {
            parts.len() - 1
        };
        let mut at = PathBuf::new();
        let mut parent_exists = true;
        for p in &parts[..upto] {
            at.push(p);
            if let Some(&exists) = known.get(&at) {
                parent_exists = exists;
                continue;
            }
            let shown = root.shown(&at);
            let exists = parent_exists
                && match root.meta(&at) {
                    Ok(Some(m)) if m.kind == Kind::Link => {
                        return Err(forbidden(format!(
                            "{} is a symbolic link; braid does not write through links",
                            shown.display()
                        )))
                    }
                    Ok(Some(m)) if m.kind == Kind::Dir => true,
                    Ok(Some(_)) => {
                        return Err(Error::refused(
                            Code::BadRequest,
                            format!("{} exists and is not a directory", shown.display()),
                        ))
                    }
                    Ok(None) => false,
                    Err(e) => return Err(Error::io(format!("reading {}", shown.display()), e)),
                };
            known.insert(at.clone(), exists);
            parent_exists = exists;
        }
    }
    Ok(known)
}

/// The manifest's own consistency: each path once, allowed, short enough,
/// and no file that is also the directory of another entry.
pub(super) fn check_paths(root: &Dir, manifest: &[FileEntry]) -> Result<()> {
    let root_len = root.path().as_os_str().len();
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
                    braid_wire::cut(&e.path, 60),
                    root.path().display(),
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

/// Bytes free for an unprivileged writer on the root's filesystem.
pub(super) fn free_space(root: &Dir) -> Result<u64> {
    let st = rustix::fs::fstatvfs(root).map_err(|e| {
        Error::io(
            format!("reading the free space of {}", root.path().display()),
            e.into(),
        )
    })?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}
