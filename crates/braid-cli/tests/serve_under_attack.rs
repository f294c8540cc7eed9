//! `braid serve` as a separate process against clients that misbehave: what
//! a flood of unauthenticated connections costs it, whether a normal client
//! still gets through, how it ends, and the descriptor limit. Loopback only;
//! every server and client here is a child of the test and is ended by it.

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use common::{braid, client, ok, serve};

fn status_kb(pid: u32, field: &str) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// CPU seconds a process has used.
fn cpu_seconds(pid: u32) -> f64 {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, 11 and 12 after the name.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks as f64 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

#[test]
fn a_flood_of_unauthenticated_connections_costs_little_and_a_client_gets_through() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(&root).unwrap();
    let srv = serve(
        &root,
        &["--handshake-timeout", "3", "--max-unauthenticated", "32"],
        None,
    );
    let started = Instant::now();
    // 60 frame headers announcing 16 MiB each, with nothing behind them.
    let mut flood: Vec<TcpStream> = (0..60)
        .map(|_| {
            let mut s = TcpStream::connect(&srv.addr).unwrap();
            s.write_all(&[1, 0, 0, 0, 1]).unwrap();
            s
        })
        .collect();
    // And 20 that send a byte every 300 ms, each read in time.
    let slow: Vec<_> = (0..20)
        .map(|_| {
            let addr = srv.addr.clone();
            thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let t = Instant::now();
                while s.write_all(&[0]).is_ok() && t.elapsed() < Duration::from_secs(20) {
                    thread::sleep(Duration::from_millis(300));
                }
                t.elapsed()
            })
        })
        .collect();
    let f = d.path().join("f");
    fs::write(&f, vec![7u8; 4 << 20]).unwrap();
    let dest = format!("{}:in/", srv.addr);
    let o = client(&["send", f.to_str().unwrap(), &dest], None);
    ok(&o);
    assert_eq!(fs::read(root.join("in/f")).unwrap().len(), 4 << 20);
    for t in slow {
        let held = t.join().unwrap();
        assert!(
            held < Duration::from_secs(8),
            "a trickling connection was held {held:?}"
        );
    }
    // Every flooding connection is closed by the deadline, told why or cut.
    for s in &mut flood {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    let peak_mb = status_kb(srv.child.id(), "VmHWM:") / 1024;
    eprintln!("measured: server peak RSS {peak_mb} MB under 80 attacking connections");
    assert!(peak_mb < 150, "the server's peak RSS reached {peak_mb} MB");
}

#[test]
fn past_the_connection_limit_the_server_refuses_without_spinning() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(&root).unwrap();
    let srv = serve(
        &root,
        &["--max-connections", "8", "--max-unauthenticated", "4"],
        Some(64),
    );
    let before = cpu_seconds(srv.child.id());
    let idle: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(&srv.addr).unwrap())
        .collect();
    thread::sleep(Duration::from_secs(2));
    let used = cpu_seconds(srv.child.id()) - before;
    assert!(
        used < 0.5,
        "the server used {used:.2} CPU s holding idle connections off"
    );
    let f = d.path().join("f");
    fs::write(&f, b"hello").unwrap();
    let dest = format!("{}:x/", srv.addr);
    ok(&client(&["send", f.to_str().unwrap(), &dest], None));
    drop(idle);
    assert_eq!(fs::read(root.join("x/f")).unwrap(), b"hello");
}

#[test]
fn ten_thousand_files_move_both_ways_under_a_descriptor_limit_of_1024() {
    let d = tempfile::tempdir().unwrap();
    let (root, src, back) = (
        d.path().join("root"),
        d.path().join("many"),
        d.path().join("back"),
    );
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&back).unwrap();
    for dir in 0..10 {
        fs::create_dir_all(src.join(format!("d{dir}"))).unwrap();
        for i in 0..1000 {
            fs::write(src.join(format!("d{dir}/f{i}")), format!("{dir}/{i}")).unwrap();
        }
    }
    let srv = serve(&root, &[], Some(1024));
    let dest = format!("{}:in/", srv.addr);
    let o = client(
        &["send", src.to_str().unwrap(), &dest, "-n", "4"],
        Some(1024),
    );
    ok(&o);
    let get = format!("{}:in/many", srv.addr);
    let o = client(
        &["get", &get, back.to_str().unwrap(), "-n", "4"],
        Some(1024),
    );
    ok(&o);
    for (dir, i) in [(0, 0), (9, 999), (4, 517)] {
        let want = format!("{dir}/{i}");
        assert_eq!(
            fs::read_to_string(root.join(format!("in/many/d{dir}/f{i}"))).unwrap(),
            want
        );
        assert_eq!(
            fs::read_to_string(back.join(format!("many/d{dir}/f{i}"))).unwrap(),
            want
        );
    }
    assert_eq!(fs::read_dir(back.join("many/d3")).unwrap().count(), 1000);
}

#[test]
fn ctrl_c_at_the_server_is_a_lost_connection_and_resume_finishes() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(&root).unwrap();
    let f = d.path().join("big");
    let data: Vec<u8> = (0..(40u32 << 20)).map(|i| (i / 4099) as u8).collect();
    fs::write(&f, &data).unwrap();
    let srv = serve(&root, &[], None);
    let dest = format!("{}:", srv.addr);
    let c = braid()
        .args([
            "send",
            f.to_str().unwrap(),
            &dest,
            "--ssh",
            "never",
            "--limit",
            "80mbit",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once megabytes have moved (the client's first progress line
    // says so): on a busy machine the session may take a while to start,
    // and a resume needs something kept to show it keeps it. The part file
    // is allocated whole at once, so its size says nothing.
    let mut c = c;
    let mut lines = BufReader::new(c.stderr.take().unwrap()).lines();
    let mut said = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said += &line;
        said.push('\n');
        if line
            .trim_start()
            .starts_with(|ch: char| ch.is_ascii_digit())
            && line.contains(" MB ")
        {
            break;
        }
    }
    unsafe { libc::kill(srv.child.id() as i32, libc::SIGINT) };
    for line in lines {
        said += &line.unwrap();
        said.push('\n');
    }
    let status = c.wait().unwrap();
    let err = said;
    assert_eq!(status.code(), Some(4), "{err}");
    assert!(err.contains("the peer stopped: interrupted"), "{err}");
    drop(srv);
    let srv = serve(&root, &[], None);
    let dest = format!("{}:", srv.addr);
    let o = client(
        &["send", f.to_str().unwrap(), &dest, "--resume", "--json"],
        None,
    );
    ok(&o);
    let summary = String::from_utf8_lossy(&o.stdout);
    let last = summary.lines().last().unwrap();
    let bytes: u64 = last
        .split("\"bytes\":")
        .nth(1)
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(
        bytes < data.len() as u64,
        "resume moved {bytes} of {}",
        data.len()
    );
    assert_eq!(fs::read(root.join("big")).unwrap(), data);
}

#[test]
fn paths_against_a_running_server_say_what_they_mean() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(&root).unwrap();
    let f = d.path().join("f");
    fs::write(&f, b"x").unwrap();
    let srv = serve(&root, &[], None);
    let o = client(
        &["send", f.to_str().unwrap(), &format!("{}:/abs", srv.addr)],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is absolute"));
    assert!(!root.join("abs").exists());
    ok(&client(
        &["send", f.to_str().unwrap(), &format!("{}:", srv.addr)],
        None,
    ));
    assert_eq!(fs::read(root.join("f")).unwrap(), b"x");
}
