//! Paths that cross the wire: relative, '/'-separated, and never able to
//! climb out of the directory they are resolved against.

/// The components of a manifest path, or why it is refused.
pub fn components(path: &str) -> Result<Vec<&str>, String> {
    if path.is_empty() {
        return Err("an empty path".into());
    }
    if path.starts_with('/') {
        return Err(format!("{path:?} is absolute"));
    }
    if path.contains('\0') {
        return Err(format!("{path:?} contains a NUL byte"));
    }
    let parts: Vec<&str> = path.split('/').collect();
    for p in &parts {
        match *p {
            "" => return Err(format!("{path:?} has an empty component")),
            "." | ".." => return Err(format!("{path:?} has a {p:?} component")),
            _ if p.len() > 255 => {
                return Err(format!("{path:?} has a component longer than 255 bytes"))
            }
            _ => {}
        }
    }
    Ok(parts)
}

/// The one name braid keeps for itself: the staging directory it receives
/// into (part files and journals), which a manifest may not name.
pub const STAGING_DIR: &str = ".braid-partial";

pub fn is_internal(name: &str) -> bool {
    name == STAGING_DIR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused_with_the_reason() {
        for (p, why) in [
            ("", "empty path"),
            ("/etc/passwd", "absolute"),
            ("../x", "\"..\" component"),
            ("a/../../x", "\"..\" component"),
            ("a//b", "empty component"),
            ("a/./b", "\".\" component"),
            ("a/", "empty component"),
            ("a\0b", "NUL"),
        ] {
            let e = components(p).unwrap_err();
            assert!(e.contains(why), "{p:?}: {e}");
        }
        assert_eq!(
            components("dir/sub/file.bin").unwrap(),
            vec!["dir", "sub", "file.bin"]
        );
        assert_eq!(components("..hidden").unwrap(), vec!["..hidden"]);
    }
}
