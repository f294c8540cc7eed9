//! The journal of a part file: which byte ranges are on disk, written once
//! the data they name is durable, so `--resume` moves only what is missing.
//! It lives in the staging directory and is replaced by rename, so a crash
//! leaves the old journal or the new one, never half of one.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use super::staging::Names;
use crate::error::{Error, Result};
use crate::files::beneath::{Access, Dir, Kind};

/// A journal is a few ranges per block held; one larger than this is not braid's.
const MAX_JOURNAL: u64 = 256 << 20;

const VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
struct Journal {
    version: u32,
    /// The destination's file name: a check on the hashed staging name.
    name: String,
    size: u64,
    mtime_ns: i64,
    ranges: Vec<(u64, u64)>,
}

/// The ranges a journal records for this exact source (name, size, mtime),
/// if there is one and its part file is still whole.
pub fn read(
    root: &Dir,
    names: &Names,
    name: &str,
    size: u64,
    mtime_ns: i64,
) -> Option<Vec<(u64, u64)>> {
    let mut body = Vec::new();
    root.file(&names.journal, Access::Read)
        .ok()?
        .take(MAX_JOURNAL)
        .read_to_end(&mut body)
        .ok()?;
    let j: Journal = serde_json::from_slice(&body).ok()?;
    let part_len = root
        .meta(&names.part)
        .ok()
        .flatten()
        .filter(|m| m.kind == Kind::File)?
        .size;
    (j.version == VERSION
        && j.name == name
        && j.size == size
        && j.mtime_ns == mtime_ns
        && part_len == size)
        .then_some(j.ranges)
        .filter(|r| r.iter().all(|&(a, b)| a <= b && b <= size))
}

/// Records `ranges`; the caller made their data durable first.
pub fn write(
    root: &Dir,
    names: &Names,
    name: &str,
    size: u64,
    mtime_ns: i64,
    ranges: &[(u64, u64)],
) -> Result<()> {
    let j = Journal {
        version: VERSION,
        name: name.to_owned(),
        size,
        mtime_ns,
        ranges: ranges.to_vec(),
    };
    let body = serde_json::to_vec(&j).expect("a journal serialises");
    let written = root
        .file(&names.journal_new, Access::Create)
        .and_then(|mut f| f.write_all(&body))
        .and_then(|_| root.rename(&names.journal_new, &names.journal));
    written.map_err(|e| {
        let _ = root.remove_file(&names.journal_new);
        Error::io(
            format!("writing {}", root.shown(&names.journal).display()),
            e,
        )
    })
}

pub fn remove(root: &Dir, names: &Names) {
    let _ = root.remove_file(&names.journal);
}

#[cfg(test)]
mod tests {
    use super::super::staging;
    use super::*;
    use std::path::Path;

    #[test]
    fn a_journal_names_its_source_and_its_part_must_be_whole() {
        let d = tempfile::tempdir().unwrap();
        let root = Dir::open(d.path()).unwrap();
        staging::ensure(&root, Path::new("")).unwrap();
        let n = Names::new(Path::new(""), "f");
        staging::create_part(&root, &n.part, 100).unwrap();
        write(&root, &n, "f", 100, 7, &[(0, 40)]).unwrap();
        assert_eq!(read(&root, &n, "f", 100, 7), Some(vec![(0, 40)]));
        assert_eq!(
            read(&root, &n, "f", 100, 8),
            None,
            "another mtime: another source"
        );
        assert_eq!(read(&root, &n, "g", 100, 7), None);
        assert!(!d.path().join(&n.journal_new).exists());
        root.remove_file(&n.part).unwrap();
        assert_eq!(
            read(&root, &n, "f", 100, 7),
            None,
            "no part, nothing to resume"
        );
    }
}
