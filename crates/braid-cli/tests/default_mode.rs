//! The default mode, auto, where the sending end has no braid controls loaded
//! (an empty --pin-dir stands for such a machine): it runs `parallel` of as
//! many streams instead and says why, at a sending client and at a sending
//! server alike; auto asked for by name stops with the reason instead, and a
//! --cc the default would ignore is refused. Loopback only.

mod common;

use std::fs;
use std::path::PathBuf;
use std::process::Output;

use tempfile::TempDir;

use common::{client, ok, serve};

/// A fresh directory holding a server's root, an empty pin directory (no
/// controls there) and a place to fetch into.
fn dirs() -> (TempDir, PathBuf, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let [root, none, back] = ["root", "no-controls", "back"].map(|n| d.path().join(n));
    for p in [&root, &none, &back] {
        fs::create_dir_all(p).unwrap();
    }
    (d, root, none, back)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `summary` line of a `--json` run and whether an event told of the fallback.
fn json_summary(o: &Output) -> (String, bool) {
    let out = text(&o.stdout);
    let summary = out
        .lines()
        .find(|l| l.contains("\"type\":\"summary\""))
        .unwrap_or_else(|| panic!("no summary in {out}"))
        .to_owned();
    let told = out
        .lines()
        .any(|l| l.contains("\"type\":\"event\"") && l.contains("\"event\":\"mode_fallback\""));
    (summary, told)
}

#[test]
fn left_at_the_default_a_sending_client_without_controls_runs_parallel_and_says_why() {
    let (d, root, none, _) = dirs();
    let srv = serve(&root, &[], None);
    let pin = none.to_str().unwrap();
    let o = client(&["bench", &srv.addr, "-t", "0.5", "--pin-dir", pin], None);
    ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains("the default mode, auto, cannot run here")
            && err.contains("braid cc install")
            && err.contains("sending as parallel-4"),
        "{err}"
    );
    assert!(
        text(&o.stdout).starts_with("bench parallel-4 (sender)"),
        "{}",
        text(&o.stdout)
    );
    let o = client(
        &[
            "bench",
            &srv.addr,
            "-t",
            "0.5",
            "-n",
            "3",
            "--json",
            "--pin-dir",
            pin,
        ],
        None,
    );
    ok(&o);
    let (summary, told) = json_summary(&o);
    assert!(told, "no mode_fallback event: {}", text(&o.stdout));
    assert!(summary.contains("\"mode\":\"parallel-3\""), "{summary}");
    // A file moves as well, and arrives whole.
    let f = d.path().join("f");
    fs::write(&f, vec![5u8; 3 << 20]).unwrap();
    let dest = format!("{}:in", srv.addr);
    ok(&client(
        &["send", f.to_str().unwrap(), &dest, "--pin-dir", pin],
        None,
    ));
    assert_eq!(fs::read(root.join("in/f")).unwrap(), vec![5u8; 3 << 20]);
}

#[test]
fn left_at_the_default_a_sending_server_without_controls_runs_parallel_and_tells_the_client() {
    let (_d, root, none, back) = dirs();
    fs::write(root.join("g"), vec![9u8; 2 << 20]).unwrap();
    let srv = serve(&root, &["--pin-dir", none.to_str().unwrap()], None);
    let o = client(&["bench", &srv.addr, "-t", "0.5", "-R", "-n", "2"], None);
    ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains("the server: the default mode, auto, cannot run here"),
        "{err}"
    );
    assert!(
        text(&o.stdout).starts_with("bench parallel-2 (receiver)"),
        "{}",
        text(&o.stdout)
    );
    let get = format!("{}:g", srv.addr);
    let o = client(&["get", &get, back.to_str().unwrap(), "--json"], None);
    ok(&o);
    let (summary, told) = json_summary(&o);
    assert!(told, "no mode_fallback event: {}", text(&o.stdout));
    assert!(summary.contains("\"mode\":\"parallel-4\""), "{summary}");
    assert_eq!(fs::read(back.join("g")).unwrap(), vec![9u8; 2 << 20]);
    // Asked for by name, auto stops with the reason rather than run as another mode.
    let o = client(
        &["bench", &srv.addr, "-t", "0.5", "-R", "--mode", "auto"],
        None,
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("needs braid's controls"), "{err}");
}

#[test]
fn auto_asked_for_by_name_at_a_client_without_controls_stops_with_the_reason() {
    let (_d, root, none, _) = dirs();
    let srv = serve(&root, &[], None);
    let o = client(
        &[
            "bench",
            &srv.addr,
            "-t",
            "0.5",
            "--mode",
            "auto",
            "--pin-dir",
            none.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("needs braid's controls") && err.contains("braid cc install"),
        "{err}"
    );
}
