//! What both ends share once a session is open: the data streams' life
//! (dialled and redialled by the client, accepted by the server), and the
//! control loops of the sending and the receiving end.

use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, Scope};
use std::time::{Duration, Instant};

use braid_wire::Message;

use crate::conn::{Conn, FrameWriter};
use crate::error::{Error, Result};
use crate::manifest::Source;
use crate::ranges::RangeSet;
use crate::receive::{self, Ended, RecvShared};
use crate::send::{self, Event, SendShared};
use crate::session::unexpected;

/// A lost stream is redialled this many times in a row before the session gives up.
const REDIALS: u32 = 5;

/// The first error of a session, and the flag that stops everything else.
#[derive(Default)]
pub struct Abort {
    flag: AtomicBool,
    first: Mutex<Option<Error>>,
}

impl Abort {
    pub fn fail(&self, e: Error) {
        let mut first = self.first.lock().unwrap();
        if first.is_none() {
            *first = Some(e);
        }
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Stops the session without an error of its own (the caller has one).
    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    pub fn take(&self) -> Option<Error> {
        self.first.lock().unwrap().take()
    }
}

/// How one connection of a stream ended.
pub enum StreamEnd {
    Finished,
    Lost(String),
    Fatal(Error),
}

/// Counts finished streams so a control loop can wait for all of them.
#[derive(Default)]
pub struct Finished {
    n: Mutex<usize>,
    cv: Condvar,
}

impl Finished {
    fn one(&self) {
        *self.n.lock().unwrap() += 1;
        self.cv.notify_all();
    }

    /// Waits until `n` streams finished, the session aborted, or `timeout` passed.
    pub fn wait(&self, n: usize, abort: &Abort, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let mut got = self.n.lock().unwrap();
        while *got < n {
            if abort.is_set() || Instant::now() >= end {
                return false;
            }
            got = self
                .cv
                .wait_timeout(got, Duration::from_millis(100))
                .unwrap()
                .0;
        }
        true
    }
}

/// A session's shared flags and counters, owned for the session's length.
#[derive(Default)]
pub struct Life {
    pub abort: Abort,
    pub done: AtomicBool,
    pub finished: Finished,
    pub reconnects: AtomicUsize,
}

impl Life {
    /// The end of a session's control exchange: streams ending from now on
    /// are no loss, and a failed exchange stops and closes every stream.
    pub fn end<T>(&self, r: Result<T>, tel: &crate::telemetry::Telemetry) -> Result<T> {
        self.done.store(true, Ordering::SeqCst);
        if r.is_err() {
            self.abort.stop();
            shut_all(tel);
        }
        r
    }

    pub fn streams(&self, n: usize, notes: Notes) -> Streams<'_> {
        Streams {
            n,
            abort: &self.abort,
            done: &self.done,
            finished: &self.finished,
            reconnects: &self.reconnects,
            notes,
        }
    }
}

/// Where a session tells of a stream lost and dialled again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notes {
    /// A line on stderr.
    Stderr,
    /// A JSON line on stdout among the interval records (see telemetry's format).
    Json,
    Off,
}

impl Notes {
    pub fn say(self, event: &'static str, stream: usize, why: &str, human: &str) {
        match self {
            Notes::Stderr => eprintln!("braid: {human}"),
            Notes::Json => crate::records::print(&crate::records::Event {
                event,
                stream,
                reason: why.to_owned(),
            }),
            Notes::Off => {}
        }
    }
}

/// What a session needs to run its streams.
pub struct Streams<'a> {
    pub n: usize,
    pub abort: &'a Abort,
    /// Set when the transfer is over: a stream ending now is no loss.
    pub done: &'a AtomicBool,
    pub finished: &'a Finished,
    pub reconnects: &'a AtomicUsize,
    pub notes: Notes,
}

impl Streams<'_> {
    /// Client side: dials every stream, and dials a lost one again.
    pub fn dial<'s, 'e: 's>(
        &'e self,
        scope: &'s Scope<'s, 'e>,
        dial: &'e (dyn Fn(usize) -> Result<Conn> + Sync),
        work: &'e (dyn Fn(usize, Conn) -> StreamEnd + Sync),
    ) {
        for i in 0..self.n {
            scope.spawn(move || {
                let mut failures = 0;
                while !self.abort.is_set() && !self.done.load(Ordering::SeqCst) {
                    let end = match dial(i) {
                        Ok(conn) => work(i, conn),
                        Err(e) => StreamEnd::Lost(e.to_string()),
                    };
                    match end {
                        StreamEnd::Finished => break,
                        StreamEnd::Fatal(e) => {
                            self.abort.fail(e);
                            break;
                        }
                        StreamEnd::Lost(_)
                            if self.done.load(Ordering::SeqCst) || self.abort.is_set() =>
                        {
                            break
                        }
                        StreamEnd::Lost(why) => {
                            failures += 1;
                            if failures > REDIALS {
                                self.abort.fail(Error::Protocol(format!(
                                    "stream {i} failed {REDIALS} times in a row: {why}"
                                )));
                                break;
                            }
                            self.notes.say(
                                "stream_redialled",
                                i,
                                &why,
                                &format!("stream {i} lost ({why}); reconnecting"),
                            );
                            self.reconnects.fetch_add(1, Ordering::Relaxed);
                            thread::sleep(Duration::from_millis(100 * failures as u64));
                        }
                    }
                }
                self.finished.one();
            });
        }
    }

    /// Server side: runs every data connection that attaches to the session.
    pub fn accept<'s, 'e: 's>(
        &'e self,
        scope: &'s Scope<'s, 'e>,
        incoming: Receiver<(u16, Conn)>,
        work: &'e (dyn Fn(usize, Conn) -> StreamEnd + Sync),
    ) {
        scope.spawn(move || {
            let mut seen = vec![false; self.n];
            while !self.abort.is_set() && !self.done.load(Ordering::SeqCst) {
                let (i, conn) = match incoming.recv_timeout(Duration::from_millis(100)) {
                    Ok(x) => x,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                let i = i as usize;
                if i >= self.n {
                    let mut conn = conn;
                    conn.send_error(&Error::Protocol(format!(
                        "stream {i} of a session of {}",
                        self.n
                    )));
                    continue;
                }
                if seen[i] {
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                seen[i] = true;
                scope.spawn(move || match work(i, conn) {
                    StreamEnd::Finished => self.finished.one(),
                    StreamEnd::Fatal(e) => self.abort.fail(e),
                    StreamEnd::Lost(why) => {
                        if !self.done.load(Ordering::SeqCst) {
                            self.notes.say(
                                "stream_lost",
                                i,
                                &why,
                                &format!(
                                    "stream {i} lost ({why}); waiting for the peer to reconnect"
                                ),
                            );
                        }
                    }
                });
            }
        });
    }
}

/// The sending end's stream work.
pub fn send_work(shared: &Arc<SendShared>) -> impl Fn(usize, Conn) -> StreamEnd + Sync + '_ {
    move |i, conn| {
        let gen = shared.take_over(i);
        if send::worker(i, gen, conn, Arc::clone(shared)) {
            StreamEnd::Finished
        } else {
            StreamEnd::Lost("the connection ended".into())
        }
    }
}

/// The receiving end's stream work.
pub fn receive_work<'a>(
    shared: &'a RecvShared,
    ctrl: &'a Mutex<FrameWriter>,
) -> impl Fn(usize, Conn) -> StreamEnd + Sync + 'a {
    move |i, conn| match receive::worker(i, conn, shared) {
        Ended::Detached => StreamEnd::Finished,
        Ended::Lost(e) => StreamEnd::Lost(e.to_string()),
        Ended::Fatal(e) => {
            // The sender hears why on the control connection, then everything stops.
            ctrl.lock().unwrap().send_error(&e);
            StreamEnd::Fatal(e)
        }
    }
}

/// Closes every data connection so that blocked workers return.
pub fn shut_all(tel: &crate::telemetry::Telemetry) {
    tel.for_each_socket(|s| {
        let _ = s.shutdown(Shutdown::Both);
    });
}

/// The sending end's control loop: a file is announced as verified-ready
/// (`Verify`) once all its blocks are acknowledged and its hash is known;
/// the session ends with `Close` once the receiver has confirmed every file.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Asks every session of this process to stop: a sender tells its peer, a receiver
/// journals what it holds; both end with `Error::Interrupted`. Safe in a signal handler.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub fn drive_sender(
    ctrl: Conn,
    sources: &[Source],
    events_tx: Sender<Event>,
    events: Receiver<Event>,
    shared: &Arc<SendShared>,
    life: &Life,
    notes: Notes,
) -> Result<u64> {
    let (abort, done) = (&life.abort, &life.done);
    let Conn { mut r, mut w } = ctrl;
    let reader_tx = events_tx.clone();
    thread::spawn(move || loop {
        let m = r.recv();
        let end = m.is_err() || matches!(m, Ok(Message::Close { .. }));
        if reader_tx.send(Event::Control(m)).is_err() || end {
            return;
        }
    });
    let finisher = send::spawn_finisher(sources.to_vec(), Arc::clone(shared), events_tx);
    let n = sources.len();
    // A directory has no data and no hash: the receiver makes it before any block.
    let dirs: Vec<bool> = sources.iter().map(|s| s.entry.is_dir()).collect();
    let mut acked = vec![false; n];
    let mut hashes: Vec<Option<[u8; 32]>> = vec![None; n];
    let mut announced = dirs.clone();
    let mut verified = dirs.iter().filter(|d| **d).count();
    let fail = |w: &mut FrameWriter, e: Error| -> Result<u64> {
        w.send_error(&e);
        abort.stop();
        Err(e)
    };
    while verified < n {
        if interrupted() {
            return fail(&mut w, Error::Interrupted);
        }
        let ev = match events.recv_timeout(Duration::from_millis(200)) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) => {
                if let Some(e) = abort.take() {
                    // Streams failing is often the peer stopping: its own word
                    // on the control connection says more than the streams can.
                    return match peer_reason(&events) {
                        Some(remote) => Err(remote),
                        None => fail(&mut w, e),
                    };
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::Protocol("the session's event channel closed".into()))
            }
        };
        let f = match ev {
            Event::Acked(f) if dirs[f as usize] => continue,
            Event::Acked(f) => {
                acked[f as usize] = true;
                let _ = finisher.send(f);
                f
            }
            Event::Hashed(f, h) => {
                hashes[f as usize] = Some(h);
                f
            }
            Event::SourceFailed(_, why) => {
                return fail(
                    &mut w,
                    Error::io(why, std::io::Error::other("source changed")),
                )
            }
            Event::StreamLost(i, why) => {
                notes.say(
                    "stream_lost",
                    i,
                    &why,
                    &format!("stream {i} lost ({why}); its blocks go to the others"),
                );
                continue;
            }
            Event::Control(Ok(Message::Verify { file, hash })) => {
                let ours = hashes.get(file as usize).copied().flatten();
                if !announced.get(file as usize).copied().unwrap_or(false) || ours.is_none() {
                    return fail(
                        &mut w,
                        Error::Protocol(format!(
                            "the receiver verified file {file} before it was announced"
                        )),
                    );
                }
                if ours != Some(hash) {
                    return fail(
                        &mut w,
                        Error::Verify(format!(
                            "{}: the receiver's BLAKE3 differs",
                            sources[file as usize].entry.path
                        )),
                    );
                }
                verified += 1;
                continue;
            }
            Event::Control(Ok(m)) => return fail(&mut w, unexpected("a verification", &m)),
            Event::Control(Err(e)) => {
                abort.stop();
                return Err(e);
            }
        };
        let i = f as usize;
        if acked[i] && !announced[i] {
            if let Some(hash) = hashes[i] {
                announced[i] = true;
                w.send(&Message::Verify { file: f, hash })?;
            }
        }
    }
    done.store(true, Ordering::SeqCst);
    let sent = shared.tel.total();
    w.send(&Message::Close { bytes: sent })?;
    loop {
        match events.recv_timeout(Duration::from_secs(30)) {
            Ok(Event::Control(Ok(Message::Close { bytes }))) => return Ok(bytes),
            Ok(Event::Control(Err(e))) => return Err(e),
            Ok(_) => {}
            Err(_) => {
                return Err(Error::Protocol(
                    "the receiver did not confirm the end".into(),
                ))
            }
        }
    }
}

/// Verified files wait this long at most for others to share their
/// filesystem sync, and this many make a batch on their own.
const PUBLISH_WAIT: Duration = Duration::from_millis(200);
const PUBLISH_BATCH: usize = 4096;
/// A batch closes when the sender has said nothing more for this long.
const PUBLISH_QUIET: Duration = Duration::from_millis(20);

/// The receiving end's control loop: checks each file the sender announces
/// and publishes them in batches (one filesystem sync for many files),
/// journals progress every second, and answers `Close`. Whatever ends the
/// session, the sender hears why.
pub fn drive_receiver(
    mut r: crate::conn::FrameReader,
    w: &Mutex<FrameWriter>,
    shared: &RecvShared,
    life: &Life,
) -> Result<u64> {
    let (abort, done) = (&life.abort, &life.done);
    let stop = AtomicBool::new(false);
    let result = thread::scope(|s| {
        s.spawn(|| {
            let mut last = Instant::now();
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(50));
                if interrupted() {
                    // The session ends here: the peer is told (it stops sending and closes
                    // the control connection, which ends the loop below), the journals are
                    // written on the way out.
                    abort.fail(Error::Interrupted);
                    w.lock().unwrap().send_error(&Error::Interrupted);
                    shut_all(&shared.tel);
                    return;
                }
                if last.elapsed() >= Duration::from_secs(1) {
                    last = Instant::now();
                    if let Err(e) = shared.sync_journals() {
                        w.lock().unwrap().send_error(&e);
                        abort.fail(e);
                        shut_all(&shared.tel);
                        return;
                    }
                }
            }
        });
        let publish = || -> Result<()> {
            for (file, hash) in shared.publish()? {
                w.lock().unwrap().send(&Message::Verify { file, hash })?;
            }
            Ok(())
        };
        let mut batch_start = None::<Instant>;
        let result = (|| loop {
            if let Some(t) = batch_start {
                let left = PUBLISH_WAIT.saturating_sub(t.elapsed());
                if left.is_zero() || !r.wait_readable(left.min(PUBLISH_QUIET)) {
                    publish()?;
                    batch_start = None;
                }
            }
            let m = match r.recv() {
                Ok(m) => m,
                Err(e) => return Err(abort.take().unwrap_or(e)),
            };
            match m {
                Message::Verify { file, hash } => {
                    shared.verify(file, &hash)?;
                    batch_start.get_or_insert_with(Instant::now);
                    if shared.pending() >= PUBLISH_BATCH {
                        publish()?;
                        batch_start = None;
                    }
                }
                Message::Close { .. } => {
                    publish()?;
                    if !shared.all_published() {
                        return Err(Error::Protocol(
                            "the sender closed before every file was verified".into(),
                        ));
                    }
                    shared.finish()?;
                    done.store(true, Ordering::SeqCst);
                    let got = shared.tel.total();
                    w.lock().unwrap().send(&Message::Close { bytes: got })?;
                    return Ok(got);
                }
                m => return Err(unexpected("a verification or the end", &m)),
            }
        })();
        stop.store(true, Ordering::SeqCst);
        result
    });
    if let Err(e) = &result {
        // Best effort: the peer may have gone, or have said why itself.
        if !matches!(e, Error::Remote { .. } | Error::Connect { .. }) {
            w.lock().unwrap().send_error(e);
        }
        abort.stop();
        shut_all(&shared.tel);
        // Whatever is on disk stays useful for --resume, unless the data is bad.
        match e {
            Error::Verify(_) => shared.discard_all(),
            Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC) => {
                shared.discard_all()
            }
            _ => shared.keep_for_resume(),
        }
    }
    result
}

/// An error the peer sent on the control connection within a second, if any.
fn peer_reason(events: &Receiver<Event>) -> Option<Error> {
    let end = Instant::now() + Duration::from_secs(1);
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match events.recv_timeout(left) {
            Ok(Event::Control(Err(e @ Error::Remote { .. }))) => return Some(e),
            Ok(Event::Control(Err(_))) | Err(_) => return None,
            Ok(_) => {}
        }
    }
    None
}

/// Reads the receiver's `Ranges`, one per file of the manifest.
/// Each frame is bounded by the codec; `max_ranges` bounds them all.
pub fn read_ranges(ctrl: &mut Conn, n: usize, max_ranges: u64) -> Result<Vec<RangeSet>> {
    let mut held = vec![RangeSet::new(); n];
    let mut seen = 0u64;
    for _ in 0..n {
        match ctrl.recv()? {
            Message::Ranges { file, ranges } if (file as usize) < n => {
                seen += ranges.len() as u64;
                if seen > max_ranges {
                    return Err(Error::refused(
                        crate::error::Code::TooLarge,
                        format!("the receiver says it holds more than {max_ranges} ranges"),
                    ));
                }
                held[file as usize] = RangeSet::from_ranges(&ranges)
            }
            m => return Err(unexpected("the receiver's ranges", &m)),
        }
    }
    Ok(held)
}

/// Tells the sender what the receiver holds of each file.
pub fn send_held(ctrl: &mut Conn, shared: &RecvShared) -> Result<()> {
    for (i, r) in shared.held().into_iter().enumerate() {
        ctrl.send(&Message::Ranges {
            file: i as u32,
            ranges: r,
        })?;
    }
    Ok(())
}

/// A channel for the sending end's events.
pub fn events() -> (Sender<Event>, Receiver<Event>) {
    mpsc::channel()
}
