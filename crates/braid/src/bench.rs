//! Memory to memory, like iperf3: after attaching, a sending stream writes a
//! buffer over and over until the deadline, a receiving stream counts.

use std::net::Shutdown;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_wire::Message;

use crate::conn::Conn;
use crate::engine::Life;
use crate::error::Result;
use crate::pacer::Pacer;
use crate::session::unexpected;
use crate::telemetry::Telemetry;

const CHUNK: usize = 128 * 1024;

/// Writes until `deadline` (or a Ctrl-C: the bench then ends early with its summary, as
/// iperf3's does); returns the bytes written.
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
    while Instant::now() < deadline && !crate::engine::interrupted() {
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

/// The sending end's close: once its `n` streams are done (or `wait` has
/// passed), it tells its count and returns the receiver's.
pub fn close_sending(
    ctrl: &mut Conn,
    life: &Life,
    n: usize,
    wait: Duration,
    tel: &Telemetry,
) -> Result<u64> {
    life.finished.wait(n, &life.abort, wait);
    ctrl.send(&Message::Close { bytes: tel.total() })?;
    match ctrl.recv()? {
        Message::Close { bytes } => Ok(bytes),
        m => Err(unexpected("the receiver's count", &m)),
    }
}

/// The receiving end's close: the sender's count comes first, then the
/// streams drain and this end answers with what it got.
pub fn close_receiving(ctrl: &mut Conn, life: &Life, n: usize, tel: &Telemetry) -> Result<u64> {
    let sent = match ctrl.recv()? {
        Message::Close { bytes } => bytes,
        m => return Err(unexpected("the end of the bench", &m)),
    };
    life.finished.wait(n, &life.abort, Duration::from_secs(30));
    ctrl.send(&Message::Close { bytes: tel.total() })?;
    Ok(sent)
}
