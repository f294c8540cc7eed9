//! The kernel's lists of congestion controls.
//!
//! `tcp_available_congestion_control` lists what is registered;
//! `tcp_allowed_congestion_control` what unprivileged programs may choose.
//! Both are global, not per network namespace.

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

fn read_list(path: &str) -> Result<Vec<String>> {
    let text = fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
    Ok(text.split_whitespace().map(str::to_owned).collect())
}

/// The registered controls, in the kernel's order.
pub fn available_controls() -> Result<Vec<String>> {
    read_list(AVAILABLE)
}

/// The controls unprivileged programs may select.
pub fn allowed_controls() -> Result<Vec<String>> {
    read_list(ALLOWED)
}

/// `list` with `names` appended where missing, order kept.
pub(crate) fn with_names(list: &[String], names: &[&str]) -> Vec<String> {
    let mut out = list.to_vec();
    for n in names {
        if !out.iter().any(|x| x == n) {
            out.push((*n).to_owned());
        }
    }
    out
}

/// `list` without any of `names`.
pub(crate) fn without_names(list: &[String], names: &[&str]) -> Vec<String> {
    list.iter()
        .filter(|x| !names.contains(&x.as_str()))
        .cloned()
        .collect()
}

pub(crate) fn write_allowed(list: &[String]) -> Result<()> {
    // The kernel rejects the whole write if one name is not registered, so a
    // failed write leaves the previous list in place.
    fs::write(Path::new(ALLOWED), list.join(" ")).map_err(|e| Error::io("writing", ALLOWED, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn adding_keeps_order_and_does_not_duplicate() {
        let list = v("reno cubic braid_frac");
        assert_eq!(
            with_names(&list, &["braid_frac", "braid_tcpp"]),
            v("reno cubic braid_frac braid_tcpp")
        );
    }

    #[test]
    fn removing_leaves_the_others() {
        let list = v("reno braid_stcp cubic braid_tcpp");
        assert_eq!(
            without_names(&list, &["braid_stcp", "braid_tcpp", "braid_htcp"]),
            v("reno cubic")
        );
    }
}
