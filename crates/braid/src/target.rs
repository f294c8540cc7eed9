//! `[USER@]HOST[:PORT]` and `[USER@]HOST[:PORT]:PATH` as the command line
//! writes them; an IPv6 host goes in brackets: `[::1]:5420:dir`. USER and HOST
//! are also the ssh login used when the far end has to be started over ssh.

/// The port `braid serve` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 5420;

/// A parsed remote: "host:port" to connect to, and the path after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    /// "host:port" to connect to.
    pub addr: String,
    pub path: Option<String>,
    /// `[user@]host` for ssh.
    pub login: String,
}

/// Parses `HOST`, `HOST:PORT`, `HOST:PATH`, `HOST:PORT:PATH` (a PATH that is
/// all digits needs the port written out: `host:5420:2024`).
pub fn parse(s: &str, with_path: bool) -> Result<Remote, String> {
    let (user, s) = match s.split_once('@') {
        Some((u, rest)) if !u.is_empty() && !u.contains([':', '/', '[']) => (Some(u), rest),
        Some(("", _)) => return Err(format!("{s:?}: an empty user before '@'")),
        _ => (None, s),
    };
    let (host, rest) = if let Some(inner) = s.strip_prefix('[') {
        let end = inner
            .find(']')
            .ok_or_else(|| format!("{s:?}: an IPv6 address needs a closing ']'"))?;
        (
            &inner[..end],
            inner[end + 1..]
                .strip_prefix(':')
                .unwrap_or(&inner[end + 1..]),
        )
    } else {
        match s.split_once(':') {
            Some((h, r)) => (h, r),
            None => (s, ""),
        }
    };
    if host.is_empty() {
        return Err(format!("{s:?}: no host"));
    }
    // The login goes to ssh as a word before `--`: one that begins with '-'
    // would be read as an option (`-oProxyCommand=...`).
    if host.starts_with('-') || user.is_some_and(|u| u.starts_with('-')) {
        return Err(format!("{s:?}: a host or user may not begin with '-'"));
    }
    let (port, path) = match rest.split_once(':') {
        Some((p, path)) => (Some(p), Some(path)),
        None if rest.is_empty() => (None, None),
        None if rest.bytes().all(|b| b.is_ascii_digit()) => (Some(rest), None),
        None => (None, Some(rest)),
    };
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| format!("{s:?}: {p:?} is not a port"))?,
        None => DEFAULT_PORT,
    };
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let login = match user {
        Some(u) => format!("{u}@{host}"),
        None => host.to_owned(),
    };
    // A trailing ':' names the top: `host:5420:` as `host:5420:.`.
    let path = match path {
        Some("") => Some("."),
        None if with_path && s.ends_with(':') => Some("."),
        p => p,
    };
    match (with_path, path) {
        (true, None) => Err(format!("{s:?}: no path after the host (HOST[:PORT]:PATH)")),
        (false, Some(p)) if !p.is_empty() => {
            Err(format!("{s:?}: a path where only HOST[:PORT] belongs"))
        }
        (true, Some(p)) => Ok(Remote {
            addr,
            path: Some(p.to_owned()),
            login,
        }),
        (false, _) => Ok(Remote {
            addr,
            path: None,
            login,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(addr: &str, path: Option<&str>) -> Remote {
        let host = addr.rsplit_once(':').unwrap().0;
        Remote {
            addr: addr.into(),
            path: path.map(Into::into),
            login: host.trim_start_matches('[').trim_end_matches(']').into(),
        }
    }

    #[test]
    fn a_login_that_ssh_would_take_for_an_option_is_refused() {
        for bad in ["-oProxyCommand=x:dir", "-h:dir", "-u@h:dir"] {
            let e = parse(bad, true).unwrap_err();
            assert!(e.contains("may not begin with '-'"), "{bad}: {e}");
        }
    }

    #[test]
    fn hosts_ports_and_paths() {
        assert_eq!(parse("h", false).unwrap(), r("h:5420", None));
        assert_eq!(parse("h:7000", false).unwrap(), r("h:7000", None));
        assert_eq!(parse("h:dir/x", true).unwrap(), r("h:5420", Some("dir/x")));
        assert_eq!(parse("h:7000:dir", true).unwrap(), r("h:7000", Some("dir")));
        assert_eq!(
            parse("[::1]:7000:d", true).unwrap(),
            r("[::1]:7000", Some("d"))
        );
        assert_eq!(parse("[::1]", false).unwrap(), r("[::1]:5420", None));
        assert_eq!(
            parse("10.0.0.1:.", true).unwrap(),
            r("10.0.0.1:5420", Some("."))
        );
        // A trailing ':' is the top, as '.' is.
        assert_eq!(parse("h:7000:", true).unwrap(), r("h:7000", Some(".")));
        assert_eq!(parse("h:", true).unwrap(), r("h:5420", Some(".")));
    }

    #[test]
    fn users_make_the_ssh_login() {
        let t = parse("ann@h:7000:dir", true).unwrap();
        assert_eq!((t.addr.as_str(), t.login.as_str()), ("h:7000", "ann@h"));
        assert_eq!(t.path.as_deref(), Some("dir"));
        let t = parse("ann@[::1]:/abs", true).unwrap();
        assert_eq!(
            (t.addr.as_str(), t.login.as_str()),
            ("[::1]:5420", "ann@::1")
        );
        assert_eq!(t.path.as_deref(), Some("/abs"));
        // An '@' in the path is not a user.
        let t = parse("h:dir/a@b", true).unwrap();
        assert_eq!(
            (t.login.as_str(), t.path.as_deref()),
            ("h", Some("dir/a@b"))
        );
        assert!(parse("@h:x", true).unwrap_err().contains("empty user"));
    }

    #[test]
    fn mistakes_are_named() {
        assert!(parse("h", true).unwrap_err().contains("no path"));
        assert!(parse(":x", true).unwrap_err().contains("no host"));
        assert!(parse("h:99999:x", true).unwrap_err().contains("not a port"));
        assert!(parse("[::1:5", false).unwrap_err().contains("closing"));
        assert!(parse("h:dir", false).unwrap_err().contains("only HOST"));
    }
}
