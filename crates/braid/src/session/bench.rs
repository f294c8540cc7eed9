//! Memory to memory, like iperf3: after attaching, a sending stream writes a
//! buffer over and over until the deadline, a receiving stream counts.

use std::io::ErrorKind;
use std::net::Shutdown;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use braid_wire::Message;

use crate::cancel::{Cancel, WakeGuard};
use crate::error::{Error, Result};
use crate::proto::unexpected;
use crate::session::conn::{Bell, Conn, FrameReader};
use crate::session::engine::Life;
use crate::session::pacer::Pacer;
use crate::session::stamp::Teller;
use crate::telemetry::Telemetry;

const CHUNK: usize = 128 * 1024;
/// After the sender's close, how long the last bytes of its streams may take to arrive.
const TAIL: Duration = Duration::from_secs(5);
/// How often a receiving end's wait for the sender's close looks at the session's silence.
const IDLE_LOOK: Duration = Duration::from_secs(1);

fn stalled(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// Shuts stream `stream`'s socket (telemetry holds it) in direction `how`
/// when `cancel` fires, to end a socket call blocked on it; for as long as
/// the guard lives.
fn wake_on(cancel: &Cancel, tel: &Arc<Telemetry>, stream: usize, how: Shutdown) -> WakeGuard {
    let tel = Arc::clone(tel);
    cancel.on_cancel(move || {
        tel.with_socket(stream, |s| s.shutdown(how));
    })
}

/// Writes until `deadline` (or a Ctrl-C: the bench then ends early with its summary, as
/// iperf3's does); returns the bytes written. A write that cannot go on (a
/// stalled peer) waits until about the deadline, and a Ctrl-C shuts the
/// socket for writing, which ends a blocked write at once.
pub fn send(
    stream: usize,
    conn: Conn,
    deadline: Instant,
    tel: &Arc<Telemetry>,
    pacer: Option<&Pacer>,
    cancel: &Cancel,
    keep: &(dyn Fn() -> bool + Sync),
) -> u64 {
    tel.set_socket(stream, conn.stream());
    let mut timeout = Duration::MAX;
    let _woken = wake_on(cancel, tel, stream, Shutdown::Write);
    let Conn { r, mut w } = conn;
    let heard = hear_bottleneck(r, tel);
    let mut n = 0;
    // `keep` turns false when a steer lets this stream go: it ends as at the
    // deadline, and its connection is let go at once (at the deadline the
    // socket stays for the summary's count of the tail's retransmits).
    let mut left = false;
    'run: while Instant::now() < deadline {
        if !keep() {
            left = true;
            break;
        }
        if let Some(p) = pacer {
            p.wait(CHUNK);
        }
        if w.stage_zeros(CHUNK).is_err() {
            break;
        }
        // The record goes out whole or the run ends: a record cut short is
        // no data at the receiver, and counts at neither end.
        loop {
            if cancel.is_cancelled() {
                break 'run;
            }
            // A write blocked by a stalled peer ends near the deadline: the
            // timeout is cut to what is left of the run whenever that falls
            // below half of it (a few calls in a whole run, not one a write),
            // so a call overruns the deadline by at most what was left.
            let left = deadline.saturating_duration_since(Instant::now());
            if left < timeout / 2 {
                timeout = left.max(Duration::from_millis(1));
                let _ = w.stream().set_write_timeout(Some(timeout));
            }
            let wrote = w.write_staged();
            // Awake between two writes: the steer's look, if one is due.
            tel.look_if_due(stream, w.stream());
            match wrote {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if stalled(&e) && Instant::now() < deadline => {}
                Err(_) => break 'run,
            }
        }
        n += CHUNK as u64;
        tel.add(stream, CHUNK as u64);
    }
    w.finish();
    // The receiver closes once it has read the end; a peer that does not
    // is not waited for: the listener stops at once.
    let _ = w.stream().shutdown(Shutdown::Read);
    let _ = heard.join();
    if left {
        tel.release(stream);
    }
    n
}

/// What a receiving end says on a bench's data connection: the bottleneck
/// its arrivals show, kept for the sending end's steer, until the
/// connection ends.
fn hear_bottleneck(mut r: FrameReader, tel: &Arc<Telemetry>) -> thread::JoinHandle<()> {
    let tel = Arc::clone(tel);
    thread::spawn(move || {
        while let Ok(Some(m)) = r.recv_opt() {
            if let Message::Bottleneck { bytes_per_sec } = m {
                // A word no receiver could have measured does not reach the steer.
                let _ = tel.hear_bottleneck(bytes_per_sec);
            }
        }
    })
}

/// Counts until the sender closes, or the session is `over` (the ends have
/// told their counts: what the sender's buffers still hold is not waited
/// for), or a Ctrl-C; the last two reset the connection so the sender stops
/// too. Returns the bytes read.
pub fn receive(
    stream: usize,
    conn: Conn,
    tel: &Arc<Telemetry>,
    cancel: &Cancel,
    over: &Cancel,
) -> u64 {
    tel.set_socket(stream, conn.stream());
    // A shutdown ends the blocked read; the reset follows below, once no
    // thread waits on the socket (Linux refuses to dissolve one that has).
    let _woken = wake_on(cancel, tel, stream, Shutdown::Read);
    let _ended = wake_on(over, tel, stream, Shutdown::Read);
    let Conn { mut r, mut w } = conn;
    // A socket that refuses stamps only leaves the bottleneck unseen.
    let _ = r.stamp(Arc::clone(&tel.arrivals));
    let mut teller = Teller::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut n = 0;
    // Only records that open count; the sender's end, a reset or a record
    // cut short at its deadline all end the count.
    while !cancel.is_cancelled() && !over.is_cancelled() {
        match r.read_some(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => {
                n += k as u64;
                tel.add(stream, k as u64);
                // The word is a hint: a sender gone deaf ends the count anyway.
                if let Some(m) = teller.due(tel) {
                    let _ = w.send(&m);
                }
            }
        }
    }
    if cancel.is_cancelled() || over.is_cancelled() {
        crate::session::conn::reset(r.stream());
    }
    // Closed now, so the sender sees its stream's end (a stream that left
    // would otherwise stay open until the session's end).
    tel.release(stream);
    n
}

/// The sending end's close: once its streams are done (at least `n`, and
/// every one that joined; or `wait` has passed), it tells its count and
/// returns the receiver's.
pub fn close_sending(
    ctrl: &mut Conn,
    life: &Life,
    n: usize,
    wait: Duration,
    tel: &Telemetry,
) -> Result<u64> {
    life.tally.wait(|started| n.max(started), &life.abort, wait);
    ctrl.send(&Message::Close { bytes: tel.total() })?;
    match answer(ctrl, life)? {
        Message::Close { bytes } => Ok(bytes),
        m => Err(unexpected("the receiver's count", &m)),
    }
}

/// The peer's closing message; after a Ctrl-C, a peer that does not answer
/// within a few seconds is not waited for.
fn answer(ctrl: &mut Conn, life: &Life) -> Result<Message> {
    if life.interrupted() {
        ctrl.r
            .set_deadline(Some(Instant::now() + Duration::from_secs(3)));
    }
    ctrl.recv().map_err(|e| stopped_or(life, e))
}

/// A read that failed once this end was interrupted failed by the stop (the
/// sender, told of it, closed): the stop is the session's end, not the read.
fn stopped_or(life: &Life, e: Error) -> Error {
    if life.interrupted() {
        Error::Interrupted
    } else {
        e
    }
}

/// The receiving end's close: its streams end when the sender closes them
/// (or a Ctrl-C here closes them), or the sender's count arrives first (only
/// the sender knows how many streams joined); this end then waits for every
/// stream to see the end of its data and answers with what it got.
pub fn close_receiving(
    ctrl: &mut Conn,
    life: &Life,
    wait: Duration,
    tel: &Telemetry,
) -> Result<u64> {
    let end = Instant::now() + wait;
    // Woken by the sender's word, by a stream that starts or finishes here,
    // or by the session's stop: nothing to look at on a timer.
    let bell = Arc::new(Bell::new().map_err(|e| Error::io("creating the bench's wake-up", e))?);
    life.tally.attach(Arc::clone(&bell));
    let _stopped = life.abort.on_stop({
        let bell = Arc::clone(&bell);
        move || bell.ring()
    });
    let began = Instant::now();
    let said = loop {
        bell.clear();
        let c = life.tally.counts();
        let left = end.saturating_duration_since(Instant::now());
        if life.abort.is_set() || (c.started > 0 && c.finished >= c.started) || left.is_zero() {
            break answer(ctrl, life);
        }
        if ctrl.r.wait_readable_or(&bell, left.min(IDLE_LOOK)) {
            // The sender's keepalive (its tenth quiet second) is no close:
            // back to watching the streams and the stop, not a read that
            // waits for the next message however long the bench lasts.
            match ctrl.r.recv_any() {
                Ok(Message::Keepalive) => continue,
                said => break said.map_err(|e| stopped_or(life, e)),
            }
        }
        // A sender that attached nothing and says nothing is not waited for
        // as long as its bench would last.
        if let Some(e) = ctrl.r.idle_error(began) {
            return Err(e);
        }
    };
    life.tally.wait(|started| started, &life.abort, TAIL);
    let sent = match said? {
        Message::Close { bytes } => bytes,
        m => return Err(unexpected("the end of the bench", &m)),
    };
    ctrl.send(&Message::Close { bytes: tel.total() })?;
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};
    use std::sync::mpsc;

    use super::*;
    use crate::cancel::Cancel;
    use crate::telemetry::Output;

    // A bench longer than the keepalive period: the sender's keepalive must
    // not leave the receiving end in a read that only the sender's close
    // ends, deaf to its own Ctrl-C.
    #[test]
    fn a_receiving_end_past_a_keepalive_still_hears_its_stop() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut sender = Conn::new(TcpStream::connect(l.local_addr().unwrap()).unwrap()).unwrap();
        let mut ctrl = Conn::new(l.accept().unwrap().0).unwrap();
        let user = Cancel::new();
        let life = Life::new(&user);
        let tel = Telemetry::new(1, Output::Quiet);
        let (tx, rx) = mpsc::channel();
        thread::scope(|s| {
            s.spawn(|| {
                let r = close_receiving(&mut ctrl, &life, Duration::from_secs(60), &tel);
                tx.send(r.map_err(|e| e.to_string())).unwrap();
            });
            sender.send(&Message::Keepalive).unwrap();
            thread::sleep(Duration::from_millis(300));
            assert!(rx.try_recv().is_err(), "a keepalive does not end the wait");
            user.cancel();
            let r = rx.recv_timeout(Duration::from_secs(10));
            // Unblocks the old shape's read, so a failure fails rather than hangs.
            sender.send(&Message::Close { bytes: 0 }).unwrap();
            match r {
                Ok(Err(e)) => assert!(e.contains("nterrupt"), "{e}"),
                other => panic!("the stop was not heard: {other:?}"),
            }
        });
    }
}
