//! Someone on the path: a relay between a client and a server that passes
//! the handshake through and then watches, changes, drops, repeats,
//! reorders, cuts, forges or replays what crosses, and a server that is not
//! what the client asked for. Every attempt must end the session with a clear
//! error, publish nothing that is not the sender's, and leave what `--resume`
//! needs to finish the file identical. Loopback only; every thread is the
//! test's own.

use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use braid::cancel::Cancel;
use braid::session::client::{self, Config};
use braid::session::conn::Conn;
use braid::session::server;
use braid::session::{self, SocketOptions, Token};
use braid::telemetry::Output;
use braid::Error;
use braid_wire::seal::{Offer, DATA_AT};
use braid_wire::{FileEntry, Kind, Message, Mode, SessionParams, FLAG_RESUME};

mod common;
use common::TOKEN;

fn serve(root: &Path, allow_plain: bool) -> String {
    common::serve_with(root, "127.0.0.1:0", server::Limits::default(), allow_plain)
}

fn config(addr: &str, kind: Kind, resume: bool) -> Config {
    Config {
        target: addr.into(),
        token: Token::new(TOKEN).unwrap(),
        params: SessionParams {
            kind,
            mode: Mode::Single,
            streams: 1,
            cc: String::new(),
            frac_cwnd: 100,
            strength_milli: 1000,
            duration_ms: 500,
            block_size: 1 << 20,
            flags: if resume { FLAG_RESUME } else { 0 },
            limit_bps: 0,
        },
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

/// Bytes that repeat no pattern, with `marker` written at every 64 KiB.
fn content(n: usize, marker: &[u8]) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut v: Vec<u8> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for at in (0..n.saturating_sub(marker.len())).step_by(65536) {
        v[at..at + marker.len()].copy_from_slice(marker);
    }
    v
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chan {
    Control,
    Data,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// Client to server.
    Up,
    Down,
}

/// What the relay does with one sealed record.
#[derive(Clone, Debug)]
enum Act {
    Pass,
    /// Flip one bit of the byte at this offset of the record (its header included).
    Flip(usize),
    Drop,
    Repeat,
    /// Send it after the record that follows it.
    Swap,
    /// Put these bytes (a forged record) before it.
    Inject(Vec<u8>),
    /// End both directions of the connection here.
    Cut,
}

type Policy = Arc<dyn Fn(Chan, Way, usize) -> Act + Send + Sync>;

/// A relay on 127.0.0.1 in front of `server`: every connection through it is
/// parsed into the handshake's clear frames and then sealed records, each of
/// which `policy` decides on; `captured` holds every byte it saw either way.
struct Relay {
    addr: String,
    captured: Arc<Mutex<Vec<u8>>>,
}

fn relay(server: &str, policy: Policy) -> Relay {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let captured = Arc::new(Mutex::new(Vec::new()));
    let (server, cap) = (server.to_owned(), Arc::clone(&captured));
    thread::spawn(move || {
        for client in l.incoming() {
            let Ok(client) = client else { return };
            let Ok(upstream) = TcpStream::connect(&server) else {
                return;
            };
            let (policy, cap) = (Arc::clone(&policy), Arc::clone(&cap));
            thread::spawn(move || carry(client, upstream, policy, cap));
        }
    });
    Relay { addr, captured }
}

/// One frame in the clear: its length and the rest.
fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut f = len.to_vec();
    f.resize(4 + u32::from_be_bytes(len) as usize, 0);
    s.read_exact(&mut f[4..]).ok()?;
    Some(f)
}

fn carry(mut client: TcpStream, mut server: TcpStream, policy: Policy, cap: Arc<Mutex<Vec<u8>>>) {
    // The first frame says which connection this is: Hello or Attach.
    let Some(first) = read_frame(&mut client) else {
        return;
    };
    cap.lock().unwrap().extend_from_slice(&first);
    let chan = if first[4] == 1 {
        Chan::Control
    } else {
        Chan::Data
    };
    if server.write_all(&first).is_err() {
        return;
    }
    // Clear frames still to come each way: a Proof up and a Challenge and
    // Welcome down on a control connection; none on a data connection.
    let (up, down) = match chan {
        Chan::Control => (1, 2),
        Chan::Data => (0, 0),
    };
    let pumps = [
        (
            client.try_clone().unwrap(),
            server.try_clone().unwrap(),
            Way::Up,
            up,
        ),
        (server, client, Way::Down, down),
    ];
    let threads: Vec<_> = pumps
        .into_iter()
        .map(|(from, to, way, clear)| {
            let (policy, cap) = (Arc::clone(&policy), Arc::clone(&cap));
            thread::spawn(move || pump(from, to, chan, way, clear, &*policy, &cap))
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    chan: Chan,
    way: Way,
    clear: usize,
    policy: &(dyn Fn(Chan, Way, usize) -> Act + Send + Sync),
    cap: &Mutex<Vec<u8>>,
) {
    let cut = |from: &TcpStream, to: &TcpStream| {
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    };
    for _ in 0..clear {
        let Some(f) = read_frame(&mut from) else {
            let _ = to.shutdown(Shutdown::Write);
            return;
        };
        cap.lock().unwrap().extend_from_slice(&f);
        if to.write_all(&f).is_err() {
            return;
        }
    }
    let mut held: Option<Vec<u8>> = None;
    for i in 0.. {
        // A record is framed like a frame: a length, then that many bytes.
        let Some(mut rec) = read_frame(&mut from) else {
            if let Some(h) = held.take() {
                let _ = to.write_all(&h);
            }
            let _ = to.shutdown(Shutdown::Write);
            return;
        };
        cap.lock().unwrap().extend_from_slice(&rec);
        let mut out = Vec::new();
        match policy(chan, way, i) {
            Act::Pass => out.extend_from_slice(&rec),
            Act::Flip(at) => {
                rec[at] ^= 0x04;
                out.extend_from_slice(&rec);
            }
            Act::Drop => {}
            Act::Repeat => {
                out.extend_from_slice(&rec);
                out.extend_from_slice(&rec);
            }
            Act::Swap => {
                held = Some(rec);
                continue;
            }
            Act::Inject(forged) => {
                out.extend_from_slice(&forged);
                out.extend_from_slice(&rec);
            }
            Act::Cut => {
                cut(&from, &to);
                return;
            }
        }
        if let Some(h) = held.take() {
            out.extend_from_slice(&h);
        }
        if to.write_all(&out).is_err() {
            cut(&from, &to);
            return;
        }
    }
}

/// A policy that acts once, on record `at` of `chan` going `way`.
fn once(chan: Chan, way: Way, at: usize, act: Act) -> Policy {
    let done = AtomicBool::new(false);
    Arc::new(move |c, w, i| {
        if (c, w, i) == (chan, way, at) && !done.swap(true, Ordering::SeqCst) {
            act.clone()
        } else {
            Act::Pass
        }
    })
}

/// A record as an attacker without the keys can make one: the right shape,
/// any bytes inside (here, a frame an end would act on, in the clear).
fn forged(m: &Message) -> Vec<u8> {
    let mut frame = Vec::new();
    braid_wire::encode(m, &mut frame);
    let mut rec = vec![0u8; DATA_AT];
    rec.extend_from_slice(&frame);
    rec.extend_from_slice(&[0xee; 16]);
    let len = (rec.len() - 4) as u32;
    rec[..4].copy_from_slice(&len.to_be_bytes());
    rec
}

/// The error names what happened: tampering, or a connection cut short.
fn told(what: &str, e: &str) {
    let clear = if what.contains("cut") {
        e.contains("without its sealed end")
    } else {
        e.contains("tampered with")
    };
    assert!(clear, "{what}: {e}");
}

/// The file at `dest` is absent or exactly `want`: never anything else.
fn absent_or_exact(dest: &Path, want: &[u8]) {
    if let Ok(got) = fs::read(dest) {
        assert!(
            got == want,
            "{} holds bytes the sender never sent",
            dest.display()
        );
    }
}

/// Every way of changing a send on the path: the send fails with a clear
/// error, the destination never holds what the sender did not send, and the
/// same send with --resume (directly) then finishes it identical.
#[test]
fn tampering_with_a_send_ends_it_and_a_resume_completes_identical() {
    let cases: Vec<(&str, Policy)> = vec![
        (
            "a bit of a block's data",
            once(Chan::Data, Way::Up, 2, Act::Flip(1000)),
        ),
        (
            "a bit of a block's header",
            once(Chan::Data, Way::Up, 0, Act::Flip(DATA_AT + 2)),
        ),
        (
            "a bit of a record's length",
            once(Chan::Data, Way::Up, 1, Act::Flip(3)),
        ),
        (
            "a bit of the sender's Verify",
            once(Chan::Control, Way::Up, 2, Act::Flip(DATA_AT + 6)),
        ),
        (
            "a bit of the receiver's Verify",
            once(Chan::Control, Way::Down, 2, Act::Flip(DATA_AT + 6)),
        ),
        ("a dropped record", once(Chan::Data, Way::Up, 1, Act::Drop)),
        (
            "a repeated record",
            once(Chan::Data, Way::Up, 1, Act::Repeat),
        ),
        ("reordered records", once(Chan::Data, Way::Up, 1, Act::Swap)),
        (
            "an injected Error",
            once(
                Chan::Control,
                Way::Down,
                1,
                Act::Inject(forged(&Message::Error {
                    code: 500,
                    message: "the relay says stop".into(),
                })),
            ),
        ),
        (
            "an injected Close",
            once(
                Chan::Control,
                Way::Up,
                2,
                Act::Inject(forged(&Message::Close { bytes: 0 })),
            ),
        ),
        (
            "a control connection cut short",
            once(Chan::Control, Way::Up, 2, Act::Cut),
        ),
    ];
    let data = content(5 << 20, b"TAMPER-MARK");
    for (what, policy) in cases {
        let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let file = src.path().join("f.bin");
        fs::write(&file, &data).unwrap();
        let server = serve(dst.path(), false);
        let r = relay(&server, policy);
        let sent = client::send(
            &config(&r.addr, Kind::Send, false),
            std::slice::from_ref(&file),
            "in/",
        );
        let e = sent
            .err()
            .unwrap_or_else(|| panic!("{what}: the send succeeded"));
        told(what, &e.to_string());
        let dest = dst.path().join("in/f.bin");
        absent_or_exact(&dest, &data);
        // The server ends its side of the session on its own; then a resume.
        thread::sleep(Duration::from_millis(300));
        client::send(&config(&server, Kind::Send, true), &[file], "in/")
            .unwrap_or_else(|e| panic!("{what}: the resume failed: {e}"));
        assert!(fs::read(&dest).unwrap() == data, "{what}: not identical");
    }
}

/// The same for a get: the server sends, the client receives and checks.
#[test]
fn tampering_with_a_get_ends_it_and_a_resume_completes_identical() {
    let cases: Vec<(&str, Policy)> = vec![
        (
            "a bit of a block's data",
            once(Chan::Data, Way::Down, 3, Act::Flip(5000)),
        ),
        (
            "a bit of the sender's Verify",
            once(Chan::Control, Way::Down, 3, Act::Flip(DATA_AT + 6)),
        ),
        (
            "a dropped record",
            once(Chan::Data, Way::Down, 2, Act::Drop),
        ),
        (
            "an injected Close",
            once(
                Chan::Control,
                Way::Down,
                2,
                Act::Inject(forged(&Message::Close { bytes: 1 })),
            ),
        ),
    ];
    let data = content(5 << 20, b"TAMPER-MARK");
    for (what, policy) in cases {
        let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        fs::write(src.path().join("f.bin"), &data).unwrap();
        let server = serve(src.path(), false);
        let r = relay(&server, policy);
        let got = client::get(
            &config(&r.addr, Kind::Get, false),
            &["f.bin".into()],
            dst.path(),
        );
        let e = got
            .err()
            .unwrap_or_else(|| panic!("{what}: the get succeeded"));
        told(what, &e.to_string());
        let dest = dst.path().join("f.bin");
        absent_or_exact(&dest, &data);
        client::get(
            &config(&server, Kind::Get, true),
            &["f.bin".into()],
            dst.path(),
        )
        .unwrap_or_else(|e| panic!("{what}: the resume failed: {e}"));
        assert!(fs::read(&dest).unwrap() == data, "{what}: not identical");
    }
}

/// A relay that only watches sees none of the file: its marker, written every
/// 64 KiB, never appears among the bytes that crossed. Unsealed (both ends'
/// consent), the same capture holds it: the watch itself works.
#[test]
fn a_watcher_on_the_path_sees_no_plaintext() {
    let marker = b"BRAID-PLAINTEXT-MARKER-7f3a";
    let data = content(3 << 20, marker);
    let seen = |allow_plain: bool, plain: bool| -> (bool, String) {
        let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let file = src.path().join("secret.bin");
        fs::write(&file, &data).unwrap();
        let server = serve(dst.path(), allow_plain);
        let r = relay(&server, Arc::new(|_, _, _| Act::Pass));
        let mut cfg = config(&r.addr, Kind::Send, false);
        cfg.plain = plain;
        let s = client::send(&cfg, &[file], "").unwrap();
        assert!(fs::read(dst.path().join("secret.bin")).unwrap() == data);
        thread::sleep(Duration::from_millis(200));
        let cap = r.captured.lock().unwrap();
        assert!(cap.len() > data.len(), "the relay carried the session");
        (
            cap.windows(marker.len()).any(|w| w == marker),
            s.sealed.to_owned(),
        )
    };
    assert_eq!(seen(false, false), (false, seal_suite()));
    let (found, suite) = seen(true, false);
    assert!(
        !found && suite != "plain",
        "a server that allows plain seals unless asked"
    );
    let (found, suite) = seen(true, true);
    assert!(
        found && suite == "plain",
        "unsealed by consent, the marker shows"
    );
}

/// The suite this machine's sessions are sealed with.
fn seal_suite() -> String {
    if braid_wire::seal::aes_is_fast() {
        "aes-256-gcm".into()
    } else {
        "chacha20-poly1305".into()
    }
}

/// A client that asks for an unsealed session from a server that does not
/// allow one is refused, and nothing moves.
#[test]
fn plain_needs_the_servers_consent() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = src.path().join("f");
    fs::write(&file, b"x").unwrap();
    let server = serve(dst.path(), false);
    let mut cfg = config(&server, Kind::Send, false);
    cfg.plain = true;
    let e = client::send(&cfg, &[file], "").unwrap_err();
    assert!(e.to_string().contains("--allow-plain"), "{e}");
    assert_eq!(fs::read_dir(dst.path()).unwrap().count(), 0);
}

/// A whole earlier session's bytes, replayed: the handshake's proof was for
/// another nonce, and the data connection's attach for a session that is over.
#[test]
fn an_earlier_sessions_bytes_replayed_move_nothing() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = src.path().join("f.bin");
    fs::write(&file, content(2 << 20, b"R")).unwrap();
    let server = serve(dst.path(), false);
    // Record what the client sent, connection by connection.
    let ups: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    {
        let (ups, server) = (Arc::clone(&ups), server.clone());
        thread::spawn(move || {
            for c in l.incoming() {
                let mut c = c.unwrap();
                let mut s = TcpStream::connect(&server).unwrap();
                let (mut c2, mut s2) = (c.try_clone().unwrap(), s.try_clone().unwrap());
                thread::spawn(move || {
                    let _ = std::io::copy(&mut s2, &mut c2);
                    let _ = c2.shutdown(Shutdown::Write);
                });
                let ups = Arc::clone(&ups);
                thread::spawn(move || {
                    let mut all = Vec::new();
                    let mut buf = [0u8; 65536];
                    while let Ok(n) = c.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        all.extend_from_slice(&buf[..n]);
                    }
                    let _ = s.shutdown(Shutdown::Write);
                    ups.lock().unwrap().push(all);
                });
            }
        });
    }
    client::send(&config(&addr, Kind::Send, false), &[file], "first/").unwrap();
    thread::sleep(Duration::from_millis(300));
    fs::remove_dir_all(dst.path().join("first")).unwrap();
    let recorded = ups.lock().unwrap().clone();
    assert!(recorded.len() >= 2, "a control and a data connection");
    for bytes in recorded {
        // The clear frames (Hello and Proof, or Attach) are what a server
        // answers first; the sealed records behind them are sent too, for
        // what they are worth, once it has answered.
        let frame_end =
            |at: usize| at + 4 + u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let clear = if bytes[4] == 1 {
            frame_end(frame_end(0))
        } else {
            frame_end(0)
        };
        let mut s = TcpStream::connect(&server).unwrap();
        s.write_all(&bytes[..clear]).unwrap();
        let mut c = Conn::new(s.try_clone().unwrap()).unwrap();
        // The first answer is in the clear: a challenge (then the refusal of
        // the old proof) or the refusal of the old attach.
        let answer = loop {
            match c.recv() {
                Ok(Message::Challenge { .. }) => continue,
                other => break other,
            }
        };
        match answer {
            Err(Error::Remote { code: 401, .. }) => {}
            other => panic!("a replay was answered {other:?}"),
        }
        let _ = s.write_all(&bytes[clear..]);
    }
    thread::sleep(Duration::from_millis(200));
    assert_eq!(
        fs::read_dir(dst.path()).unwrap().count(),
        0,
        "nothing landed"
    );
}

/// A relay that changes what the server announced in its Challenge (here:
/// that it allows unsealed sessions) makes the client's proof fail, though
/// the client's choice of suite is unchanged by it: the proof covers the
/// announcement as the client read it. Nothing moves.
#[test]
fn a_relay_that_changes_the_servers_suites_fails_the_proof() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = src.path().join("f");
    fs::write(&file, b"x").unwrap();
    let server = serve(dst.path(), false);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for client in l.incoming() {
            let mut client = client.unwrap();
            let mut upstream = TcpStream::connect(&server).unwrap();
            let Some(hello) = read_frame(&mut client) else {
                continue;
            };
            upstream.write_all(&hello).unwrap();
            let Some(mut challenge) = read_frame(&mut upstream) else {
                continue;
            };
            *challenge.last_mut().unwrap() |= Offer::PLAIN;
            client.write_all(&challenge).unwrap();
            let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
            thread::spawn(move || std::io::copy(&mut c2, &mut u2));
            let _ = std::io::copy(&mut upstream, &mut client);
        }
    });
    let e = client::send(&config(&addr, Kind::Send, false), &[file], "").unwrap_err();
    assert!(matches!(e, Error::Auth(_)), "{e}");
    assert_eq!(fs::read_dir(dst.path()).unwrap().count(), 0);
}

/// The client's first sealed message follows its proof without waiting for
/// the server's Welcome (a round trip sooner), and opens once the Welcome is
/// sent: a server that holds the token finds the Open already there.
#[test]
fn the_open_follows_the_proof_before_the_welcome() {
    use braid_wire::auth;
    use braid_wire::seal::Channel;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let server = thread::spawn(move || {
        let mut c = Conn::new(l.accept().unwrap().0).unwrap();
        let (ns, suites) = ([9u8; 16], Offer::here(false));
        let nc = answer_hello(&mut c, ns, suites).expect("a hello");
        let Ok(Message::Proof { offer, .. }) = c.recv() else {
            panic!("no proof");
        };
        let before_welcome = c.r.wait_readable(Duration::from_secs(10));
        let suite = Offer(offer).choose(suites).unwrap();
        let token = TOKEN.as_bytes();
        c.send(&Message::Welcome {
            mac: auth::server_proof(token, &nc, &ns, offer, suites.0, suite as u8),
            suite: suite as u8,
        })
        .unwrap();
        let agreed = session::Agreed {
            key: auth::session_key(token, &nc, &ns),
            suite,
        };
        c.seal(agreed.keys(Channel::Control, false));
        (before_welcome, c.recv())
    });
    let _ = client::bench(&config(&addr, Kind::Bench, false));
    let (before_welcome, first) = server.join().unwrap();
    assert!(before_welcome, "the client waited for the welcome");
    assert!(matches!(first, Ok(Message::Open(_))), "{first:?}");
}

/// Plays a server's first step: reads the client's Hello and answers it
/// with a Challenge of `nonce` and `suites`; the client's nonce.
fn answer_hello(c: &mut Conn, nonce: [u8; 16], suites: Offer) -> Option<[u8; 16]> {
    let Ok(Message::Hello { nonce: theirs, .. }) = c.recv() else {
        return None;
    };
    c.send(&Message::Challenge {
        version: braid_wire::VERSION,
        nonce,
        suites: suites.0,
    })
    .ok()?;
    Some(theirs)
}

/// A send (unsealed where `plain`) to a server at `addr` that stops
/// answering: the client gives up well before the server would have gone
/// (30 s), with a timeout; its error.
fn a_send_left_waiting(addr: &str, plain: bool) -> Error {
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("f");
    fs::write(&file, b"x").unwrap();
    let mut cfg = config(addr, Kind::Send, false);
    cfg.plain = plain;
    let began = std::time::Instant::now();
    let e = client::send(&cfg, &[file], "").unwrap_err();
    let waited = began.elapsed();
    assert!(e.is_timeout(), "{e}");
    assert!(waited < Duration::from_secs(25), "waited {waited:?}");
    e
}

/// A listener that accepts and never answers (a hung server, a tarpit):
/// the client gives up on its hello within seconds, saying so, rather than
/// waiting for ever.
#[test]
fn a_listener_that_says_nothing_is_left_after_the_hellos_wait() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let held = thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        thread::sleep(Duration::from_secs(30));
        drop(s);
    });
    let e = a_send_left_waiting(&addr, false);
    assert!(e.to_string().contains("hello"), "{e}");
    drop(held);
}

/// An unsealed session's client waits for the server's Welcome before it
/// sends anything more: a server that answers the Hello and then nothing
/// holds it no longer than a silent listener does.
#[test]
fn a_plain_session_is_left_by_a_server_silent_after_its_challenge() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let held = thread::spawn(move || {
        let mut c = Conn::new(l.accept().unwrap().0).unwrap();
        let _ = answer_hello(&mut c, [1; 16], Offer::here(true));
        thread::sleep(Duration::from_secs(30));
    });
    a_send_left_waiting(&addr, true);
    drop(held);
}

/// Something that plays the server without the token: the client refuses
/// its welcome, and writes nothing.
#[test]
fn a_server_without_the_token_is_refused_by_the_client() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for s in l.incoming() {
            let mut c = Conn::new(s.unwrap()).unwrap();
            let _ = answer_hello(&mut c, [1; 16], Offer::here(false));
            let _ = c.recv();
            let _ = c.send(&Message::Welcome {
                mac: [2; 32],
                suite: 2,
            });
        }
    });
    let dst = tempfile::tempdir().unwrap();
    let e = client::get(
        &config(&addr, Kind::Get, false),
        &["photos".into()],
        dst.path(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Auth(_)), "{e}");
    assert_eq!(fs::read_dir(dst.path()).unwrap().count(), 0);
}

/// A server that holds the token and offers a get names it was not asked
/// for (the scp CVE-2019-6111 pattern): refused before anything is written.
#[test]
fn a_server_cannot_give_a_get_names_it_did_not_ask_for() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for s in l.incoming() {
            let mut c = Conn::new(s.unwrap()).unwrap();
            let Ok(Message::Hello { version, nonce }) = c.recv() else {
                continue;
            };
            let token = Token::new(TOKEN).unwrap();
            if session::server_handshake(&mut c, &token, version, nonce, false).is_err() {
                continue;
            }
            let _ = c.recv(); // Open
            let _ = session::recv_manifest(&mut c, Default::default());
            let _ = c.send(&Message::Accepted { session: 7 });
            let evil = FileEntry {
                path: ".bashrc".into(),
                size: 5,
                mode: 0o644,
                mtime_ns: 0,
            };
            let _ = session::send_manifest(&mut c, &[evil]);
            let _ = c.recv();
        }
    });
    let dst = tempfile::tempdir().unwrap();
    fs::write(dst.path().join(".bashrc"), b"mine").unwrap();
    let e = client::get(
        &config(&addr, Kind::Get, false),
        &["photos".into()],
        dst.path(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("not below anything asked for"),
        "{e}"
    );
    assert_eq!(fs::read(dst.path().join(".bashrc")).unwrap(), b"mine");
    assert_eq!(fs::read_dir(dst.path()).unwrap().count(), 1);
}
