//! What a person reads: where stderr is not a terminal, one progress line per
//! interval and no more; with -v a line per stream at each interval and a
//! line per entry sent; -v refused beside --json and -q. Loopback only.

mod common;

use std::fs;

use common::{client, ok, serve};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn verbose_adds_the_streams_and_the_entries_to_the_progress() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(&root).unwrap();
    let srv = serve(&root, &[], None);
    let bench = |extra: &[&str]| {
        let mut a = vec![
            "bench", &srv.addr, "-t", "1", "-i", "0.25", "--mode", "parallel", "-n", "2",
        ];
        a.extend_from_slice(extra);
        client(&a, None)
    };

    let o = bench(&[]);
    ok(&o);
    let err = text(&o.stderr);
    let progress = err.lines().filter(|l| l.contains(" s ")).count();
    assert!(progress >= 2, "a progress line per interval: {err}");
    assert!(!err.contains("stream   0:"), "streams only with -v: {err}");

    let o = bench(&["-v"]);
    ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains("stream   0:") && err.contains("stream   1:"),
        "-v shows each stream: {err}"
    );

    for clash in ["--json", "-q"] {
        let o = bench(&["-v", clash]);
        assert_eq!(o.status.code(), Some(2), "-v with {clash}");
        assert!(
            text(&o.stderr).contains("cannot be used with"),
            "{}",
            text(&o.stderr)
        );
    }

    // -v lists every entry of a send, as --itemize does.
    let src = d.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("one.txt"), b"one").unwrap();
    let o = client(
        &[
            "send",
            src.to_str().unwrap(),
            &format!("{}:in/", srv.addr),
            "-v",
        ],
        None,
    );
    ok(&o);
    let out = text(&o.stdout);
    assert!(out.contains("send   in/src/one.txt"), "{out}");
}
