//! Whole sessions over loopback: a server in this process, the client API
//! against it, files compared by BLAKE3.

use std::fs;
use std::io::Write;
use std::net::TcpStream;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use braid::cancel::Cancel;
use braid::error::Error;
use braid::proto::steer::StreamControl;
use braid::proto::steer::{Looks, Script, Steer, Steering, StreamView};
use braid::session::client::{self, Config};
use braid::session::conn::Conn;
use braid::session::server;
use braid::session::{self, Agreed, SocketOptions, Token};
use braid::telemetry::Output;
use braid_wire::seal::Channel;
use braid_wire::{FileEntry, Kind, Message, Mode, SessionParams, FLAG_RESUME};

mod common;
use common::TOKEN;

fn serve(root: &Path) -> String {
    serve_on(root, "127.0.0.1:0")
}

fn serve_on(root: &Path, listen: &str) -> String {
    serve_with(root, listen, server::Limits::default())
}

fn serve_with(root: &Path, listen: &str, limits: server::Limits) -> String {
    common::serve_with(root, listen, limits, false)
}

fn params(kind: Kind, streams: u16) -> SessionParams {
    SessionParams {
        kind,
        mode: if streams == 1 {
            Mode::Single
        } else {
            Mode::Parallel
        },
        streams,
        cc: String::new(),
        frac_cwnd: 100,
        strength_milli: 1000,
        duration_ms: 500,
        block_size: 64 << 10,
        flags: 0,
        limit_bps: 0,
    }
}

fn config(addr: &str, p: SessionParams, token: &str) -> Config {
    Config {
        target: addr.into(),
        token: Token::new(token).unwrap(),
        params: p,
        sock: SocketOptions::default(),
        pin_dir: braid_cc::DEFAULT_PIN_DIR.into(),
        output: Output::Quiet,
        interval: Duration::from_millis(200),
        limit_bps: None,
        cancel: Cancel::new(),
        steer: None,
        plain: false,
        sync: Default::default(),
    }
}

fn b3(p: &Path) -> blake3::Hash {
    blake3::hash(&fs::read(p).unwrap())
}

/// Deterministic pseudo-random bytes.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A tree with empty, one-byte, odd-sized, sparse and many small files.
fn make_tree(top: &Path) -> Vec<PathBuf> {
    fs::create_dir_all(top.join("deep/er/est")).unwrap();
    fs::write(top.join("empty"), b"").unwrap();
    fs::write(top.join("one"), b"x").unwrap();
    fs::write(top.join("odd.bin"), noise(1_000_003, 1)).unwrap();
    fs::write(top.join("deep/er/est/block_edge"), noise(3 * 65536, 2)).unwrap();
    let sparse = fs::File::create(top.join("sparse")).unwrap();
    sparse.set_len(9_000_000).unwrap();
    sparse.write_all_at(b"island", 4_500_000).unwrap();
    for i in 0..200 {
        fs::write(
            top.join(format!("deep/small{i:03}")),
            noise(i * 37, i as u64 + 3),
        )
        .unwrap();
    }
    let mut files = Vec::new();
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out)
            } else {
                out.push(p)
            }
        }
    }
    walk(top, &mut files);
    files
}

fn assert_same_tree(src: &Path, dst: &Path) {
    let mut n = 0;
    fn walk(src: &Path, dst: &Path, n: &mut usize) {
        for e in fs::read_dir(src).unwrap() {
            let p = e.unwrap().path();
            let q = dst.join(p.file_name().unwrap());
            if p.is_dir() {
                walk(&p, &q, n);
            } else {
                assert_eq!(b3(&p), b3(&q), "{} differs", q.display());
                *n += 1;
            }
        }
    }
    walk(src, dst, &mut n);
    assert!(n > 200);
}

#[test]
fn send_then_get_a_tree_in_single_and_parallel_mode() {
    let d = tempfile::tempdir().unwrap();
    let (root, src, back) = (
        d.path().join("root"),
        d.path().join("tree"),
        d.path().join("back"),
    );
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&back).unwrap();
    make_tree(&src);
    let addr = serve(&root);
    for streams in [1, 4] {
        let dest = format!("in{streams}");
        let s = client::send(
            &config(&addr, params(Kind::Send, streams), TOKEN),
            std::slice::from_ref(&src),
            &dest,
        )
        .unwrap();
        assert_same_tree(&src, &root.join(&dest).join("tree"));
        assert_eq!(s.files, 205);
        assert_eq!(s.peer_bytes, Some(s.bytes));
        let s = client::get(
            &config(&addr, params(Kind::Get, streams), TOKEN),
            std::slice::from_ref(&dest),
            &back,
        )
        .unwrap();
        assert_same_tree(&src, &back.join(&dest).join("tree"));
        assert_eq!(s.files, 205);
    }
    // Nothing temporary is left behind on either side.
    let leftovers: Vec<_> = walkdir(&root)
        .into_iter()
        .chain(walkdir(&back))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.contains("braid-")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Every file and directory below `d`.
fn walkdir(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        }
        out.push(p)
    }
    out
}

#[test]
fn resume_skips_published_files_and_moves_nothing_twice() {
    let d = tempfile::tempdir().unwrap();
    let (root, src) = (d.path().join("root"), d.path().join("f.bin"));
    fs::create_dir_all(&root).unwrap();
    fs::write(&src, noise(2_000_000, 9)).unwrap();
    let addr = serve(&root);
    let mut p = params(Kind::Send, 2);
    p.flags = FLAG_RESUME;
    let first = client::send(
        &config(&addr, p.clone(), TOKEN),
        std::slice::from_ref(&src),
        "",
    )
    .unwrap();
    assert_eq!(first.bytes, 2_000_000);
    let again = client::send(&config(&addr, p, TOKEN), std::slice::from_ref(&src), "").unwrap();
    assert_eq!(again.bytes, 0, "a verified file is not sent again");
    assert_eq!(b3(&src), b3(&root.join("f.bin")));
}

#[test]
fn a_file_crosses_ipv6_with_the_address_written_as_the_command_line_does() {
    let d = tempfile::tempdir().unwrap();
    let (root, src) = (d.path().join("root"), d.path().join("six.bin"));
    fs::create_dir_all(&root).unwrap();
    fs::write(&src, noise(1_500_001, 6)).unwrap();
    let addr = serve_on(&root, "[::1]:0");
    let port = addr.rsplit_once(':').unwrap().1;
    let target = braid::target::parse(&format!("[::1]:{port}:in/"), true).unwrap();
    assert_eq!(target.addr, format!("[::1]:{port}"));
    let s = client::send(
        &config(&target.addr, params(Kind::Send, 3), TOKEN),
        std::slice::from_ref(&src),
        target.path.as_deref().unwrap(),
    )
    .unwrap();
    assert_eq!(s.bytes, 1_500_001);
    assert_eq!(b3(&src), b3(&root.join("in/six.bin")));
}

#[test]
fn a_bench_counts_the_same_bytes_at_both_ends() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    let s = client::bench(&config(&addr, params(Kind::Bench, 3), TOKEN)).unwrap();
    assert!(s.bytes > 0);
    assert_eq!(s.peer_bytes, Some(s.bytes));
    assert_eq!(s.streams.len(), 3);
    assert!(s
        .streams
        .iter()
        .all(|st| st.bytes > 0 && st.connections == 1));
    let mut p = params(Kind::Bench, 2);
    p.flags = braid_wire::FLAG_REVERSE;
    let r = client::bench(&config(&addr, p, TOKEN)).unwrap();
    assert_eq!(r.role, "receiver");
    assert_eq!(r.peer_bytes, Some(r.bytes));
}

/// The receiving end's streams stamp their reads and tell the sender the
/// bottleneck they show, whichever end sends (loopback has no bottleneck of
/// its own: that a word arrives is what is checked, not its value).
#[test]
fn the_receivers_word_on_the_bottleneck_reaches_the_sender() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    for flags in [0, braid_wire::FLAG_REVERSE] {
        let mut p = params(Kind::Bench, 2);
        p.duration_ms = 2500;
        p.flags = flags;
        let s = client::bench(&config(&addr, p, TOKEN)).unwrap();
        let b = s.bottleneck_mbps;
        assert!(b.is_some_and(|b| b > 0.0), "{} end: {b:?}", s.role);
    }
}

/// A 60 s bench the client's signal stops after half a second: it ends with
/// what moved, in a few seconds (its streams block in the socket calls; the
/// signal shuts them), sending or, reversed, receiving.
#[test]
fn a_stopped_bench_ends_at_once_with_what_moved() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    for reverse in [false, true] {
        let mut p = params(Kind::Bench, 3);
        p.duration_ms = 60_000;
        if reverse {
            p.flags = braid_wire::FLAG_REVERSE;
        }
        let cfg = config(&addr, p, TOKEN);
        let stop = cfg.cancel.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(500));
            stop.cancel();
        });
        let began = std::time::Instant::now();
        let ended = client::bench(&cfg);
        let took = began.elapsed();
        assert!(
            took < Duration::from_secs(20),
            "reverse {reverse}: {took:?}"
        );
        match ended {
            Ok(s) => assert!(s.bytes > 0, "reverse {reverse}: nothing moved"),
            Err(e) => assert!(
                matches!(e, braid::error::Error::Interrupted),
                "reverse {reverse}: {e}"
            ),
        }
    }
}

#[test]
fn a_wrong_token_is_refused_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(&root).unwrap();
    fs::write(d.path().join("f"), b"data").unwrap();
    let addr = serve(&root);
    let e = client::send(
        &config(&addr, params(Kind::Send, 1), "not-the-token"),
        &[d.path().join("f")],
        "x",
    )
    .unwrap_err();
    assert!(matches!(e, Error::Auth(_)), "{e}");
    assert_eq!(e.exit_code(), braid::error::exit::AUTH);
    assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
}

/// A get's list of what it wants: one path.
fn ask_for(c: &mut Conn, path: &str) {
    let want = FileEntry {
        path: path.into(),
        size: 0,
        mode: 0,
        mtime_ns: 0,
    };
    session::send_manifest(c, &[want]).unwrap();
}

/// A client that speaks the protocol by hand, to send what braid never would.
fn raw_session(addr: &str, kind: Kind) -> Conn {
    let mut c = Conn::new(TcpStream::connect(addr).unwrap()).unwrap();
    session::client_handshake(&mut c, &Token::new(TOKEN).unwrap(), false).unwrap();
    c.send(&Message::Open(params(kind, 1))).unwrap();
    c
}

#[test]
fn paths_that_leave_the_root_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(root.join("pub")).unwrap();
    fs::write(d.path().join("secret"), b"s").unwrap();
    std::os::unix::fs::symlink(d.path(), root.join("pub/up")).unwrap();
    let addr = serve(&root);
    for bad in ["../outside", "/tmp/abs", "pub/up/evil", "a/../../b"] {
        let mut c = raw_session(&addr, Kind::Send);
        c.send(&Message::Manifest {
            files: vec![FileEntry {
                path: bad.into(),
                size: 1,
                mode: 0o644,
                mtime_ns: 0,
            }],
            more: false,
        })
        .unwrap();
        match c.recv() {
            Err(Error::Remote { code: 403, .. }) => {}
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(!d.path().join("outside").exists() && !d.path().join("evil").exists());
    let back = d.path().join("back");
    fs::create_dir_all(&back).unwrap();
    for bad in ["../secret", "pub/up/secret"] {
        let e = client::get(
            &config(&addr, params(Kind::Get, 1), TOKEN),
            &[bad.into()],
            &back,
        )
        .unwrap_err();
        assert!(matches!(e, Error::Remote { code: 403, .. }), "{bad}: {e}");
    }
    assert_eq!(fs::read_dir(&back).unwrap().count(), 0);
}

#[test]
fn malformed_frames_get_an_error_and_the_server_lives_on() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    for garbage in [
        &b"\x00\x00\x00\x05\x63abcd"[..],
        b"\xff\xff\xff\xff",
        b"\x00\x00\x00\x02\x08",
    ] {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(garbage).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut c = Conn::new(s).unwrap();
        match c.recv() {
            Err(Error::Remote { code: 400, message }) => {
                assert!(message.contains("protocol"), "{message}")
            }
            other => panic!("{garbage:?}: {other:?}"),
        }
    }
    // An attach to a session that does not exist.
    let mut c = Conn::new(TcpStream::connect(&addr).unwrap()).unwrap();
    c.send(&Message::Attach {
        session: 42,
        stream: 0,
        counter: 1,
        mac: [0; 32],
    })
    .unwrap();
    assert!(matches!(c.recv(), Err(Error::Remote { code: 401, .. })));
    let s = client::bench(&config(&addr, params(Kind::Bench, 1), TOKEN)).unwrap();
    assert!(s.bytes > 0);
}

/// A raw control connection past Open and a one-file manifest of `size`
/// bytes: returns it with the session id and key, the server's Ranges read.
fn raw_send_session(addr: &str, name: &str, size: u64) -> (Conn, u64, Agreed) {
    let mut c = Conn::new(TcpStream::connect(addr).unwrap()).unwrap();
    let key = session::client_handshake(&mut c, &Token::new(TOKEN).unwrap(), false).unwrap();
    c.send(&Message::Open(params(Kind::Send, 1))).unwrap();
    c.send(&Message::Manifest {
        files: vec![FileEntry {
            path: name.into(),
            size,
            mode: 0o644,
            mtime_ns: 0,
        }],
        more: false,
    })
    .unwrap();
    let Message::Accepted { session } = c.recv().unwrap() else {
        panic!("not accepted")
    };
    assert!(matches!(c.recv().unwrap(), Message::Ranges { .. }));
    (c, session, key)
}

/// Attaches a data connection by hand; returns the attach's bytes (to replay).
fn attach_raw(addr: &str, session: u64, stream: u16, counter: u64, agreed: &Agreed) -> Vec<u8> {
    let mut bytes = Vec::new();
    braid_wire::encode(
        &Message::Attach {
            session,
            stream,
            counter,
            mac: braid_wire::auth::attach_proof(&agreed.key, session, stream, counter),
        },
        &mut bytes,
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&bytes).unwrap();
    let mut c = Conn::new(s).unwrap();
    c.seal(agreed.keys(Channel::Data { stream, counter }, true));
    assert!(matches!(c.recv().unwrap(), Message::Accepted { .. }));
    bytes
}

/// A bench whose sender told its count while one of its streams is still
/// open (its last bytes still in the network, or a sender that never closes):
/// the receiving server answers once its wait for the streams is over and
/// then ends the session, resetting the stream, rather than waiting for it
/// to close (a `serve --once` would otherwise outlive the bench).
#[test]
fn a_bench_session_ends_once_both_counts_are_told_whatever_its_streams_hold() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    let mut c = Conn::new(TcpStream::connect(&addr).unwrap()).unwrap();
    let key = session::client_handshake(&mut c, &Token::new(TOKEN).unwrap(), false).unwrap();
    c.send(&Message::Open(params(Kind::Bench, 1))).unwrap();
    let Message::Accepted { session } = c.recv().unwrap() else {
        panic!("not accepted")
    };
    let data = TcpStream::connect(&addr).unwrap();
    let mut conn = session::attach(data.try_clone().unwrap(), session, 0, 1, &key, false).unwrap();
    conn.w.stage_zeros(1 << 16).unwrap();
    while conn.w.write_staged().unwrap() > 0 {}
    let mut data = data;
    c.send(&Message::Close { bytes: 1 << 17 }).unwrap();
    let Message::Close { bytes } = c.recv().unwrap() else {
        panic!("no count")
    };
    assert_eq!(bytes, 1 << 16);
    // The stream was never closed by its sender; the server lets go of it.
    data.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut b = [0u8; 16];
    match std::io::Read::read(&mut data, &mut b) {
        Ok(0) => {}
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        Ok(n) => panic!("{n} bytes on a bench's data stream"),
    }
}

/// A sending stream's blocks follow its attach without waiting for the
/// acceptance, which is then the first frame it reads; a refused attach is
/// the server's word, not a stream that quietly sends into nothing.
#[test]
fn a_sending_stream_sends_before_its_acceptance_and_reads_it_first() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    let (_ctrl, session, key) = raw_send_session(&addr, "f", 10);
    let data = TcpStream::connect(&addr).unwrap();
    let mut conn = session::attach(data, session, 0, 1, &key, true).unwrap();
    let block = Message::Block {
        file: 0,
        offset: 0,
        len: 10,
    };
    let sent = conn.w.send_block(&block, 10, |piece, _, _| {
        piece.fill(7);
        Ok::<(), ()>(())
    });
    assert!(matches!(sent, Ok(Ok(()))));
    // The acceptance was read and checked on the way to the block's ack.
    match conn.recv() {
        Ok(Message::Progress { bytes }) => assert!(bytes > 0),
        other => panic!("{other:?}"),
    }
    // A refused attach (here a replay of this one's counter) ends the stream
    // at its first read. The refusal crosses in the clear, before any keys
    // of the connection, so it is not taken as the server's word.
    let data = TcpStream::connect(&addr).unwrap();
    let mut conn = session::attach(data, session, 0, 1, &key, true).unwrap();
    match conn.recv() {
        Err(Error::Tampered(_)) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_attach_cannot_be_replayed_on_a_new_connection() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    let (_ctrl, session, key) = raw_send_session(&addr, "f", 10);
    let bytes = attach_raw(&addr, session, 0, 7, &key);
    // The same bytes again, during the live session: refused.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&bytes).unwrap();
    match Conn::new(s).unwrap().recv() {
        Err(Error::Remote { code: 401, message }) => {
            assert!(message.contains("replay"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // A fresh counter is a new attach, as a redial is.
    attach_raw(&addr, session, 0, 8, &key);
}

#[test]
fn a_huge_file_in_a_manifest_is_refused_and_the_server_lives_on() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    for size in [1u64 << 62, 1 << 38] {
        let mut c = raw_session(&addr, Kind::Send);
        c.send(&Message::Manifest {
            files: vec![FileEntry {
                path: "big".into(),
                size,
                mode: 0o644,
                mtime_ns: 0,
            }],
            more: false,
        })
        .unwrap();
        match c.recv() {
            Err(Error::Remote { code, message }) => {
                assert!(code == 413 || code == 507, "{size}: {code} {message}")
            }
            other => panic!("{size}: {other:?}"),
        }
    }
    assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
    let s = client::bench(&config(&addr, params(Kind::Bench, 1), TOKEN)).unwrap();
    assert!(s.bytes > 0);
}

#[test]
fn a_second_send_to_a_name_in_use_is_refused_and_the_first_lands_intact() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    fs::create_dir_all(root.join("E")).unwrap();
    for (dir, seed) in [("e1", 1), ("e2", 2)] {
        fs::create_dir_all(d.path().join(dir)).unwrap();
        fs::write(d.path().join(dir).join("same"), noise(6 << 20, seed)).unwrap();
    }
    let addr = serve(&root);
    let mut slow = config(&addr, params(Kind::Send, 2), TOKEN);
    slow.limit_bps = Some(40_000_000);
    let first = {
        let src = d.path().join("e1/same");
        thread::spawn(move || client::send(&slow, &[src], "E"))
    };
    thread::sleep(Duration::from_millis(400));
    let e = client::send(
        &config(&addr, params(Kind::Send, 2), TOKEN),
        &[d.path().join("e2/same")],
        "E",
    )
    .unwrap_err();
    match &e {
        Error::Remote { code: 409, message } => {
            assert!(
                message.contains("being received by another session"),
                "{message}"
            )
        }
        other => panic!("{other}"),
    }
    assert_eq!(e.exit_code(), braid::error::exit::REMOTE);
    first.join().unwrap().unwrap();
    assert_eq!(b3(&root.join("E/same")), b3(&d.path().join("e1/same")));
    // Once the first has ended, the second may write.
    client::send(
        &config(&addr, params(Kind::Send, 2), TOKEN),
        &[d.path().join("e2/same")],
        "E",
    )
    .unwrap();
    assert_eq!(b3(&root.join("E/same")), b3(&d.path().join("e2/same")));
}

#[test]
fn every_name_and_every_empty_directory_arrives() {
    let d = tempfile::tempdir().unwrap();
    let (root, src, back) = (
        d.path().join("root"),
        d.path().join("t"),
        d.path().join("back"),
    );
    fs::create_dir_all(src.join("empty/inner")).unwrap();
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&back).unwrap();
    let long = "L".repeat(255);
    for n in [
        "a.braid-part",
        ".b.braid-journal",
        ".big.tmp",
        "plain",
        long.as_str(),
    ] {
        fs::write(src.join(n), noise(3000, n.len() as u64)).unwrap();
    }
    let addr = serve(&root);
    let s = client::send(
        &config(&addr, params(Kind::Send, 2), TOKEN),
        std::slice::from_ref(&src),
        "",
    )
    .unwrap();
    assert_eq!(s.files, 5);
    for n in [
        "a.braid-part",
        ".b.braid-journal",
        ".big.tmp",
        "plain",
        long.as_str(),
    ] {
        assert_eq!(b3(&root.join("t").join(n)), b3(&src.join(n)), "{n}");
    }
    assert!(root.join("t/empty/inner").is_dir());
    // The whole root comes back with `.`.
    let s = client::get(
        &config(&addr, params(Kind::Get, 2), TOKEN),
        &[".".into()],
        &back,
    )
    .unwrap();
    assert_eq!(s.files, 5);
    assert!(back.join("t/empty/inner").is_dir());
    assert_eq!(b3(&back.join("t").join(&long)), b3(&src.join(&long)));
    let left: Vec<_> = walkdir(&root)
        .into_iter()
        .chain(walkdir(&back))
        .filter(|p| p.to_string_lossy().contains(".braid-partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_sparse_file_arrives_sparse() {
    let d = tempfile::tempdir().unwrap();
    let (root, src) = (d.path().join("root"), d.path().join("sparse"));
    fs::create_dir_all(&root).unwrap();
    let f = fs::File::create(&src).unwrap();
    f.set_len(256 << 20).unwrap();
    f.write_all_at(b"island", 100 << 20).unwrap();
    let addr = serve(&root);
    client::send(
        &config(&addr, params(Kind::Send, 2), TOKEN),
        std::slice::from_ref(&src),
        "",
    )
    .unwrap();
    let m = fs::metadata(root.join("sparse")).unwrap();
    assert_eq!(b3(&root.join("sparse")), b3(&src));
    use std::os::unix::fs::MetadataExt;
    assert!(
        m.blocks() * 512 < 4 << 20,
        "{} bytes allocated",
        m.blocks() * 512
    );
}

#[test]
fn get_keeps_to_the_clients_rate_limit() {
    let d = tempfile::tempdir().unwrap();
    let (root, back) = (d.path().join("root"), d.path().join("back"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&back).unwrap();
    fs::write(root.join("f"), noise(5 << 20, 4)).unwrap();
    let addr = serve(&root);
    let mut cfg = config(&addr, params(Kind::Get, 2), TOKEN);
    cfg.limit_bps = Some(20_000_000);
    let t = std::time::Instant::now();
    client::get(&cfg, &["f".into()], &back).unwrap();
    // 42 Mbit at 20 Mbit/s, less the pacer's burst allowance: a lower
    // bound, which a busy machine only lengthens.
    assert!(
        t.elapsed() > Duration::from_millis(1200),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(b3(&back.join("f")), b3(&root.join("f")));
}

#[test]
fn a_manifest_larger_than_a_frame_crosses_and_past_the_limit_is_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let (root, src) = (d.path().join("root"), d.path().join("many"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&src).unwrap();
    for i in 0..300 {
        fs::write(src.join(format!("{i:0>200}")), [i as u8]).unwrap();
    }
    let mut limits = server::Limits::default();
    limits.manifest.files = 100;
    let addr = serve_with(&root, "127.0.0.1:0", limits);
    let e = client::send(
        &config(&addr, params(Kind::Send, 1), TOKEN),
        std::slice::from_ref(&src),
        "",
    )
    .unwrap_err();
    match &e {
        Error::Remote { code: 413, message } => {
            assert!(message.contains("--max-files"), "{message}")
        }
        other => panic!("{other}"),
    }
    // Over the wire in several frames: a list past MAX_FRAME.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    let files: Vec<FileEntry> = (0..90_000u32)
        .map(|i| FileEntry {
            path: format!("{i:0>200}"),
            size: i as u64,
            mode: 0o644,
            mtime_ns: 0,
        })
        .collect();
    let sent = files.clone();
    let t = thread::spawn(move || {
        let mut c = Conn::new(TcpStream::connect(a).unwrap()).unwrap();
        session::send_manifest(&mut c, &sent).unwrap();
    });
    let mut c = Conn::new(l.accept().unwrap().0).unwrap();
    let got = session::recv_manifest(&mut c, session::ManifestLimits::default()).unwrap();
    t.join().unwrap();
    assert!(
        files.iter().map(|f| f.path.len() + 22).sum::<usize>() > braid_wire::MAX_FRAME as usize
    );
    assert_eq!(got, files);
}

#[test]
fn protocol_mistakes_are_answered_with_their_reason() {
    let d = tempfile::tempdir().unwrap();
    let limits = server::Limits {
        handshake: Duration::from_millis(500),
        ..Default::default()
    };
    let addr = serve_with(d.path(), "127.0.0.1:0", limits);
    // A Close before the file was verified.
    let (mut c, _, _) = raw_send_session(&addr, "f", 10);
    c.send(&Message::Close { bytes: 0 }).unwrap();
    match c.recv() {
        Err(Error::Remote { code: 400, message }) => {
            assert!(
                message.contains("closed before every file was verified"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    // A malformed Open: unknown flags.
    let mut c = Conn::new(TcpStream::connect(&addr).unwrap()).unwrap();
    session::client_handshake(&mut c, &Token::new(TOKEN).unwrap(), false).unwrap();
    let mut open = Vec::new();
    braid_wire::encode(&Message::Open(params(Kind::Send, 1)), &mut open);
    let flags_at = open.len() - 10;
    open[flags_at] = 0x40;
    c.w.send_encoded(&open).unwrap();
    match c.recv() {
        Err(Error::Remote { code: 400, message }) => {
            assert!(message.contains("flags"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // A connection that says nothing is told why it is closed.
    let mut idle = Conn::new(TcpStream::connect(&addr).unwrap()).unwrap();
    match idle.recv() {
        Err(e @ Error::Remote { code: 408, .. }) => {
            assert!(
                e.to_string()
                    .contains("nothing arrived within the time allowed"),
                "{e}"
            );
            assert_eq!(e.exit_code(), braid::error::exit::CONNECT);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_receiver_claiming_too_many_ranges_is_refused() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("f"), noise(1 << 20, 8)).unwrap();
    let limits = server::Limits {
        blocks: 16,
        ..Default::default()
    };
    let addr = serve_with(d.path(), "127.0.0.1:0", limits);
    let mut c = raw_session(&addr, Kind::Get);
    ask_for(&mut c, "f");
    assert!(matches!(c.recv().unwrap(), Message::Accepted { .. }));
    session::recv_manifest(&mut c, session::ManifestLimits::default()).unwrap();
    // Sixteen blocks' worth of ranges is the most a receiver can hold; 17 is a lie.
    c.send(&Message::Ranges {
        file: 0,
        ranges: (0..17).map(|i| (i * 10, i * 10 + 5)).collect(),
    })
    .unwrap();
    match c.recv() {
        Err(Error::Remote { code: 413, message }) => {
            assert!(message.contains("ranges"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

/// Each tick's time and what the steer saw of every stream.
type Ticks = Arc<Mutex<Vec<(Duration, Vec<StreamView>)>>>;

/// Records what it saw on each tick (and at each look between ticks, if it
/// asks for them), and asks what its script says.
struct Recorder {
    script: Script,
    seen: Ticks,
    looks: Option<(Duration, Ticks)>,
}

impl Steer for Recorder {
    fn interval(&self) -> Duration {
        self.script.interval()
    }

    fn tick(&mut self, elapsed: Duration, streams: &[StreamView]) -> Vec<Steering> {
        self.seen.lock().unwrap().push((elapsed, streams.to_vec()));
        self.script.tick(elapsed, streams)
    }

    fn looks(&self) -> Option<Looks> {
        self.looks.as_ref().map(|(every, _)| Looks {
            first: *every,
            every: *every,
        })
    }

    fn sample(&mut self, elapsed: Duration, streams: &[StreamView]) {
        if let Some((_, looked)) = &self.looks {
            looked.lock().unwrap().push((elapsed, streams.to_vec()));
        }
    }
}

/// A steer that asks for looks between its ticks is given them, seeing the
/// live streams, several to a tick.
fn assert_looked_between_ticks(ticks: &Ticks, looks: &Ticks, every: Duration, tick: Duration) {
    let (ticks, looks) = (ticks.lock().unwrap(), looks.lock().unwrap());
    let per_tick = (tick.as_secs_f64() / every.as_secs_f64()) as usize;
    assert!(
        looks.len() >= 2 * ticks.len() && per_tick >= 4,
        "{} looks over {} ticks",
        looks.len(),
        ticks.len()
    );
    assert!(
        looks.windows(2).all(|w| w[0].0 <= w[1].0),
        "looks go forward in time"
    );
    // Each tick is taken once: the next an interval after it or later.
    assert!(
        ticks.windows(2).all(|w| w[1].0 - w[0].0 >= tick),
        "ticks an interval apart: {:?}",
        ticks.iter().map(|t| t.0).collect::<Vec<_>>()
    );
    assert!(
        looks
            .iter()
            .any(|(_, v)| v.iter().any(|s| s.info.is_some())),
        "a look saw a live stream's TCP_INFO"
    );
    // A tick reads the streams as a look does: the next look is an interval
    // after it, never a second read of the same moment.
    for (t, _) in ticks.iter() {
        if let Some((l, _)) = looks.iter().find(|(l, _)| l >= t) {
            assert!(
                *l - *t >= every,
                "a look {:?} after the tick at {t:?}",
                *l - *t
            );
        }
    }
}

/// What the steer's ticks and looks cost is counted apart from the rest.
fn assert_steering_counted(s: &braid::records::Summary) {
    let steer = s
        .steer_cpu_seconds
        .expect("a steer ran: its CPU time is counted");
    assert!(
        steer > 0.0 && steer < s.cpu_seconds,
        "the steer took {steer} of the process's {} CPU s",
        s.cpu_seconds
    );
}

#[test]
fn streams_join_and_leave_a_running_send_and_a_live_socket_changes_its_control() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let addr = serve(dst.path());
    let file = src.path().join("steered.bin");
    fs::write(&file, noise(24 << 20, 11)).unwrap();
    let ms = Duration::from_millis;
    let reno = StreamControl {
        cc: Some("reno".into()),
        settings: Default::default(),
    };
    let seen: Ticks = Arc::default();
    let looked: Ticks = Arc::default();
    let steer = Recorder {
        script: Script::new(
            vec![
                (ms(150), Steering::Streams(4)),
                (ms(300), Steering::Control(0, reno)),
                (ms(500), Steering::Streams(1)),
            ],
            ms(50),
        ),
        seen: Arc::clone(&seen),
        looks: Some((ms(10), Arc::clone(&looked))),
    };
    let mut cfg = config(&addr, params(Kind::Send, 2), TOKEN);
    // Paced so that the session outlives the script: 24 MiB at 160 Mb/s is 1.3 s.
    cfg.limit_bps = Some(160_000_000);
    cfg.steer = Some(Arc::new(Mutex::new(steer)));
    let s = client::send(&cfg, std::slice::from_ref(&file), "").unwrap();
    assert_eq!(b3(&file), b3(&dst.path().join("steered.bin")));
    assert_looked_between_ticks(&seen, &looked, ms(10), ms(50));
    assert_steering_counted(&s);
    assert_eq!(s.streams.len(), 4, "two streams joined: {:?}", s.streams);
    for st in &s.streams {
        assert_eq!(st.connections, 1, "no stream was lost or redialled: {st:?}");
        assert!(st.bytes > 0, "every stream carried blocks: {st:?}");
    }
    assert_eq!(s.requeued_blocks, 0, "leaving gives no block back");
    assert_eq!(
        s.streams[0].cc, "reno",
        "stream 0's live socket runs reno now"
    );
    let seen = seen.lock().unwrap();
    let last = &seen.last().expect("the steer was asked").1;
    assert!(
        last[0].wanted && last[1..].iter().all(|v| !v.wanted),
        "{last:?}"
    );
    // Once the three have left (their last blocks acknowledged), only stream 0 moves.
    let settled: Vec<_> = seen.iter().filter(|(t, _)| *t >= ms(700)).collect();
    assert!(
        settled.len() >= 2,
        "the session ran past the leave: {seen:?}"
    );
    let (first, end) = (&settled[0].1, &settled[settled.len() - 1].1);
    for i in 1..4 {
        assert_eq!(
            first[i].bytes, end[i].bytes,
            "stream {i} carried after it left"
        );
        // Both ends let its connection go: the sender's closes only once the
        // receiver's has (see send::worker), and a socket left open would
        // keep a TCP-P stream a member of its group.
        assert!(
            end[i].info.is_none(),
            "stream {i}'s connection is still open after it left"
        );
    }
    assert!(end[0].bytes > first[0].bytes, "stream 0 carried on");
}

#[test]
fn a_bench_stream_that_leaves_lets_its_connection_go_and_both_ends_agree() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    let ms = Duration::from_millis;
    let seen: Ticks = Arc::default();
    let looked: Ticks = Arc::default();
    let steer = Recorder {
        script: Script::new(vec![(ms(300), Steering::Streams(1))], ms(50)),
        seen: Arc::clone(&seen),
        looks: Some((ms(10), Arc::clone(&looked))),
    };
    let mut p = params(Kind::Bench, 3);
    p.duration_ms = 1500;
    let mut cfg = config(&addr, p, TOKEN);
    cfg.limit_bps = Some(200_000_000);
    cfg.steer = Some(Arc::new(Mutex::new(steer)));
    let s = client::bench(&cfg).unwrap();
    assert_eq!(s.peer_bytes, Some(s.bytes), "{s:?}");
    assert_looked_between_ticks(&seen, &looked, ms(10), ms(50));
    assert_steering_counted(&s);
    let seen = seen.lock().unwrap();
    let end = &seen.last().expect("the steer was asked").1;
    assert!(end[0].info.is_some(), "stream 0 carries on: {end:?}");
    for v in &end[1..] {
        assert!(
            v.info.is_none() && !v.wanted,
            "stream {} left: {v:?}",
            v.stream
        );
    }
    for st in &s.streams[1..] {
        assert!(
            st.data_segs_out > 0,
            "a left stream's count is kept: {st:?}"
        );
    }
}

/// A data connection attached by hand; the server's answer (its acceptance,
/// sealed, or its refusal, in the clear).
fn try_attach(
    addr: &str,
    session: u64,
    stream: u16,
    counter: u64,
    agreed: &Agreed,
) -> (Conn, Result<Message, Error>) {
    let mut c = Conn::new(TcpStream::connect(addr).unwrap()).unwrap();
    c.send(&Message::Attach {
        session,
        stream,
        counter,
        mac: braid_wire::auth::attach_proof(&agreed.key, session, stream, counter),
    })
    .unwrap();
    // A refusal comes in the clear, an acceptance as a sealed record: the
    // first unit on the wire, whole, decodes as a clear Error frame only if
    // it is one (a sealed record could pass for one by chance about once in
    // 2^40 tries).
    let mut buf = vec![0u8; 4096];
    let n = loop {
        let n = c.stream().peek(&mut buf).unwrap();
        let want = 4 + u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
        if n >= 4 && (n >= want || n == buf.len()) {
            break n;
        }
        thread::sleep(Duration::from_millis(5));
    };
    if let Ok(Some((Message::Error { .. }, used))) = braid_wire::decode(&buf[..n]) {
        if used == n {
            let r = c.recv();
            return (c, r);
        }
    }
    c.seal(agreed.keys(Channel::Data { stream, counter }, true));
    let r = c.recv();
    (c, r)
}

/// A get's sending server runs the streams its client asked for: an attach
/// of a stream past them is refused before it is accepted (it once reached
/// the scheduler and panicked), and the server lives on.
#[test]
fn a_stream_past_a_sending_servers_count_is_refused_before_acceptance() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("f"), noise(3 << 20, 5)).unwrap();
    let addr = serve(d.path());
    let mut c = Conn::new(TcpStream::connect(&addr).unwrap()).unwrap();
    let agreed = session::client_handshake(&mut c, &Token::new(TOKEN).unwrap(), false).unwrap();
    c.send(&Message::Open(params(Kind::Get, 1))).unwrap();
    ask_for(&mut c, "f");
    let Message::Accepted { session } = c.recv().unwrap() else {
        panic!("not accepted")
    };
    for stream in [1u16, 5, 300] {
        match try_attach(&addr, session, stream, stream as u64, &agreed).1 {
            Err(Error::Remote { code: 400, message }) => {
                assert!(message.contains("the session has 1 streams"), "{message}")
            }
            other => panic!("stream {stream}: {other:?}"),
        }
    }
    let (_keep, r) = try_attach(&addr, session, 0, 1000, &agreed);
    assert!(matches!(r, Ok(Message::Accepted { .. })), "{r:?}");
    let s = client::bench(&config(&addr, params(Kind::Bench, 1), TOKEN)).unwrap();
    assert!(s.bytes > 0, "the server lives on");
}

/// One stream index has at most two connections open at once (a redial and
/// the connection it replaces): a peer attaching it over and over gets no
/// thread and no buffers for the rest.
#[test]
fn a_stream_attached_over_and_over_is_refused_past_two_open() {
    let d = tempfile::tempdir().unwrap();
    let addr = serve(d.path());
    let (_ctrl, session, agreed) = raw_send_session(&addr, "f", 10 << 20);
    let mut open = Vec::new();
    for counter in 1..=2 {
        let (c, r) = try_attach(&addr, session, 0, counter, &agreed);
        assert!(
            matches!(r, Ok(Message::Accepted { .. })),
            "{counter}: {r:?}"
        );
        open.push(c);
    }
    for counter in 3..=6 {
        match try_attach(&addr, session, 0, counter, &agreed).1 {
            Err(Error::Remote { code: 503, message }) => {
                assert!(message.contains("2 connections open already"), "{message}")
            }
            other => panic!("attach {counter}: {other:?}"),
        }
    }
    // One closes: its place is free again.
    drop(open.pop());
    let mut accepted = false;
    for counter in 7..40 {
        if let (_c, Ok(Message::Accepted { .. })) = try_attach(&addr, session, 0, counter, &agreed)
        {
            accepted = true;
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    assert!(accepted, "a closed connection's place was not given back");
}

/// Manifests of live sessions share one budget: a send whose manifest would
/// pass it is told to come back later, and one that fits goes ahead.
#[test]
fn manifests_past_the_servers_memory_budget_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let limits = server::Limits {
        manifests: 100 << 10,
        ..Default::default()
    };
    let addr = serve_with(d.path(), "127.0.0.1:0", limits);
    let entries = |n: usize| -> Vec<FileEntry> {
        (0..n)
            .map(|i| FileEntry {
                path: format!("many/f{i}"),
                size: 1,
                mode: 0o644,
                mtime_ns: 0,
            })
            .collect()
    };
    let mut c = raw_session(&addr, Kind::Send);
    session::send_manifest(&mut c, &entries(300)).unwrap();
    match c.recv() {
        Err(Error::Remote { code: 503, message }) => {
            assert!(message.contains("--max-manifests"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!d.path().join("many").exists());
    let mut c = raw_session(&addr, Kind::Send);
    session::send_manifest(&mut c, &entries(50)).unwrap();
    assert!(matches!(c.recv(), Ok(Message::Accepted { .. })));
}

/// An authenticated session that goes silent after its acceptance is ended
/// by the server, which says why, instead of holding its connections.
#[test]
fn a_silent_session_is_ended_by_the_server() {
    let d = tempfile::tempdir().unwrap();
    let limits = server::Limits {
        idle: Duration::from_secs(3),
        ..Default::default()
    };
    let addr = serve_with(d.path(), "127.0.0.1:0", limits);
    // The server's idle clock starts at the client's last message, which
    // comes after this instant: the silence measured from here is at
    // least the limit, however slowly the session was set up.
    let began = std::time::Instant::now();
    let (mut c, session, agreed) = raw_send_session(&addr, "f", 10 << 20);
    let (mut data, r) = try_attach(&addr, session, 0, 1, &agreed);
    assert!(matches!(r, Ok(Message::Accepted { .. })));
    c.r.set_deadline(Some(began + Duration::from_secs(20)));
    match c.recv() {
        Err(Error::Remote { code: 408, message }) => {
            assert!(message.contains("said nothing"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let waited = began.elapsed();
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_secs(15),
        "{waited:?}"
    );
    // Its data connection is let go too.
    data.r
        .set_deadline(Some(std::time::Instant::now() + Duration::from_secs(10)));
    assert!(data.recv().is_err());
}

/// Destinations as scp and rsync read them: one file sent to a path that is
/// not a directory there is written under that name; to a directory, or a
/// path ending in `/`, under its own; a get writes its local target the same
/// way.
#[test]
fn destinations_name_a_single_file_as_scp_does_and_get_mirrors_it() {
    let d = tempfile::tempdir().unwrap();
    let (root, here) = (d.path().join("root"), d.path().join("here"));
    fs::create_dir_all(root.join("exists")).unwrap();
    fs::create_dir_all(&here).unwrap();
    let f = here.join("f.bin");
    fs::write(&f, noise(100_000, 3)).unwrap();
    let addr = serve(&root);
    let send = |dest: &str| {
        client::send(
            &config(&addr, params(Kind::Send, 2), TOKEN),
            std::slice::from_ref(&f),
            dest,
        )
        .unwrap_or_else(|e| panic!("send to {dest}: {e}"))
    };
    send("new.txt");
    assert!(root.join("new.txt").is_file(), "renamed at the root");
    send("deep/er/renamed.bin");
    assert_eq!(b3(&root.join("deep/er/renamed.bin")), b3(&f));
    send("exists");
    assert_eq!(b3(&root.join("exists/f.bin")), b3(&f), "into a directory");
    send("made/");
    assert_eq!(
        b3(&root.join("made/f.bin")),
        b3(&f),
        "a trailing / is a directory"
    );
    send("new.txt");
    assert!(
        root.join("new.txt").is_file(),
        "the same name again replaces the file"
    );

    let get = |remote: &[&str], local: &Path| {
        let remote: Vec<String> = remote.iter().map(|s| s.to_string()).collect();
        client::get(&config(&addr, params(Kind::Get, 2), TOKEN), &remote, local)
    };
    get(&["new.txt"], &here.join("copy.bin")).unwrap();
    assert_eq!(
        b3(&here.join("copy.bin")),
        b3(&f),
        "a file renamed on the way back"
    );
    get(&["deep"], &here.join("tree")).unwrap();
    assert_eq!(
        b3(&here.join("tree/er/renamed.bin")),
        b3(&f),
        "a tree's top renamed"
    );
    get(&["new.txt", "exists"], &here.join("both")).unwrap();
    assert!(here.join("both/new.txt").is_file() && here.join("both/exists/f.bin").is_file());
    let e = get(&["new.txt"], &here.join("nowhere/x")).unwrap_err();
    assert!(e.to_string().contains("not a directory"), "{e}");
    // A get that fails leaves no directory made for it.
    assert!(get(&["missing", "new.txt"], &here.join("failed")).is_err());
    assert!(!here.join("failed").exists());
}

/// rsync's options, end to end: --exclude/--include, --update, --checksum,
/// --delete and --dry-run on send and get, each seen in the tree and in the
/// summary's tally.
#[test]
fn filters_update_checksum_delete_and_dry_run_do_what_rsync_users_expect() {
    use braid::files::filter::{Filter, Rule};
    use braid::session::sync::Options;
    use std::time::SystemTime;
    let d = tempfile::tempdir().unwrap();
    let (root, here) = (d.path().join("root"), d.path().join("here"));
    let proj = here.join("proj");
    fs::create_dir_all(proj.join("build")).unwrap();
    fs::create_dir_all(proj.join("src")).unwrap();
    fs::create_dir_all(&root).unwrap();
    for (f, n) in [
        ("a.rs", 1),
        ("b.o", 2),
        ("keep.o", 3),
        ("build/x", 4),
        ("src/c.rs", 5),
    ] {
        fs::write(proj.join(f), noise(70_000 + n * 1000, n as u64)).unwrap();
    }
    let addr = serve(&root);
    let rules = |r: &[(bool, &str)]| {
        Filter::new(r.iter().map(|(i, p)| Rule::new(*i, p).unwrap()).collect()).unwrap()
    };
    let filter = rules(&[(true, "keep.o"), (false, "*.o"), (false, "build/")]);
    // With --resume, as a mirror is kept: what is there whole (size and time) is skipped.
    let send = |sync: Options| {
        let mut p = params(Kind::Send, 2);
        p.flags |= FLAG_RESUME;
        let mut cfg = config(&addr, p, TOKEN);
        cfg.sync = sync;
        client::send(&cfg, std::slice::from_ref(&proj), "").unwrap()
    };
    let tally = |s: &braid::records::Summary| s.transfer.clone().unwrap();
    let at = |p: &str| root.join("proj").join(p);
    let mtime = |p: &Path| fs::metadata(p).unwrap().modified().unwrap();
    let touch = |p: &Path, t: SystemTime| {
        let f = fs::File::options().write(true).open(p).unwrap();
        f.set_modified(t).unwrap();
    };

    // Filters: what they exclude stays here, and the first matching rule decides.
    let s = send(Options {
        filter: filter.clone(),
        ..Default::default()
    });
    assert!(at("a.rs").is_file() && at("keep.o").is_file() && at("src/c.rs").is_file());
    assert!(!at("b.o").exists() && !at("build").exists());
    assert_eq!((tally(&s).sent, tally(&s).skipped), (3, 0));
    assert_eq!(s.steer_cpu_seconds, None, "no steer ran");

    // --update: a newer file at the receiver is kept as it is.
    fs::write(at("a.rs"), b"edited there").unwrap();
    let later = SystemTime::now() + Duration::from_secs(3600);
    touch(&at("a.rs"), later);
    let s = send(Options {
        filter: filter.clone(),
        update: true,
        ..Default::default()
    });
    assert_eq!(fs::read(at("a.rs")).unwrap(), b"edited there");
    assert_eq!(tally(&s).kept, 1);
    // Without it, the sender's file replaces it.
    send(Options {
        filter: filter.clone(),
        ..Default::default()
    });
    assert_eq!(b3(&at("a.rs")), b3(&proj.join("a.rs")));

    // --checksum: same content under another time is skipped; same size and time
    // with other content is sent (the quick check would have kept it).
    let c_time = mtime(&proj.join("src/c.rs"));
    touch(&at("src/c.rs"), later);
    let mut other = fs::read(at("keep.o")).unwrap();
    other[0] ^= 1;
    fs::write(at("keep.o"), &other).unwrap();
    let k_time = mtime(&proj.join("keep.o"));
    touch(&at("keep.o"), k_time);
    let s = send(Options {
        filter: filter.clone(),
        checksum: true,
        ..Default::default()
    });
    assert_eq!(
        b3(&at("keep.o")),
        b3(&proj.join("keep.o")),
        "other content is sent"
    );
    assert_eq!(tally(&s).skipped, 2, "{:?}", tally(&s));
    assert_eq!(tally(&s).sent, 1);
    assert_eq!(
        mtime(&at("src/c.rs")),
        c_time,
        "a file skipped by content takes the sender's time"
    );

    // --delete (dry run first): what the sender does not have goes, what the filter
    // excludes stays, and a dry run changes nothing.
    fs::create_dir_all(at("old/dir")).unwrap();
    fs::write(at("old/dir/f"), b"1").unwrap();
    fs::write(at("stale.txt"), b"1").unwrap();
    fs::write(at("notes.o"), b"1").unwrap();
    fs::write(proj.join("new.rs"), b"fresh").unwrap();
    let mirror = Options {
        filter: filter.clone(),
        delete: true,
        ..Default::default()
    };
    let s = send(Options {
        dry_run: true,
        ..mirror.clone()
    });
    let t = tally(&s);
    assert!(t.dry_run && t.removed == 4 && t.sent == 1, "{t:?}");
    assert!(at("stale.txt").exists() && at("old/dir/f").exists() && !at("new.rs").exists());
    assert!(
        !root.join("proj/.braid-partial").exists(),
        "a dry run makes nothing"
    );
    let s = send(mirror.clone());
    assert_eq!(tally(&s).removed, 4);
    assert!(!at("stale.txt").exists() && !at("old").exists());
    assert!(at("notes.o").exists() && at("new.rs").is_file());

    // get: the server lists with the client's filter; --delete and --dry-run at this end.
    let back = d.path().join("back");
    fs::create_dir_all(back.join("proj")).unwrap();
    fs::write(back.join("proj/local-only"), b"1").unwrap();
    let get = |sync: Options| {
        let mut cfg = config(&addr, params(Kind::Get, 2), TOKEN);
        cfg.sync = sync;
        client::get(&cfg, &["proj".to_string()], &back).unwrap()
    };
    let s = get(Options {
        filter: rules(&[(false, "*.o")]),
        delete: true,
        dry_run: true,
        ..Default::default()
    });
    assert!(tally(&s).dry_run && tally(&s).removed == 1);
    assert!(back.join("proj/local-only").exists() && !back.join("proj/a.rs").exists());
    let s = get(Options {
        filter: rules(&[(false, "*.o")]),
        delete: true,
        ..Default::default()
    });
    assert!(!back.join("proj/local-only").exists());
    assert!(back.join("proj/a.rs").is_file() && !back.join("proj/keep.o").exists());
    assert_eq!(tally(&s).removed, 1);
}

/// Symbolic links below a tree travel as links (rsync -l), both ways, each
/// in place of what had its name; with --copy-links a send carries what they
/// name instead; a link never leads the receiver outside its root.
#[test]
fn links_travel_as_links_or_as_what_they_name() {
    use braid::files::manifest::Links;
    use braid::session::sync::Options;
    let d = tempfile::tempdir().unwrap();
    let (root, here) = (d.path().join("root"), d.path().join("here"));
    let tree = here.join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::create_dir_all(&root).unwrap();
    fs::write(tree.join("sub/f"), noise(10_000, 7)).unwrap();
    std::os::unix::fs::symlink("sub/f", tree.join("to-f")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", tree.join("abs")).unwrap();
    std::os::unix::fs::symlink("sub", tree.join("to-sub")).unwrap();
    // What had the link's name at the receiver is replaced, as rsync replaces it.
    fs::create_dir_all(root.join("tree")).unwrap();
    fs::write(root.join("tree/to-f"), b"an old file").unwrap();
    let addr = serve(&root);
    let send = |links: Links| {
        let mut cfg = config(&addr, params(Kind::Send, 2), TOKEN);
        cfg.sync = Options {
            links,
            ..Default::default()
        };
        client::send(&cfg, std::slice::from_ref(&tree), "").unwrap()
    };
    send(Links::Keep);
    let link = |p: &Path| fs::read_link(p).unwrap();
    assert_eq!(link(&root.join("tree/to-f")), Path::new("sub/f"));
    assert_eq!(link(&root.join("tree/abs")), Path::new("/etc/passwd"));
    assert_eq!(link(&root.join("tree/to-sub")), Path::new("sub"));
    assert!(!root.join("tree/.braid-partial").exists());

    // Back again: the server sends links as links.
    let back = d.path().join("back");
    fs::create_dir_all(&back).unwrap();
    let cfg = config(&addr, params(Kind::Get, 2), TOKEN);
    client::get(&cfg, &["tree".to_string()], &back).unwrap();
    assert_eq!(link(&back.join("tree/to-f")), Path::new("sub/f"));
    assert_eq!(b3(&back.join("tree/sub/f")), b3(&tree.join("sub/f")));

    // --copy-links: what the links name, as files and trees.
    let copied = d.path().join("root2");
    fs::create_dir_all(&copied).unwrap();
    let addr2 = serve(&copied);
    let mut cfg = config(&addr2, params(Kind::Send, 2), TOKEN);
    cfg.sync = Options {
        links: Links::Follow,
        ..Default::default()
    };
    client::send(&cfg, std::slice::from_ref(&tree), "").unwrap();
    let m = fs::symlink_metadata(copied.join("tree/to-f")).unwrap();
    assert!(m.is_file());
    assert_eq!(b3(&copied.join("tree/to-f")), b3(&tree.join("sub/f")));
    assert!(fs::symlink_metadata(copied.join("tree/to-sub"))
        .unwrap()
        .is_dir());
    assert_eq!(b3(&copied.join("tree/to-sub/f")), b3(&tree.join("sub/f")));
}
