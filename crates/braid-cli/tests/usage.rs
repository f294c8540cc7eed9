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
