//! What a manifest must pass before anything of it is created: every path
//! allowed, named once, short enough and below the root without a link on
//! the way, and room for it on the filesystem. A refusal here is this end's
//! own (`Error::Refused`, with the wire's code for the peer).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use braid_wire::FileEntry;

use super::staging;
use crate::error::{Code, Error, Result};
use crate::pathsafe;

pub(super) fn forbidden(message: String) -> Error {
    Error::refused(Code::ForbiddenPath, message)
}

/// The directory a path of the manifest lies in, below `root`.
pub(super) fn parent_of(root: &Path, parts: &[&str]) -> PathBuf {
    let mut at = root.to_path_buf();
    at.extend(&parts[..parts.len() - 1]);
    at
}

/// Checks every directory on the way to each entry, once each: existing
/// ones must be directories and not links. Returns which exist.
pub(super) fn check_dirs(root: &Path, manifest: &[FileEntry]) -> Result<HashMap<PathBuf, bool>> {
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
pub(super) fn check_paths(root: &Path, manifest: &[FileEntry]) -> Result<()> {
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
                    braid_wire::cut(&e.path, 60),
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
pub(super) fn free_space(path: &Path) -> Result<u64> {
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
