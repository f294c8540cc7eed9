//! What the CLI's loopback tests share: a `braid serve` child on a free port,
//! and clients run to their end. Every process here is a child of the test and
//! is ended by it.
#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread;

pub const TOKEN: &str = "loopback-test-token";

/// A child's output as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub struct Server {
    pub child: Child,
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Limits the descriptors of a child before it runs (soft and hard).
pub fn fd_limit(cmd: &mut Command, n: u64) {
    // SAFETY: setrlimit is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

pub fn braid() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_braid"));
    c.env("BRAID_TOKEN", TOKEN);
    c
}

pub fn serve(root: &Path, extra: &[&str], fds: Option<u64>) -> Server {
    let mut cmd = braid();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(root)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(n) = fds {
        fd_limit(&mut cmd, n);
    }
    let mut child = cmd.spawn().expect("braid serve starts");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "braid serve ended");
        if let Some(a) = line.trim().strip_prefix("braid serve: listening on ") {
            break a.to_owned();
        }
    };
    // Keep reading its stderr so it never blocks on a full pipe.
    thread::spawn(move || for _ in err.lines() {});
    Server { child, addr }
}

pub fn client(args: &[&str], fds: Option<u64>) -> Output {
    let mut cmd = braid();
    cmd.args(args).args(["--ssh", "never"]);
    if let Some(n) = fds {
        fd_limit(&mut cmd, n);
    }
    cmd.output().expect("braid runs")
}

pub fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "rc {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
}
