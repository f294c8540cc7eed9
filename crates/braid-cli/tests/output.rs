//! What a person reads: where stderr is not a terminal, one progress line per
//! interval and no more; with -v a line per stream at each interval and a
//! line per entry sent; -v refused beside --json and -q; with --json a record
//! for every entry, skipped or sent, and for a failure. Loopback only.

mod common;

use std::fs;

use common::{client, ok, serve, text};

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

#[test]
fn with_json_a_skipped_entry_and_a_failure_are_records() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    let src = d.path().join("src");
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.txt"), b"a").unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(src.join("sock")).unwrap();
    let srv = serve(&root, &[], None);
    let dest = format!("{}:in/", srv.addr);
    let records = |o: &std::process::Output| -> Vec<serde_json::Value> {
        text(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };

    let o = client(&["send", src.to_str().unwrap(), &dest, "--json"], None);
    ok(&o);
    let skipped: Vec<_> = records(&o)
        .into_iter()
        .filter(|r| r["type"] == "skipped")
        .collect();
    assert_eq!(skipped.len(), 1, "{}", text(&o.stdout));
    assert!(skipped[0]["path"].as_str().unwrap().ends_with("src/sock"));
    assert_eq!(skipped[0]["reason"], "not a regular file");
    assert!(text(&o.stderr).is_empty(), "{}", text(&o.stderr));
    // An item record for each entry, as --itemize: the directory and the file sent.
    let items: Vec<(String, String, u64)> = records(&o)
        .into_iter()
        .filter(|r| r["type"] == "item")
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_owned();
            (s("path"), s("action"), r["bytes"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        items,
        [
            ("in/src".to_owned(), "dir".to_owned(), 0),
            ("in/src/a.txt".to_owned(), "send".to_owned(), 1)
        ],
        "{}",
        text(&o.stdout)
    );

    let gone = d.path().join("no-such-file");
    let o = client(&["send", gone.to_str().unwrap(), &dest, "--json"], None);
    assert_eq!(o.status.code(), Some(3));
    let failure = records(&o);
    assert_eq!(failure.len(), 1, "{}", text(&o.stdout));
    assert_eq!(failure[0]["type"], "error");
    assert_eq!(failure[0]["exit_code"], 3);
    assert!(failure[0]["message"]
        .as_str()
        .unwrap()
        .contains("no-such-file"));
    assert!(
        text(&o.stderr).contains("no-such-file"),
        "said on stderr too"
    );
}
