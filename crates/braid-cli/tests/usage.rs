//! Command lines braid refuses before it connects anywhere: the error names the
//! problem and the exit code is the usage code (2).

use std::process::Command;

fn braid(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .env("BRAID_TOKEN", "usage-test-token")
        .output()
        .expect("running braid");
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
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["send", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("SOURCE... HOST[:PORT]:DEST"), "{help}");
    assert!(!help.contains("default: \"\""), "{help}");
}
