//! The default mode, auto, where the sending end has no braid controls loaded
//! (an empty --pin-dir stands for such a machine): it runs as it does with
//! them, streams of the host's default control (or --cc) that its steer
//! counts and paces, at a sending client and at a sending server alike; a mode
//! that does need the controls stops with the reason. Loopback only.

mod common;

use std::fs;
use std::path::PathBuf;
use std::process::Output;

use tempfile::TempDir;

use common::{client, ok, serve, text};

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

/// The host's default congestion control, which auto's streams run where CUBIC cannot be set.
fn host_default() -> String {
    fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .expect("the host's default control")
        .trim()
        .to_owned()
}

/// The `summary` line of a `--json` run, and each stream's control in it.
fn json_summary(o: &Output) -> (String, Vec<String>) {
    let out = text(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.contains("\"type\":\"summary\""))
        .unwrap_or_else(|| panic!("no summary in {out}"))
        .to_owned();
    let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON summary");
    let ccs = v["streams"]
        .as_array()
        .expect("the summary's streams")
        .iter()
        .map(|s| s["cc"].as_str().expect("a stream's control").to_owned())
        .collect();
    (line, ccs)
}

#[test]
fn left_at_the_default_a_sending_client_without_controls_runs_auto_on_the_hosts_control() {
    let (d, root, none, _) = dirs();
    let srv = serve(&root, &[], None);
    let pin = none.to_str().unwrap();
    let o = client(
        &["bench", &srv.addr, "-t", "1", "--json", "--pin-dir", pin],
        None,
    );
    ok(&o);
    let (summary, ccs) = json_summary(&o);
    // Up to 32 streams unless told; it starts with a few and opens more as the path rewards them.
    assert!(summary.contains("\"mode\":\"auto-32\""), "{summary}");
    assert!(!ccs.is_empty() && ccs.len() <= 32, "{ccs:?}");
    // CUBIC wherever this process may set it, else the host's default.
    let want = braid::session::auto_control().unwrap_or_else(host_default);
    assert!(ccs.iter().all(|c| *c == want), "{ccs:?}");
    assert!(!text(&o.stderr).contains("cannot run here"));
    // --cc names the streams' control, and -n the most.
    let o = client(
        &[
            "bench",
            &srv.addr,
            "-t",
            "0.5",
            "-n",
            "3",
            "--cc",
            "reno",
            "--json",
            "--pin-dir",
            pin,
        ],
        None,
    );
    ok(&o);
    let (summary, ccs) = json_summary(&o);
    assert!(summary.contains("\"mode\":\"auto-3\""), "{summary}");
    assert!(ccs.iter().all(|c| c == "reno") && ccs.len() <= 3, "{ccs:?}");
    // A file moves as well, and arrives whole.
    let f = d.path().join("f");
    fs::write(&f, vec![5u8; 3 << 20]).unwrap();
    let dest = format!("{}:in/", srv.addr);
    ok(&client(
        &["send", f.to_str().unwrap(), &dest, "--pin-dir", pin],
        None,
    ));
    assert_eq!(fs::read(root.join("in/f")).unwrap(), vec![5u8; 3 << 20]);
}

#[test]
fn left_at_the_default_a_sending_server_without_controls_runs_auto_on_the_hosts_control() {
    let (_d, root, none, back) = dirs();
    fs::write(root.join("g"), vec![9u8; 2 << 20]).unwrap();
    let srv = serve(&root, &["--pin-dir", none.to_str().unwrap()], None);
    let o = client(
        &["bench", &srv.addr, "-t", "0.5", "-R", "-n", "2", "--json"],
        None,
    );
    ok(&o);
    let (summary, ccs) = json_summary(&o);
    assert!(summary.contains("\"mode\":\"auto-2\""), "{summary}");
    assert!(ccs.iter().all(|c| *c == host_default()), "{ccs:?}");
    // A sending server takes a fair share of none (it yields entirely) as the client asks.
    let o = client(
        &[
            "bench",
            &srv.addr,
            "-t",
            "0.5",
            "-R",
            "-n",
            "2",
            "--fair-share",
            "0",
            "--json",
        ],
        None,
    );
    ok(&o);
    assert!(json_summary(&o).0.contains("\"mode\":\"auto-2\""));
    let get = format!("{}:g", srv.addr);
    let o = client(&["get", &get, back.to_str().unwrap(), "--json"], None);
    ok(&o);
    assert_eq!(fs::read(back.join("g")).unwrap(), vec![9u8; 2 << 20]);
    // A mode that needs braid's controls, asked of that server, stops with the reason.
    let o = client(
        &["bench", &srv.addr, "-t", "0.5", "-R", "--mode", "tcpp"],
        None,
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("needs braid's controls"), "{err}");
}

#[test]
fn a_mode_that_needs_the_controls_at_a_client_without_them_stops_with_the_reason() {
    let (_d, root, none, _) = dirs();
    let srv = serve(&root, &[], None);
    let o = client(
        &[
            "bench",
            &srv.addr,
            "-t",
            "0.5",
            "--mode",
            "tcpp",
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
