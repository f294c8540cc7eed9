//! rsync's options on the command line: --include and --exclude in the order
//! given (the first rule that matches decides), a dry run that says what
//! would happen in lines and in `item` records and writes nothing, and a
//! bad pattern refused with its reason. Loopback only.

mod common;

use std::fs;

use common::{client, ok, serve, text};

#[test]
fn rules_apply_in_the_order_given_and_a_dry_run_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let (root, proj) = (d.path().join("root"), d.path().join("proj"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&proj).unwrap();
    for f in ["a.rs", "b.o", "keep.o"] {
        fs::write(proj.join(f), f).unwrap();
    }
    let srv = serve(&root, &[], None);
    let dest = format!("{}:in/", srv.addr);
    let p = proj.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut a = vec!["send", p, &dest];
        a.extend_from_slice(args);
        client(&a, None)
    };

    let o = run(&["--include", "keep.o", "--exclude", "*.o", "--dry-run"]);
    ok(&o);
    let out = text(&o.stdout);
    assert!(out.contains("would send   in/proj/a.rs"), "{out}");
    assert!(out.contains("would send   in/proj/keep.o"), "{out}");
    assert!(!out.contains("b.o"), "{out}");
    assert!(out.contains("dry run: 2 would be sent"), "{out}");
    assert!(!root.join("in").exists(), "a dry run writes nothing");

    // The same rules the other way round: the exclusion matches keep.o first.
    let o = run(&[
        "--exclude",
        "*.o",
        "--include",
        "keep.o",
        "--dry-run",
        "--json",
    ]);
    ok(&o);
    let out = text(&o.stdout);
    let items: Vec<serde_json::Value> = out
        .lines()
        .filter(|l| l.contains("\"type\":\"item\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sent: Vec<&str> = items
        .iter()
        .filter(|i| i["action"] == "send")
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ["in/proj/a.rs"], "{out}");

    let o = run(&["--include", "keep.o", "--exclude", "*.o", "--itemize"]);
    ok(&o);
    assert!(root.join("in/proj/keep.o").is_file() && !root.join("in/proj/b.o").exists());
    let out = text(&o.stdout);
    assert!(out.contains("2 sent, 0 resumed, 0 skipped"), "{out}");
    assert!(
        out.contains("send   in/proj/keep.o"),
        "--itemize says each entry's fate: {out}"
    );

    // Quiet: nothing but errors; again with --resume, everything is skipped.
    let o = run(&["--include", "keep.o", "--exclude", "*.o", "--resume", "-q"]);
    ok(&o);
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        text(&o.stdout)
    );

    let o = run(&["--exclude", "[ab"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--exclude [ab"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_server_that_refuses_links_says_how_to_send_what_they_name() {
    let d = tempfile::tempdir().unwrap();
    let (root, proj) = (d.path().join("root"), d.path().join("proj"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&proj).unwrap();
    fs::write(proj.join("a.txt"), "a").unwrap();
    std::os::unix::fs::symlink("a.txt", proj.join("to-a")).unwrap();
    let srv = serve(&root, &["--refuse-links"], None);
    let dest = format!("{}:in/", srv.addr);
    let p = proj.to_str().unwrap();

    let o = client(&["send", p, &dest], None);
    assert_eq!(o.status.code(), Some(7), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("in/proj/to-a is a symbolic link") && err.contains("-L"),
        "{err}"
    );
    assert!(
        !root.join("in/proj/a.txt").exists(),
        "nothing of the send lands"
    );

    // With -L the link's target travels as a file.
    let o = client(&["send", p, &dest, "-L"], None);
    ok(&o);
    let got = root.join("in/proj/to-a");
    assert!(!got.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(got).unwrap(), "a");
}
