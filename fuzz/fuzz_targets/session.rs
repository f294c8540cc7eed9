//! The server's side of a whole session, after a valid handshake: any
//! frames, and any bytes that are not frames at all, sealed as a client with
//! the session's keys would seal them, on the control connection and on a
//! data connection attached once the server accepts. Everything the server
//! does with them runs: the record layer, the decoder, the session's checks
//! and state machines, the receiving root's file operations. It must answer
//! or close, never panic (a panic on any of its threads aborts the process,
//! which the fuzzer reports), and keep serving the next client.
#![no_main]

use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use braid::cancel::Cancel;
use braid::session::conn::Conn;
use braid::session::server::{self, Server};
use braid::session::{self, SocketOptions, Token};
use braid::telemetry::Output;
use braid_wire::Message;
use libfuzzer_sys::fuzz_target;

const TOKEN: &str = "fuzz-session-token";

/// A server on loopback for the whole run, its root in a directory of its
/// own; a panic on any thread ends the process.
fn server() -> &'static str {
    static ADDR: OnceLock<String> = OnceLock::new();
    ADDR.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default(info);
            std::process::abort();
        }));
        let root = std::env::temp_dir().join(format!("braid-fuzz-session-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let srv = Server::bind(server::Config {
            listen: "127.0.0.1:0".parse().unwrap(),
            root,
            token: Token::new(TOKEN).unwrap(),
            sock: SocketOptions::default(),
            pin_dir: "/nonexistent".into(),
            output: Output::Quiet,
            once: false,
            wait: None,
            limit_bps: None,
            allow_plain: false,
            limits: server::Limits {
                handshake: Duration::from_millis(500),
                idle: Duration::from_secs(1),
                ..Default::default()
            },
            cancel: Cancel::new(),
        })
        .unwrap();
        let addr = srv.local_addr().to_string();
        std::thread::spawn(move || srv.run());
        addr
    })
}

/// The input as units of bytes: a length byte, a flag byte (bit 0: for the
/// data connection; the rest: which frame the bytes fill, see `frame`), then
/// that many bytes.
fn units(mut data: &[u8]) -> impl Iterator<Item = (bool, Vec<u8>)> + '_ {
    std::iter::from_fn(move || {
        let (&len, rest) = data.split_first()?;
        let (&flag, rest) = rest.split_first()?;
        let n = (len as usize).min(rest.len());
        let (unit, rest) = rest.split_at(n);
        data = rest;
        Some((flag & 1 == 1, frame(flag >> 1, unit)))
    })
}

/// Fields taken from the front of a unit's bytes, zero once they run out.
struct Take<'a>(&'a [u8]);

impl Take<'_> {
    fn n<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        let k = N.min(self.0.len());
        b[..k].copy_from_slice(&self.0[..k]);
        self.0 = &self.0[k..];
        b
    }
    fn u8(&mut self) -> u8 {
        self.n::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.n())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.n())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.n())
    }
    fn name(&mut self) -> String {
        let k = (self.u8() as usize % 24).min(self.0.len());
        let s = String::from_utf8_lossy(&self.0[..k]).into_owned();
        self.0 = &self.0[k..];
        s
    }
}

/// The bytes a unit sends: a well-formed frame of a kind `which` picks, its
/// fields from the unit's bytes (a session goes further when its frames
/// decode), or the unit's bytes as they are.
fn frame(which: u8, unit: &[u8]) -> Vec<u8> {
    use braid_wire::{FileEntry, Kind, Mode, SessionParams};
    let mut t = Take(unit);
    let m = match which % 10 {
        1 => Message::Open(SessionParams {
            kind: [Kind::Bench, Kind::Send, Kind::Get][t.u8() as usize % 3],
            mode: [Mode::Single, Mode::Parallel, Mode::Tcpp, Mode::Auto][t.u8() as usize % 4],
            streams: t.u8() as u16 % 4 + 1,
            cc: String::new(),
            frac_cwnd: 100,
            strength_milli: 1000,
            duration_ms: t.u16() as u32 % 500 + 1,
            block_size: 4096 << (t.u8() % 4),
            flags: t.u8() as u32 & 1,
            limit_bps: 0,
        }),
        2 => Message::Manifest {
            files: (0..t.u8() % 4)
                .map(|_| FileEntry {
                    path: t.name(),
                    size: t.u16() as u64,
                    mode: t.u32() & 0o40777,
                    mtime_ns: 0,
                })
                .collect(),
            more: t.u8() & 1 == 1,
        },
        3 => Message::Block {
            file: t.u8() as u32 % 4,
            offset: t.u16() as u64,
            len: t.u16() as u32,
        },
        4 => Message::Ranges {
            file: t.u8() as u32 % 4,
            ranges: (0..t.u8() % 8)
                .map(|_| {
                    let a = t.u16() as u64;
                    (a, a + t.u16() as u64)
                })
                .collect(),
        },
        5 => Message::Verify {
            file: t.u8() as u32 % 4,
            hash: t.n(),
        },
        6 => Message::Close { bytes: t.u64() },
        7 => Message::Progress { bytes: t.u64() },
        8 => Message::Detach { stream: t.u16() },
        _ => return unit.to_vec(),
    };
    let mut out = Vec::new();
    braid_wire::encode(&m, &mut out);
    // What a frame leaves of its unit follows it: block data, or stray bytes.
    out.extend_from_slice(t.0);
    out
}

/// Whatever the server says within a moment; the session it accepted, if it did.
fn listen(c: &mut Conn, within: Duration) -> Option<u64> {
    c.r.set_deadline(Some(Instant::now() + within));
    let mut accepted = None;
    while let Ok(Some(m)) = c.recv_opt() {
        if let Message::Accepted { session } = m {
            accepted = Some(session);
        }
    }
    c.r.set_deadline(None);
    accepted
}

fuzz_target!(|data: &[u8]| {
    let addr = server();
    let Ok(stream) = TcpStream::connect(addr) else {
        panic!("the server stopped accepting");
    };
    let mut ctrl = Conn::new(stream).unwrap();
    let token = Token::new(TOKEN).unwrap();
    let agreed = session::client_handshake(&mut ctrl, &token, false)
        .expect("the server completes a valid handshake");
    let mut data_conn: Option<Conn> = None;
    let mut session = None;
    for (to_data, unit) in units(data) {
        if to_data {
            if data_conn.is_none() {
                session = session.or_else(|| listen(&mut ctrl, Duration::from_millis(10)));
                let Some(s) = session else { continue };
                let Ok(stream) = TcpStream::connect(addr) else { break };
                data_conn = session::attach(stream, s, 0, 1, &agreed).ok();
            }
            if let Some(d) = &mut data_conn {
                if d.w.send_encoded(&unit).is_err() {
                    break;
                }
            }
        } else if ctrl.w.send_encoded(&unit).is_err() {
            break;
        }
    }
    let _ = listen(&mut ctrl, Duration::from_millis(5));
});
