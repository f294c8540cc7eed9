//! Starting the far end over ssh when no `braid serve` runs there, as bbcp
//! does: `ssh [USER@]HOST braid serve --once` on an ephemeral port, with a
//! fresh token written to its stdin (never on a command line, where `ps`
//! would show it). The client reads the port from the server's "listening
//! on" line, then connects to HOST:PORT as to any server. ssh carries only
//! this start-up and the far end's messages; data goes over braid's own
//! streams.
//!
//! The server's root is `/` for an absolute remote path and the login's home
//! for a relative one (where ssh starts), so `user@host:dir` means what scp
//! and rsync make of it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::session::Token;

/// How to reach the far end over ssh.
#[derive(Clone, Debug)]
pub struct Ssh {
    /// The ssh command and its options, as `rsync -e` takes them: "ssh -p 2222 -i key".
    pub command: Vec<String>,
    /// braid on the far end.
    pub remote_braid: String,
    /// How long the far end waits for this client before it gives up.
    pub wait: Duration,
    /// The client asks for an unsealed session: the far end allows it.
    pub allow_plain: bool,
    /// The ports the far end may listen on (a firewall's opening), else any.
    pub port_range: Option<PortRange>,
}

/// Ports a server may listen on, both ends included (bbcp's -Z,
/// GLOBUS_TCP_PORT_RANGE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub low: u16,
    pub high: u16,
}

impl std::str::FromStr for PortRange {
    type Err = String;

    /// `LOW-HIGH` (or `LOW,HIGH`, as GLOBUS_TCP_PORT_RANGE writes it).
    fn from_str(s: &str) -> std::result::Result<PortRange, String> {
        let (a, b) = s
            .split_once(['-', ','])
            .ok_or_else(|| format!("{s:?} is not a port range (LOW-HIGH, e.g. 50000-50100)"))?;
        let port = |p: &str| {
            p.trim()
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("{p:?} in {s:?} is not a port (1-65535)"))
        };
        let (low, high) = (port(a)?, port(b)?);
        if low > high {
            return Err(format!("{s:?} ends before it starts"));
        }
        Ok(PortRange { low, high })
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

/// The address a client reached this host at over ssh: the third word of
/// `$SSH_CONNECTION` ("client-ip client-port server-ip server-port"), so a
/// server started over ssh listens there and not on every address it has.
pub fn reached_addr(ssh_connection: &str) -> std::result::Result<std::net::IpAddr, String> {
    let words: Vec<&str> = ssh_connection.split_whitespace().collect();
    match words.as_slice() {
        [_, _, server, _] => server
            .parse()
            .map_err(|_| format!("$SSH_CONNECTION names {server:?}, which is no address")),
        _ => Err(format!(
            "$SSH_CONNECTION ({ssh_connection:?}) is not \"client-ip client-port server-ip server-port\""
        )),
    }
}

/// The server's root and the path below it for a remote path (see the module doc).
pub fn root_and_path(path: &str) -> (String, String) {
    match path.strip_prefix('/') {
        Some(rest) => {
            let rest = rest.trim_start_matches('/');
            (
                "/".into(),
                if rest.is_empty() {
                    ".".into()
                } else {
                    rest.into()
                },
            )
        }
        None => (".".into(), path.into()),
    }
}

/// One word for a POSIX shell: ssh hands the far end a command line, not a list.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,".contains(&b))
    {
        return s.into();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The local command that starts the far end.
pub fn serve_argv(ssh: &Ssh, login: &str, root: &str) -> Vec<String> {
    let mut remote = [
        shell_quote(&ssh.remote_braid),
        "serve --once --listen-reached --token-file -".into(),
        format!("--wait {}", ssh.wait.as_secs().max(1)),
        format!("--root {}", shell_quote(root)),
    ]
    .join(" ");
    if let Some(r) = ssh.port_range {
        remote += &format!(" --port-range {r}");
    }
    if ssh.allow_plain {
        remote += " --allow-plain";
    }
    let mut argv = ssh.command.clone();
    argv.extend([login.to_owned(), "--".into(), remote]);
    argv
}

/// What to do when the far end's shell did not find braid: name it with
/// `--remote-braid`, since an ssh command's PATH is often not a login's.
fn not_found_hint(said: &str) -> &'static str {
    if said.contains("command not found") || said.contains("No such file or directory") {
        "; braid is not on the far end's PATH for ssh commands: install it there or name it \
         with --remote-braid /path/to/braid"
    } else {
        ""
    }
}

/// The port in `braid serve: listening on 0.0.0.0:PORT`.
pub fn listening_port(line: &str) -> Option<u16> {
    let addr = line.trim().strip_prefix("braid serve: listening on ")?;
    addr.parse::<std::net::SocketAddr>().ok().map(|a| a.port())
}

/// A far end started over ssh: its port, and the ssh process to wait for.
pub struct Started {
    child: Child,
    pub port: u16,
    relay: JoinHandle<()>,
    login: String,
}

/// Starts `braid serve --once` on `login` with `root` as its root; returns once it listens.
pub fn start(ssh: &Ssh, login: &str, root: &str, token: &Token) -> Result<Started> {
    let argv = serve_argv(ssh, login, root);
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::Usage("an empty ssh command".into()))?;
    let what = format!("starting braid serve on {login} over ssh");
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::connect(format!("{what} ({program})"), e))?;
    {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        // Closing stdin ends the token file on the far end.
        let written = stdin.write_all(format!("{}\n", token.as_str()).as_bytes());
        drop(stdin);
        if let Err(e) = written {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::connect(what, e));
        }
    }
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = mpsc::channel::<Result<u16, String>>();
    let relay = thread::spawn(move || {
        let mut told = false;
        let mut said = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            if !told {
                if let Some(port) = listening_port(&line) {
                    told = true;
                    let _ = tx.send(Ok(port));
                    continue;
                }
                said.push(line.clone());
            }
            if told {
                crate::errln!("braid: far end: {line}");
            }
        }
        if !told {
            let _ = tx.send(Err(said.join("; ")));
        }
    });
    let deadline = Instant::now() + ssh.wait;
    let port = loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok(port)) => break port,
            Ok(Err(said)) => {
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                let _ = relay.join();
                return Err(Error::connect(
                    what,
                    std::io::Error::other(format!(
                        "ssh ended ({status}) before braid serve listened: {}{}",
                        if said.is_empty() {
                            "it said nothing"
                        } else {
                            &said
                        },
                        not_found_hint(&said)
                    )),
                ));
            }
            Err(_) if Instant::now() < deadline => continue,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::connect(
                    what,
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no listening port within {} s", ssh.wait.as_secs()),
                    ),
                ));
            }
        }
    };
    Ok(Started {
        child,
        port,
        relay,
        login: login.into(),
    })
}

impl Started {
    /// Waits for the far end to finish its one session (it exits when the session ends).
    pub fn finish(mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    let _ = self.relay.join();
                    return if status.success() {
                        Ok(())
                    } else {
                        Err(Error::Remote {
                            code: crate::error::Code::Io as u16,
                            message: format!("braid serve on {} ended: {status}", self.login),
                        })
                    };
                }
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(50)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Ok(());
                }
            }
        }
    }

    /// Ends ssh now: the session failed and the far end's result no longer matters.
    pub fn abandon(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_paths_pick_the_root() {
        assert_eq!(root_and_path("/srv/data"), ("/".into(), "srv/data".into()));
        assert_eq!(root_and_path("//srv"), ("/".into(), "srv".into()));
        assert_eq!(root_and_path("/"), ("/".into(), ".".into()));
        assert_eq!(root_and_path("incoming"), (".".into(), "incoming".into()));
    }

    #[test]
    fn words_are_quoted_for_the_far_shell() {
        assert_eq!(shell_quote("/usr/bin/braid"), "/usr/bin/braid");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$(rm -rf ~)"), "'$(rm -rf ~)'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn the_far_command_line() {
        let ssh = Ssh {
            command: vec!["ssh".into(), "-p".into(), "2222".into()],
            remote_braid: "/opt/braid dir/braid".into(),
            wait: Duration::from_secs(60),
            allow_plain: false,
            port_range: None,
        };
        assert_eq!(
            serve_argv(&ssh, "ann@h", "/"),
            vec![
                "ssh",
                "-p",
                "2222",
                "ann@h",
                "--",
                "'/opt/braid dir/braid' serve --once --listen-reached --token-file - --wait 60 --root /"
            ]
        );
        let ranged = Ssh {
            port_range: Some("50000-50010".parse().unwrap()),
            ..ssh
        };
        assert!(serve_argv(&ranged, "h", ".")
            .last()
            .unwrap()
            .ends_with("--root . --port-range 50000-50010"));
    }

    #[test]
    fn port_ranges_and_the_reached_address() {
        assert_eq!(
            "50000-50100".parse::<PortRange>(),
            Ok(PortRange {
                low: 50000,
                high: 50100
            })
        );
        assert_eq!(
            "7,9".parse::<PortRange>().map(|r| (r.low, r.high)),
            Ok((7, 9))
        );
        for bad in ["50100-50000", "0-10", "x-9", "5000", "1-70000"] {
            assert!(bad.parse::<PortRange>().is_err(), "{bad}");
        }
        assert_eq!(
            reached_addr("10.0.0.1 51234 10.0.0.2 22"),
            Ok("10.0.0.2".parse().unwrap())
        );
        assert_eq!(reached_addr("::1 51234 ::1 22"), Ok("::1".parse().unwrap()));
        assert!(reached_addr("").is_err() && reached_addr("a b c d").is_err());
    }

    #[test]
    fn the_listening_line() {
        assert_eq!(
            listening_port("braid serve: listening on 0.0.0.0:40123\n"),
            Some(40123)
        );
        assert_eq!(listening_port("braid serve: listening on [::]:7"), Some(7));
        assert_eq!(listening_port("braid serve: token abc"), None);
        assert!(not_found_hint("bash: line 1: braid: command not found").contains("--remote-braid"));
        assert!(
            not_found_hint("sh: 1: /opt/braid: No such file or directory")
                .contains("--remote-braid")
        );
        assert_eq!(not_found_hint("Permission denied (publickey)."), "");
    }
}
