//! Memory to memory, like iperf3: after attaching, a sending stream writes a
//! buffer over and over until the deadline, a receiving stream counts.

use std::net::Shutdown;
use std::sync::Arc;
use std::time::Instant;

use crate::conn::Conn;
use crate::pacer::Pacer;
use crate::telemetry::Telemetry;

const CHUNK: usize = 128 * 1024;

/// Writes until `deadline`; returns the bytes written.
pub fn send(
    stream: usize,
    conn: Conn,
    deadline: Instant,
    tel: &Arc<Telemetry>,
    pacer: Option<&Pacer>,
) -> u64 {
    tel.set_socket(stream, conn.stream());
    let Conn { r: _r, mut w } = conn;
    let buf = vec![0u8; CHUNK];
    let mut n = 0;
    while Instant::now() < deadline {
        if let Some(p) = pacer {
            p.wait(CHUNK);
        }
        if w.send_raw(&buf).is_err() {
            break;
        }
        n += CHUNK as u64;
        tel.add(stream, CHUNK as u64);
    }
    let _ = w.stream().shutdown(Shutdown::Write);
    n
}

/// Counts until the sender closes; returns the bytes read.
pub fn receive(stream: usize, conn: Conn, tel: &Arc<Telemetry>) -> u64 {
    tel.set_socket(stream, conn.stream());
    let Conn { mut r, w: _w } = conn;
    let mut buf = vec![0u8; 256 * 1024];
    let mut n = 0;
    while let Ok(k) = r.read_some(&mut buf) {
        if k == 0 {
            break;
        }
        n += k as u64;
        tel.add(stream, k as u64);
    }
    n
}
