//! braid in a pipeline: a reader that goes away early (`| head`) ends braid
//! as it ends `cat`, by SIGPIPE, with no panic and no hang. Loopback only.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{braid, serve};

/// Waits for a child up to a deadline; a child still running then is killed
/// and the test fails, since braid must not hang on a closed pipe.
fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("waiting for braid") {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("braid still running {limit:?} after its reader went away");
        }
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn json_into_head_ends_by_sigpipe_without_a_panic() {
    let root = tempfile::tempdir().unwrap();
    let srv = serve(root.path(), &[], None);
    let mut child = braid()
        .args(["bench", "-t", "5", "-i", "0.2", "--json", "--ssh", "never"])
        .arg(&srv.addr)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("braid bench starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with('{'), "a JSON record first: {first:?}");
    drop(out); // as `head -1` does after its line
    let mut err = child.stderr.take().unwrap();
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    let mut text = String::new();
    err.read_to_string(&mut text).unwrap();
    assert!(!text.contains("panicked"), "{text}");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {text}");
}

#[test]
fn a_failure_reported_into_a_closed_stderr_ends_braid() {
    // Nothing listens on port 1: the session fails and braid says so on
    // stderr, whose reader is gone before braid starts (closed after the
    // spawn, a fast failure could be written into the pipe's buffer first).
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, which this test then owns.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let mut child = braid()
        .args(["bench", "-t", "1", "--ssh", "never", "127.0.0.1:1"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(writer))
        .spawn()
        .expect("braid bench starts");
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
}
