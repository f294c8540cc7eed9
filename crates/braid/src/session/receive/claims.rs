//! Which destinations live sessions of this process are writing. A second
//! session that names one of them is refused (409) before it touches
//! anything, so two writers never share a part file and a success always
//! means that session's data is in place.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Code, Error, Result};

/// A destination as claims hold it: a digest of its path (16 bytes, where a
/// peer's long names would cost hundreds each).
type Key = [u8; 16];

fn key(p: &Path) -> Key {
    use std::os::unix::ffi::OsStrExt;
    let h = blake3::hash(p.as_os_str().as_bytes());
    h.as_bytes()[..16].try_into().expect("16 of 32 bytes")
}

#[derive(Default)]
pub struct Claims {
    held: Mutex<HashSet<Key>>,
}

/// The destinations one session holds, given back when it is dropped.
pub struct Claim {
    claims: Arc<Claims>,
    keys: Vec<Key>,
}

impl Claims {
    pub fn new() -> Arc<Claims> {
        Arc::default()
    }

    /// Claims every path or none: the first one held elsewhere is the refusal.
    pub fn claim(
        self: &Arc<Self>,
        paths: Vec<PathBuf>,
        shown: impl Fn(&Path) -> String,
    ) -> Result<Claim> {
        let keys: Vec<Key> = paths.iter().map(|p| key(p)).collect();
        let mut held = self.held.lock().unwrap();
        if let Some(p) = paths
            .iter()
            .zip(&keys)
            .find(|(_, k)| held.contains(*k))
            .map(|(p, _)| p)
        {
            return Err(Error::refused(
                Code::Busy,
                format!(
                    "{} is being received by another session; try again when it ends",
                    shown(p)
                ),
            ));
        }
        held.extend(keys.iter().copied());
        Ok(Claim {
            claims: Arc::clone(self),
            keys,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut held = self.claims.held.lock().unwrap();
        for k in &self.keys {
            held.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_held_by_one_session_at_a_time() {
        let c = Claims::new();
        let show = |p: &Path| p.display().to_string();
        let a = c.claim(vec!["/r/x".into(), "/r/y".into()], show).unwrap();
        let e = c
            .claim(vec!["/r/z".into(), "/r/y".into()], show)
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                Error::Refused {
                    code: Code::Busy,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("/r/y"));
        // Nothing of a refused claim is kept: z is free.
        let z = c.claim(vec!["/r/z".into()], show).unwrap();
        drop(a);
        let _y = c.claim(vec!["/r/y".into()], show).unwrap();
        drop(z);
    }
}
