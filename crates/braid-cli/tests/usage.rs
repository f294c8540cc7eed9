//! Command lines braid refuses before it connects anywhere: the error names the
//! problem and the exit code is the usage code (2).

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .env("BRAID_TOKEN", "usage-test-token")
        .output()
        .expect("running braid")
}

fn braid(args: &[&str]) -> (i32, String) {
    let out = run(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn falcon_is_refused_where_the_client_does_not_send() {
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();
    // Port 1 on loopback: nothing listens, so reaching it would fail differently.
    let (code, err) = braid(&["get", "--mode", "falcon", "127.0.0.1:1:x", dir]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--mode falcon") && err.contains("not get"),
        "{err}"
    );
    let (code, err) = braid(&["bench", "--mode", "falcon", "--reverse", "127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not bench --reverse"), "{err}");
}

#[test]
fn a_control_this_kernel_lacks_is_refused_before_anything_is_reached() {
    // The default mode, auto, runs --cc's streams: a name the kernel lacks stops here.
    let (code, err) = braid(&["bench", "--cc", "nosuchcc", "127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("\"nosuchcc\" is not among this kernel's") && !err.contains("ssh"),
        "{err}"
    );
}

#[test]
fn a_rate_in_tcs_ambiguous_bytes_is_refused_with_both_readings() {
    // tc's "mbps" is megabytes per second; every report of braid's is megabits.
    let (code, err) = braid(&["bench", "--limit", "10mbps", "127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ambiguous") && err.contains("10mbit") && err.contains("10MB/s"),
        "{err}"
    );
}

#[test]
fn serve_asks_for_its_root_rather_than_serving_the_current_directory() {
    let (code, err) = braid(&["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--root"), "{err}");
}

#[test]
fn usage_names_sources_and_the_destination() {
    let out = run(&["send", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("SOURCE... HOST[:PORT]:DEST"), "{help}");
    assert!(!help.contains("default: \"\""), "{help}");
}

#[test]
fn completions_and_man_pages_cover_every_command() {
    let out = run(&["completions", "bash"]);
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("_braid") && script.contains("--fair-share"),
        "{script}"
    );
    let dir = tempfile::tempdir().unwrap();
    let man1 = dir.path().join("man1");
    let out = run(&["manpages", man1.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for page in [
        "braid.1",
        "braid-send.1",
        "braid-get.1",
        "braid-serve.1",
        "braid-cc-install.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join("man1").join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page}");
    }
    let send = std::fs::read_to_string(dir.path().join("man1/braid-send.1")).unwrap();
    assert!(
        send.contains("resume"),
        "braid-send.1 documents its options"
    );
}

#[test]
fn a_fair_share_is_none_or_one_flows_worth_at_least() {
    // Port 1 on loopback: nothing listens, so a share that passed would fail differently.
    let (code, err) = braid(&["bench", "--fair-share", "0.5", "127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fair share 0.5") && err.contains("0 (yield entirely"),
        "{err}"
    );
    let (code, err) = braid(&["bench", "--fair-share", "some", "127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a number of flows"), "{err}");
    // 0 passes the command line: what stops it is the address nobody listens on.
    let (code, err) = braid(&[
        "bench",
        "--fair-share",
        "0",
        "--ssh",
        "never",
        "127.0.0.1:1",
    ]);
    assert_ne!(code, 2, "{err}");
    assert!(!err.contains("fair share"), "{err}");
}
