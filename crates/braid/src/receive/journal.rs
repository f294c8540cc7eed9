//! The journal of a part file: which byte ranges are on disk, written once
//! the data they name is durable, so `--resume` moves only what is missing.
//! It lives in the staging directory and is replaced by rename, so a crash
//! leaves the old journal or the new one, never half of one.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use serde::{Deserialize, Serialize};

use super::staging::Names;
use crate::error::{Error, Result};

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
pub fn read(names: &Names, name: &str, size: u64, mtime_ns: i64) -> Option<Vec<(u64, u64)>> {
    let j: Journal = serde_json::from_slice(&fs::read(&names.journal).ok()?).ok()?;
    let part_len = fs::symlink_metadata(&names.part)
        .ok()
        .filter(|m| m.is_file())?
        .len();
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
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&names.journal_new)
        .and_then(|mut f| f.write_all(&body))
        .and_then(|_| fs::rename(&names.journal_new, &names.journal));
    written.map_err(|e| {
        let _ = fs::remove_file(&names.journal_new);
        Error::io(format!("writing {}", names.journal.display()), e)
    })
}

pub fn remove(names: &Names) {
    let _ = fs::remove_file(&names.journal);
}

#[cfg(test)]
mod tests {
    use super::super::staging;
    use super::*;

    #[test]
    fn a_journal_names_its_source_and_its_part_must_be_whole() {
        let d = tempfile::tempdir().unwrap();
        staging::ensure(d.path()).unwrap();
        let n = Names::new(d.path(), "f");
        staging::create_part(&n.part, 100).unwrap();
        write(&n, "f", 100, 7, &[(0, 40)]).unwrap();
        assert_eq!(read(&n, "f", 100, 7), Some(vec![(0, 40)]));
        assert_eq!(read(&n, "f", 100, 8), None, "another mtime: another source");
        assert_eq!(read(&n, "g", 100, 7), None);
        assert!(!n.journal_new.exists());
        fs::remove_file(&n.part).unwrap();
        assert_eq!(read(&n, "f", 100, 7), None, "no part, nothing to resume");
    }
}
