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

#[test]
fn owners_travel_only_where_asked_and_the_receiver_may_give_them() {
    use std::os::unix::fs::{chown, lchown, MetadataExt, PermissionsExt};
    let d = tempfile::tempdir().unwrap();
    let (root, proj) = (d.path().join("root"), d.path().join("proj"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(proj.join("sub")).unwrap();
    let p = proj.to_str().unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Only root gives files owners: both ends say so before anything moves.
        let o = common::braid()
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--keep-owners",
                "--root",
            ])
            .arg(&root)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("runs as root"),
            "{}",
            text(&o.stderr)
        );
        let srv = serve(&root, &[], None);
        let local = d.path().join("here");
        let o = client(
            &[
                "get",
                &format!("{}:x", srv.addr),
                local.to_str().unwrap(),
                "-o",
            ],
            None,
        );
        assert!(
            text(&o.stderr).contains("runs as root"),
            "{}",
            text(&o.stderr)
        );
        assert!(!local.exists());
        return;
    }
    fs::write(proj.join("tool"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(proj.join("tool"), fs::Permissions::from_mode(0o6755)).unwrap();
    chown(proj.join("tool"), Some(1234), Some(5678)).unwrap();
    // chown clears setuid: set it again, as a packaged tool would have it.
    fs::set_permissions(proj.join("tool"), fs::Permissions::from_mode(0o6755)).unwrap();
    chown(proj.join("sub"), Some(1111), Some(2222)).unwrap();
    std::os::unix::fs::symlink("tool", proj.join("ln")).unwrap();
    lchown(proj.join("ln"), Some(3333), Some(4444)).unwrap();
    let ids = |p: &std::path::Path| {
        let m = p
            .symlink_metadata()
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        (m.uid(), m.gid(), m.mode() & 0o7777)
    };

    // A server not started to keep owners refuses, and nothing lands.
    let plain = serve(&root, &[], None);
    let o = client(
        &["send", p, &format!("{}:a/", plain.addr), "-o", "-g"],
        None,
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--keep-owners"),
        "{}",
        text(&o.stderr)
    );
    assert!(!root.join("a/proj/tool").exists());
    // Without --owner and --group, the receiver's ids, and no setuid or setgid.
    ok(&client(&["send", p, &format!("{}:b/", plain.addr)], None));
    assert_eq!(ids(&root.join("b/proj/tool")), (0, 0, 0o755));

    let keeps = serve(&root, &["--keep-owners"], None);
    ok(&client(
        &["send", p, &format!("{}:c/", keeps.addr), "-o", "-g"],
        None,
    ));
    assert_eq!(ids(&root.join("c/proj/tool")), (1234, 5678, 0o6755));
    assert_eq!(ids(&root.join("c/proj/sub")).0, 1111);
    assert_eq!(ids(&root.join("c/proj/sub")).1, 2222);
    let ln = ids(&root.join("c/proj/ln"));
    assert_eq!(
        (ln.0, ln.1),
        (3333, 4444),
        "the link itself, not what it names"
    );
    // The group alone: the setgid bit with it, not the setuid.
    ok(&client(
        &["send", p, &format!("{}:d/", keeps.addr), "-g"],
        None,
    ));
    assert_eq!(ids(&root.join("d/proj/tool")), (0, 5678, 0o2755));

    // A get gives what it receives the server's owners here.
    let here = d.path().join("here");
    fs::create_dir(&here).unwrap();
    let o = client(
        &[
            "get",
            &format!("{}:c/proj", plain.addr),
            here.to_str().unwrap(),
            "--owner",
            "--group",
        ],
        None,
    );
    ok(&o);
    assert_eq!(ids(&here.join("proj/tool")), (1234, 5678, 0o6755));
    assert_eq!(ids(&here.join("proj/sub")).0, 1111);
}

#[test]
fn hard_links_move_once_and_land_as_links_with_h() {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    let (root, proj) = (d.path().join("root"), d.path().join("proj"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(proj.join("sub")).unwrap();
    let data = vec![7u8; 300_000];
    fs::write(proj.join("a"), &data).unwrap();
    fs::hard_link(proj.join("a"), proj.join("b")).unwrap();
    fs::hard_link(proj.join("a"), proj.join("sub/c")).unwrap();
    fs::write(proj.join("d"), &data).unwrap();
    let srv = serve(&root, &[], None);
    let p = proj.to_str().unwrap();
    let ino = |p: &std::path::Path| fs::metadata(p).unwrap().ino();

    let o = client(
        &["send", p, &format!("{}:h/", srv.addr), "-H", "--itemize"],
        None,
    );
    ok(&o);
    let out = text(&o.stdout);
    assert!(
        out.contains("hardlink h/proj/b") && out.contains("hardlink h/proj/sub/c"),
        "{out}"
    );
    assert!(out.contains("send   h/proj/a"), "{out}");
    let h = root.join("h/proj");
    assert_eq!(ino(&h.join("a")), ino(&h.join("b")));
    assert_eq!(ino(&h.join("a")), ino(&h.join("sub/c")));
    assert_ne!(ino(&h.join("a")), ino(&h.join("d")));
    assert_eq!(fs::metadata(h.join("a")).unwrap().nlink(), 3);
    assert_eq!(fs::read(h.join("sub/c")).unwrap(), data);
    // Again: the first name is held whole, its other names are linked anew
    // in place of what is there.
    ok(&client(
        &["send", p, &format!("{}:h/", srv.addr), "-H", "--resume"],
        None,
    ));
    assert_eq!(ino(&h.join("a")), ino(&h.join("sub/c")));
    assert_eq!(fs::metadata(h.join("a")).unwrap().nlink(), 3);
    for staging in [h.join(".braid-partial"), h.join("sub/.braid-partial")] {
        assert!(!staging.exists(), "{} left behind", staging.display());
    }
    let o = client(
        &["send", p, &format!("{}:dry/", srv.addr), "-H", "--dry-run"],
        None,
    );
    ok(&o);
    assert!(
        text(&o.stdout).contains("would hardlink dry/proj/b"),
        "{}",
        text(&o.stdout)
    );

    // Without -H every name is a file of its own, as before.
    ok(&client(&["send", p, &format!("{}:n/", srv.addr)], None));
    let n = root.join("n/proj");
    assert_ne!(ino(&n.join("a")), ino(&n.join("b")));
    assert_eq!(fs::read(n.join("b")).unwrap(), data);

    // A get with -H: the server lists the other names as links.
    let here = d.path().join("here");
    fs::create_dir(&here).unwrap();
    ok(&client(
        &[
            "get",
            &format!("{}:h/proj", srv.addr),
            here.to_str().unwrap(),
            "-H",
        ],
        None,
    ));
    let g = here.join("proj");
    assert_eq!(ino(&g.join("a")), ino(&g.join("b")));
    assert_eq!(ino(&g.join("a")), ino(&g.join("sub/c")));
    assert_eq!(fs::read(g.join("b")).unwrap(), data);
}
