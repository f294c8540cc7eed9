//! What both ends share once a session is open: the data streams' life
//! (dialled and redialled by the client, accepted by the server), and the
//! control loops of the sending and the receiving end.

use std::net::Shutdown;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, Scope};
use std::time::{Duration, Instant};

use braid_wire::Message;

use crate::cancel::{Cancel, WakeGuard};
use crate::error::{Error, Result};
use crate::files::manifest::Source;
use crate::files::ranges::RangeSet;
use crate::proto::receiver::{ReceiverCore, Step};
use crate::proto::sender::Action;
use crate::proto::steer::StreamControl;
use crate::proto::steer::{Steer, Steering, StreamView};
use crate::proto::{unexpected, Answer};
use crate::session::conn::{Bell, Conn, FrameWriter};
use crate::session::receive::{self, Ended, RecvShared};
use crate::session::send::{self, Event, SendShared};
use crate::steer::plan::MAX_STREAMS;
use crate::telemetry::{thread_cpu, Telemetry};

/// A lost stream is redialled this many times in a row before the session gives up.
const REDIALS: u32 = 5;

/// The first error of a session, and the signal that stops everything else.
#[derive(Default)]
pub struct Abort {
    stop: Cancel,
    first: Mutex<Option<Error>>,
}

impl Abort {
    pub fn fail(&self, e: Error) {
        let mut first = self.first.lock().unwrap();
        if first.is_none() {
            *first = Some(e);
        }
        drop(first);
        self.stop.cancel();
    }

    /// Stops the session without an error of its own (the caller has one).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    pub fn is_set(&self) -> bool {
        self.stop.is_cancelled()
    }

    pub fn take(&self) -> Option<Error> {
        self.first.lock().unwrap().take()
    }

    /// Runs `wake` when the session stops, for as long as the guard lives.
    pub fn on_stop(&self, wake: impl Fn() + Send + Sync + 'static) -> WakeGuard {
        self.stop.on_cancel(wake)
    }
}

/// How one connection of a stream ended.
pub enum StreamEnd {
    Finished,
    Lost(String),
    Fatal(Error),
}

/// Streams under way and streams finished, so a control loop can wait for
/// all of them. Every change, and the session's stop, wakes whoever waits:
/// a thread on the condition variable, a poll on an attached bell. Cheap to
/// clone; every clone is the same tally.
#[derive(Clone, Default)]
pub struct Tally(Arc<TallyInner>);

#[derive(Default)]
struct TallyInner {
    counts: Mutex<Counts>,
    cv: Condvar,
    bell: Mutex<Option<Arc<Bell>>>,
}

/// Streams under way that will count in `finished` when they end (the
/// client's dialling threads, the server's accepted connections; a lost one
/// does not count), and those that finished.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub started: usize,
    pub finished: usize,
}

impl Tally {
    pub fn counts(&self) -> Counts {
        *self.0.counts.lock().unwrap()
    }

    fn change(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.0.counts.lock().unwrap());
        self.poke();
    }

    fn start(&self) {
        self.change(|c| c.started += 1);
    }

    fn lost(&self) {
        self.change(|c| c.started = c.started.saturating_sub(1));
    }

    fn finish(&self) {
        self.change(|c| c.finished += 1);
    }

    /// Wakes every waiter to look again. The lock is taken first, so a waiter
    /// between its look and its wait cannot miss it.
    fn poke(&self) {
        drop(self.0.counts.lock().unwrap());
        self.0.cv.notify_all();
        if let Some(b) = self.0.bell.lock().unwrap().as_ref() {
            b.ring();
        }
    }

    /// From now on, every change rings `bell` too.
    pub fn attach(&self, bell: Arc<Bell>) {
        *self.0.bell.lock().unwrap() = Some(bell);
    }

    /// Waits until `want(started)` streams finished (what is wanted may grow
    /// while streams join), the session stopped, or `timeout` passed.
    pub fn wait(&self, want: impl Fn(usize) -> usize, abort: &Abort, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let _stopped = abort.on_stop({
            let t = self.clone();
            move || t.poke()
        });
        let mut c = self.0.counts.lock().unwrap();
        loop {
            if c.finished >= want(c.started) {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if abort.is_set() || left.is_zero() {
                return false;
            }
            c = self.0.cv.wait_timeout(c, left).unwrap().0;
        }
    }
}

/// A session's shared flags and counters, owned for the session's length.
pub struct Life {
    pub abort: Abort,
    /// Fired when the transfer is over (see `end`).
    pub done: Cancel,
    pub tally: Tally,
    pub reconnects: AtomicUsize,
    /// The caller's signal: firing it stops this session (and says so to the peer).
    pub user: Cancel,
    _linked: WakeGuard,
}

impl Life {
    pub fn new(user: &Cancel) -> Life {
        Life::counting(user, Tally::default())
    }

    /// A session whose streams arrive through `arrivals`' door, counted in
    /// its tally from the moment they are admitted.
    pub fn arriving(user: &Cancel, arrivals: &Arrivals) -> Life {
        Life::counting(user, arrivals.tally.clone())
    }

    fn counting(user: &Cancel, tally: Tally) -> Life {
        let abort = Abort::default();
        let stop = abort.stop.clone();
        Life {
            _linked: user.on_cancel(move || stop.cancel()),
            abort,
            done: Cancel::new(),
            tally,
            reconnects: AtomicUsize::new(0),
            user: user.clone(),
        }
    }

    /// The caller stopped the session.
    pub fn interrupted(&self) -> bool {
        self.user.is_cancelled()
    }

    /// The end of a session's control exchange: streams ending from now on
    /// are no loss, and a failed exchange stops and closes every stream.
    pub fn end<T>(&self, r: Result<T>, tel: &crate::telemetry::Telemetry) -> Result<T> {
        self.done.cancel();
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
            tally: &self.tally,
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
            Notes::Stderr => crate::errln!("braid: {human}"),
            Notes::Json => crate::records::print(&crate::records::Event {
                event,
                stream,
                reason: why.to_owned(),
            }),
            Notes::Off => {}
        }
    }
}

/// A data connection that attached to a session, by stream index; `None`
/// only wakes the session's accept loop.
pub type Arrival = Option<(u16, Conn)>;

/// The server side's end of a session's attach channel, with a sender of its
/// own for waking the loop that takes from it, and the session's tally.
pub struct Arrivals {
    rx: Receiver<Arrival>,
    wake: Sender<Arrival>,
    tally: Tally,
    live: Arc<Live>,
}

/// Connections of each stream index that are open: a stream dialled again
/// may overlap the connection it replaces for a moment, no more. A peer that
/// attaches the same stream over and over gets no thread and no buffers for it.
#[derive(Default)]
struct Live(Mutex<std::collections::HashMap<u16, usize>>);

/// Open connections one stream index may have at once.
pub const LIVE_PER_STREAM: usize = 2;

impl Live {
    fn enter(&self, stream: u16) -> bool {
        let mut m = self.0.lock().unwrap();
        let n = m.entry(stream).or_insert(0);
        if *n >= LIVE_PER_STREAM {
            return false;
        }
        *n += 1;
        true
    }

    fn leave(&self, stream: u16) {
        if let Some(n) = self.0.lock().unwrap().get_mut(&stream) {
            *n = n.saturating_sub(1);
        }
    }
}

impl Arrivals {
    /// The door the attaching connections come through, and the session's end.
    pub fn channel() -> (Door, Arrivals) {
        let (tx, rx) = mpsc::channel();
        let tally = Tally::default();
        let live = Arc::new(Live::default());
        let door = Door {
            tx: tx.clone(),
            tally: tally.clone(),
            live: Arc::clone(&live),
        };
        (
            door,
            Arrivals {
                rx,
                wake: tx,
                tally,
                live,
            },
        )
    }
}

/// Where an accepted attach enters its session. The stream counts as started
/// the moment its attach is accepted, before the session's accept loop takes
/// it from the channel: a peer that attaches and at once tells its close is
/// then waited for, not answered as if no stream had come.
#[derive(Clone)]
pub struct Door {
    tx: Sender<Arrival>,
    tally: Tally,
    live: Arc<Live>,
}

impl Door {
    /// Counts the stream in, runs `welcome` (the attach's answer) and hands
    /// the connection to the session; a welcome that fails, or a session that
    /// is gone, counts it out again. A stream that has `LIVE_PER_STREAM`
    /// connections open already is refused.
    pub fn admit(&self, stream: u16, mut conn: Conn, welcome: impl FnOnce(&mut Conn) -> bool) {
        if !self.live.enter(stream) {
            conn.send_error(&Error::refused(
                crate::error::Code::Unavailable,
                format!("stream {stream} has {LIVE_PER_STREAM} connections open already"),
            ));
            return;
        }
        self.tally.start();
        if !welcome(&mut conn) || self.tx.send(Some((stream, conn))).is_err() {
            self.tally.lost();
            self.live.leave(stream);
        }
    }
}

/// What a session needs to run its streams.
pub struct Streams<'a> {
    pub n: usize,
    pub abort: &'a Abort,
    /// Fired when the transfer is over: a stream ending now is no loss.
    pub done: &'a Cancel,
    pub tally: &'a Tally,
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
            self.dial_one(scope, i, dial, work);
        }
    }

    /// Client side: dials stream `i` (one that joins a running session, too)
    /// until its work is finished, redialling a lost connection.
    pub fn dial_one<'s, 'e: 's>(
        &'e self,
        scope: &'s Scope<'s, 'e>,
        i: usize,
        dial: &'e (dyn Fn(usize) -> Result<Conn> + Sync),
        work: &'e (dyn Fn(usize, Conn) -> StreamEnd + Sync),
    ) {
        self.tally.start();
        scope.spawn(move || {
            let mut failures = 0;
            while !self.abort.is_set() && !self.done.is_cancelled() {
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
                    StreamEnd::Lost(_) if self.done.is_cancelled() || self.abort.is_set() => break,
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
            self.tally.finish();
        });
    }

    /// Server side: runs every data connection that attaches to the session.
    pub fn accept<'s, 'e: 's>(
        &'e self,
        scope: &'s Scope<'s, 'e>,
        incoming: Arrivals,
        work: &'e (dyn Fn(usize, Conn) -> StreamEnd + Sync),
    ) {
        // The door counted each arrival in this tally as it admitted it.
        debug_assert!(Arc::ptr_eq(&self.tally.0, &incoming.tally.0));
        scope.spawn(move || {
            // The loop sleeps in the channel; the session's stop and its end
            // wake it with an empty arrival.
            let ring = |tx: Sender<Arrival>| move || drop(tx.send(None));
            let _stopped = self.abort.on_stop(ring(incoming.wake.clone()));
            let _over = self.done.on_cancel(ring(incoming.wake.clone()));
            let mut seen = vec![false; self.n];
            while !self.abort.is_set() && !self.done.is_cancelled() {
                let (i, conn) = match incoming.rx.recv() {
                    Ok(Some(x)) => x,
                    Ok(None) => continue,
                    Err(_) => break,
                };
                let live = Arc::clone(&incoming.live);
                let leave = move || live.leave(i);
                let i = i as usize;
                // Streams may join a running session, up to the engine's limit.
                if i >= MAX_STREAMS as usize {
                    let mut conn = conn;
                    conn.send_error(&Error::Protocol(format!(
                        "stream {i}: a session has at most {MAX_STREAMS}"
                    )));
                    self.tally.lost();
                    leave();
                    continue;
                }
                if seen.len() <= i {
                    seen.resize(i + 1, false);
                }
                if seen[i] {
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                seen[i] = true;
                scope.spawn(move || {
                    let end = work(i, conn);
                    leave();
                    match end {
                        StreamEnd::Finished => self.tally.finish(),
                        StreamEnd::Fatal(e) => self.abort.fail(e),
                        StreamEnd::Lost(why) => {
                            self.tally.lost();
                            if !self.done.is_cancelled() {
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
        let finished = send::worker(i, gen, conn, Arc::clone(shared));
        // The connection is done with, whatever comes next: closed, so the
        // peer sees its end (see Telemetry::release).
        shared.tel.release(i);
        // A stream that detached, or died while leaving, is not dialled again.
        if finished || !shared.redial(i) {
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
    move |i, conn| {
        let ended = receive::worker(i, conn, shared);
        shared.tel.release(i);
        match ended {
            Ended::Detached => StreamEnd::Finished,
            Ended::Lost(e) => StreamEnd::Lost(e.to_string()),
            Ended::Fatal(e) => {
                // The sender hears why on the control connection, then everything stops.
                ctrl.lock().unwrap().send_error(&e);
                StreamEnd::Fatal(e)
            }
        }
    }
}

/// Closes every data connection so that blocked workers return.
pub fn shut_all(tel: &crate::telemetry::Telemetry) {
    tel.for_each_socket(|s| {
        let _ = s.shutdown(Shutdown::Both);
    });
}

/// What the sending end's driver may do beyond the core's own work: dial a
/// stream that joins (the client's side), and ask a steer on each tick.
#[derive(Default)]
pub struct Hooks<'a> {
    pub open: Option<&'a (dyn Fn(usize) + Sync)>,
    pub steer: Option<SteerHook<'a>>,
}

pub struct SteerHook<'a> {
    pub steer: &'a mut dyn Steer,
    /// Gives stream `i` a control: on its live socket, and on later connections.
    pub apply: &'a (dyn Fn(usize, &StreamControl) -> Result<()> + Sync),
}

/// The sending end's driver: it performs what the core asks (control
/// messages, hashes to complete, streams to dial), feeds it what the
/// control connection, the finisher and the stream workers report, and
/// waits for nothing but those events (and the steer's tick, if any).
#[allow(clippy::too_many_arguments)]
pub fn drive_sender(
    ctrl: Conn,
    sources: &[Source],
    events_tx: Sender<Event>,
    events: Receiver<Event>,
    shared: &Arc<SendShared>,
    life: &Life,
    notes: Notes,
    mut hooks: Hooks,
) -> Result<u64> {
    let Conn { mut r, mut w } = ctrl;
    let reader_tx = events_tx.clone();
    thread::spawn(move || loop {
        // Keepalives too: the wait for the receiver's end counts its silence.
        let m = r.recv_any();
        let end = m.is_err() || matches!(m, Ok(Message::Close { .. }));
        if reader_tx.send(Event::Control(m)).is_err() || end {
            return;
        }
    });
    let _stopped = {
        let tx = events_tx.clone();
        life.abort.on_stop(move || {
            let _ = tx.send(Event::Stopped);
        })
    };
    let finisher = send::spawn_finisher(sources.to_vec(), Arc::clone(shared), events_tx);
    let start = Instant::now();
    let mut tick = hooks.steer.as_ref().map(|h| start + h.steer.interval());
    if let (Some(h), Some(next)) = (&hooks.steer, tick) {
        plan_looks(&*h.steer, &shared.tel, start, next);
    }
    let mut close_by = None::<Instant>;
    let fail = |w: &mut FrameWriter, e: Error| -> Result<u64> {
        w.send_error(&e);
        shared.abort();
        Err(e)
    };
    loop {
        for a in shared.actions() {
            match a {
                Action::Send(m) => {
                    if let Err(e) = w.send(&m) {
                        shared.abort();
                        return Err(e);
                    }
                }
                Action::Hash(f) => {
                    let _ = finisher.send(f);
                }
                Action::Open(i) => {
                    if let Some(open) = hooks.open {
                        open(i);
                    }
                }
                Action::Close => {
                    life.done.cancel();
                    w.send(&Message::Close {
                        bytes: shared.tel.total(),
                    })?;
                }
                // Timed from here, not from the Close: the receiver may
                // still be reading back a resumed file to verify it.
                Action::AllVerified => close_by = Some(Instant::now() + CLOSE_WAIT),
                Action::Finished(bytes) => return Ok(bytes),
                Action::Fail(e) => return fail(&mut w, e),
            }
        }
        let until = [tick, close_by, Some(w.keepalive_at())]
            .into_iter()
            .flatten()
            .min();
        // A wait that ends at the steer's tick is the steer's to count.
        let waited_from = (until.is_some() && until == tick).then(thread_cpu);
        let ev = match until {
            None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(t) => events.recv_timeout(t.saturating_duration_since(Instant::now())),
        };
        let now = Instant::now();
        // A wake for nothing but the steer's tick is the steer's cost, the
        // wait's syscalls too.
        let steer_from = match (&ev, waited_from) {
            (Err(RecvTimeoutError::Timeout), Some(from)) => Some(from),
            _ => None,
        };
        // Once every file is verified, the wait for the receiver's Close
        // counts from its last word: a receiver still at its end's work (a
        // --delete of a large tree) says keepalives meanwhile.
        if let (Ok(Event::Control(Ok(_))), Some(t)) = (&ev, close_by.as_mut()) {
            *t = now + CLOSE_WAIT;
        }
        match ev {
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::Protocol("the session's event channel closed".into()))
            }
            Err(RecvTimeoutError::Timeout) => {
                // Hashing a large file can keep this end from saying anything.
                if let Err(e) = w.keepalive() {
                    shared.abort();
                    return Err(e);
                }
                if close_by.is_some_and(|t| now >= t) {
                    shared.abort();
                    return Err(Error::Protocol(
                        "the receiver did not confirm the end".into(),
                    ));
                }
            }
            Ok(Event::Wake) => {}
            Ok(Event::Hashed(f, h)) => shared.with_core(|c| c.on_hashed(f, h)),
            Ok(Event::SourceFailed(_, why)) => shared
                .with_core(|c| c.fail(Error::io(why, std::io::Error::other("source changed")))),
            Ok(Event::Control(Ok(Message::Keepalive))) => {}
            Ok(Event::Control(Ok(Message::Removed { paths, more }))) => {
                shared.removed.lock().unwrap().add(paths, more)
            }
            Ok(Event::Control(Ok(m))) => shared.with_core(|c| c.on_control(m)),
            Ok(Event::Control(Err(e))) => {
                shared.abort();
                return Err(e);
            }
            Ok(Event::Stopped) => {
                if life.interrupted() {
                    shared.with_core(|c| c.fail(Error::Interrupted));
                } else if let Some(e) = life.abort.take() {
                    // Streams failing is often the peer stopping: its own word
                    // on the control connection says more than the streams can.
                    if let Some(remote) = peer_reason(&events) {
                        shared.abort();
                        return Err(remote);
                    }
                    shared.with_core(|c| c.fail(e));
                }
            }
        }
        // After any event, not only when none came: on a fast path the
        // streams' wakes can keep the channel busy past every tick.
        let Some(h) = hooks.steer.as_mut() else {
            continue;
        };
        if tick.is_none_or(|t| now < t) {
            continue;
        }
        let from = steer_from.unwrap_or_else(thread_cpu);
        let next = now + h.steer.interval();
        tick = Some(next);
        let on = SessionSteered {
            shared,
            apply: h.apply,
        };
        steer_tick(&mut *h.steer, &on, start, now, notes)?;
        plan_looks(&*h.steer, &shared.tel, now, next);
        shared.tel.steered_since(from);
    }
}

/// How long the sender waits for the receiver's `Close` once every file is
/// verified, from then or from the receiver's last word (a keepalive while
/// it removes what --delete removes).
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// Where a steer's asks are done: a session's streams, or a bench's.
trait Steered {
    fn tel(&self) -> &Telemetry;
    /// Which streams carry blocks now, by index.
    fn wanted(&self) -> Vec<bool>;
    /// Does what the steer asked; an error ends the session.
    fn apply(&self, asked: &Steering) -> Result<()>;
}

/// A session's streams, as its steer changes them.
struct SessionSteered<'a> {
    shared: &'a SendShared,
    apply: &'a (dyn Fn(usize, &StreamControl) -> Result<()> + Sync),
}

impl Steered for SessionSteered<'_> {
    fn tel(&self) -> &Telemetry {
        &self.shared.tel
    }

    fn wanted(&self) -> Vec<bool> {
        self.shared
            .with_core(|c| (0..c.streams()).map(|i| c.is_wanted(i)).collect())
    }

    fn apply(&self, asked: &Steering) -> Result<()> {
        match asked {
            Steering::Streams(n) => self.shared.with_core(|c| c.set_streams(*n)),
            Steering::Control(i, c) => (self.apply)(*i, c)?,
            Steering::Pace(i, rate) => pace(&self.shared.tel, *i, *rate),
        }
        Ok(())
    }
}

impl Steered for BenchSteer<'_> {
    fn tel(&self) -> &Telemetry {
        self.tel
    }

    fn wanted(&self) -> Vec<bool> {
        (0..MAX_STREAMS as usize)
            .map(|i| (self.wanted)(i))
            .collect()
    }

    /// Done where a bench can: it goes on whatever a stream refuses.
    fn apply(&self, asked: &Steering) -> Result<()> {
        match asked {
            // A stream that ended meanwhile has nothing to change.
            Steering::Control(i, c) => {
                let _ = (self.apply)(*i, c);
            }
            Steering::Streams(n) => {
                if let Some(set) = self.streams {
                    set(*n)
                }
            }
            Steering::Pace(i, rate) => pace(self.tel, *i, *rate),
        }
        Ok(())
    }
}

/// One tick of a steer: it is told the looks the senders took since the
/// last, it sees every stream, and what it asks is done.
fn steer_tick(
    steer: &mut dyn Steer,
    on: &dyn Steered,
    start: Instant,
    now: Instant,
    notes: Notes,
) -> Result<()> {
    let elapsed = now - start;
    let wanted = on.wanted();
    let wanted = |i: usize| wanted.get(i).copied().unwrap_or(false);
    tell_looks(steer, on.tel(), start, now, wanted);
    // Once the receiving end has told µ: it reads µ from trains of packets
    // that left the sender back to back (`path::dispersion`), which a paced
    // stream sends only while its rate is high. Unpaced until then, the first
    // streams' slow start sends them, as an ordinary transfer's does.
    let mu = on.tel().bottleneck();
    if steer.paces() && mu.is_some() {
        on.tel().pace_connections();
    }
    let views = views(on.tel(), wanted);
    if let Some(b) = mu {
        steer.bottleneck(b as f64);
    }
    let before = phase_of(steer);
    let asked = steer.tick(elapsed, &views);
    for s in &asked {
        on.apply(s)?;
    }
    // A new phase is on the record even where it asks nothing new of the
    // streams (auto's `Grow` becoming `Full` uncapped with the same streams).
    if !asked.is_empty() || phase_of(steer) != before {
        // Counted after the steering, so the record says what the steer chose.
        let carrying = on.wanted().into_iter().filter(|w| *w).count();
        report_steer(steer, elapsed, carrying, notes);
    }
    Ok(())
}

/// Asks the streams' senders for the looks `steer` wants before its next
/// tick, at `next`; `now` is the tick just made (or the start).
fn plan_looks(steer: &dyn Steer, tel: &Telemetry, now: Instant, next: Instant) {
    tel.plan_looks(steer.looks().map(|l| (now + l.first, l.every)), next);
}

/// Tells `steer` the looks the senders took before this tick (at `now`), in
/// the order they were taken, each of the one stream it read. Which
/// streams carry is as the tick finds it: only a tick changes that.
fn tell_looks(
    steer: &mut dyn Steer,
    tel: &Telemetry,
    start: Instant,
    now: Instant,
    wanted: impl Fn(usize) -> bool,
) {
    for (at, stream, (bytes, info)) in tel.looks_taken() {
        // One taken while this tick read the streams is no look before it.
        if at <= now && at >= start {
            let view = StreamView {
                stream,
                wanted: wanted(stream),
                bytes,
                info: Some(info),
            };
            steer.sample(at - start, &[view]);
        }
    }
}

/// The steer's phase, as its record names it: a new one goes on the record
/// even where it asks nothing new of the streams.
fn phase_of(steer: &dyn Steer) -> Option<&'static str> {
    steer.state().and_then(|s| s.phase)
}

/// Caps (or frees) a stream's live socket's sending rate. A stream that has
/// no connection now, or whose socket refuses, is left as it is: a probe
/// learns less from it, and the transfer goes on.
fn pace(tel: &Telemetry, i: usize, rate: Option<u64>) {
    tel.with_socket(i, |sock| {
        let _ = braid_cc::set_max_pacing_rate(std::os::fd::AsFd::as_fd(sock), rate);
    });
}

/// A `steer` record on the JSON output, when the steer has a state to tell.
fn report_steer(steer: &dyn Steer, elapsed: Duration, streams: usize, notes: Notes) {
    use crate::telemetry::round3;
    if let (Notes::Json, Some(st)) = (notes, steer.state()) {
        crate::records::print(&crate::records::Steered {
            t: round3(elapsed.as_secs_f64()),
            streams,
            strength: st.strength.map(round3),
            queue_ms: st.queue_us.map(|q| round3(q as f64 / 1000.0)),
            utility: st.utility.map(round3),
            shared: st.shared,
            share_mbps: st.share_bps.map(|b| round3(b * 8.0 / 1e6)),
            phase: st.phase,
            bottleneck_mbps: st.bottleneck_bps.map(|b| round3(b * 8.0 / 1e6)),
        });
    }
}

/// Every stream as a steer sees it.
fn views(tel: &Telemetry, wanted: impl Fn(usize) -> bool) -> Vec<StreamView> {
    tel.views()
        .into_iter()
        .enumerate()
        .map(|(i, (bytes, info))| StreamView {
            stream: i,
            wanted: wanted(i),
            bytes,
            info,
        })
        .collect()
}

/// Steers a bench's sending streams until `stop` says the bench is over
/// (or its sender is dropped).
pub fn steer_bench(stop: &Receiver<()>, steer: &mut dyn Steer, hook: &BenchSteer, notes: Notes) {
    let start = Instant::now();
    let mut tick_at = start + steer.interval();
    plan_looks(steer, hook.tel, start, tick_at);
    loop {
        // This thread does nothing but steer: all it spends is the steer's.
        let from = thread_cpu();
        if let Ok(()) | Err(RecvTimeoutError::Disconnected) =
            stop.recv_timeout(tick_at.saturating_duration_since(Instant::now()))
        {
            return;
        }
        let now = Instant::now();
        tick_at = now + steer.interval();
        let _ = steer_tick(steer, hook, start, now, notes);
        plan_looks(steer, hook.tel, now, tick_at);
        hook.tel.steered_since(from);
    }
}

/// What a bench's steer may do: see its streams, change a live socket's control, and (where
/// this end dials) set how many streams send.
pub struct BenchSteer<'a> {
    pub tel: &'a Telemetry,
    pub wanted: &'a (dyn Fn(usize) -> bool + Sync),
    pub apply: &'a (dyn Fn(usize, &StreamControl) -> Result<()> + Sync),
    pub streams: Option<&'a (dyn Fn(usize) + Sync)>,
}

/// The receiving end's driver: checks each file the sender announces and
/// publishes them in batches (one filesystem sync for many files), journals
/// progress every second, and answers `Close`. Whatever ends the session,
/// the sender hears why.
pub fn drive_receiver(
    mut r: crate::session::conn::FrameReader,
    w: &Mutex<FrameWriter>,
    shared: &RecvShared,
    life: &Life,
) -> Result<u64> {
    // A stopped session (the user's cancel, a stream's fatal error) ends the
    // wait for the sender's next word at once.
    let _stopped = r.stream().try_clone().ok().map(|ctl| {
        life.abort.on_stop(move || {
            let _ = ctl.shutdown(Shutdown::Read);
        })
    });
    let mut core = ReceiverCore::new(Instant::now());
    // Since the sender last said something here: the session's rule for
    // silence applies to this loop, which polls rather than reads.
    let mut waiting_since = Instant::now();
    // Reading back a resumed file to verify it, or a --delete's walk of a
    // large tree, may take minutes: the sender hears a keepalive meanwhile.
    let mut tick = || w.lock().unwrap().keepalive();
    let publish = |core: &mut ReceiverCore| -> Result<()> {
        core.published();
        for (file, hash) in shared.publish()? {
            w.lock().unwrap().send(&Message::Verify { file, hash })?;
        }
        Ok(())
    };
    let result = (|| loop {
        let now = Instant::now();
        if core.journal_due(now) {
            shared.sync_journals()?;
        }
        // Publishing and journaling can keep this end from saying anything.
        let keepalive_at = {
            let mut w = w.lock().unwrap();
            w.keepalive()?;
            w.keepalive_at()
        };
        let wait = core
            .publish_in(now)
            .unwrap_or(Duration::MAX)
            .min(core.journal_at().saturating_duration_since(now))
            .min(keepalive_at.saturating_duration_since(now));
        if !r.wait_readable(wait) {
            if let Some(e) = r.idle_error(waiting_since) {
                return Err(e);
            }
            // The sender went quiet (or the batch is old): publish what is verified.
            if core.publish_in(Instant::now()).is_some() {
                publish(&mut core)?;
            }
            continue;
        }
        if life.abort.is_set() {
            return Err(stopped(life));
        }
        // A keepalive comes back here, to the journals' and the batch's timers.
        let m = match r.recv_any() {
            Ok(m) => m,
            Err(e) if life.abort.is_set() => {
                let _ = e;
                return Err(stopped(life));
            }
            Err(e) => return Err(e),
        };
        waiting_since = Instant::now();
        if matches!(m, Message::Keepalive) {
            continue;
        }
        match core.on_control(m)? {
            Step::Verify { file, hash } => {
                shared.verify(file, &hash, &mut tick)?;
                if core.on_verified(Instant::now(), shared.pending()) {
                    publish(&mut core)?;
                }
            }
            Step::Close => {
                publish(&mut core)?;
                if !shared.all_published() {
                    return Err(Error::Protocol(
                        "the sender closed before every file was verified".into(),
                    ));
                }
                shared.finish()?;
                if let Some(removed) = shared.delete_extraneous(&mut tick)? {
                    crate::session::sync::send_removed(&mut w.lock().unwrap(), &removed)?;
                }
                life.done.cancel();
                let got = shared.tel.total();
                w.lock().unwrap().send(&Message::Close { bytes: got })?;
                return Ok(got);
            }
        }
    })();
    if let Err(e) = &result {
        // Best effort: the peer may have gone, or have said why itself.
        // A peer that went silent is still there to hear why it is dropped.
        if e.is_timeout() || !matches!(e, Error::Remote { .. } | Error::Connect { .. }) {
            w.lock().unwrap().send_error(e);
        }
        life.abort.stop();
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

/// Why a stopped session stopped: the user, or a stream's error.
fn stopped(life: &Life) -> Error {
    if life.interrupted() {
        Error::Interrupted
    } else {
        life.abort.take().unwrap_or(Error::Interrupted)
    }
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

/// Reads the receiver's answers (`Ranges` or `Keep`), one per file of the
/// manifest. Each frame is bounded by the codec; `max_ranges` bounds them all.
pub fn read_answers(ctrl: &mut Conn, n: usize, max_ranges: u64) -> Result<Vec<Answer>> {
    let mut answers = vec![Answer::Holds(RangeSet::new()); n];
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
                answers[file as usize] = Answer::Holds(RangeSet::from_ranges(&ranges))
            }
            Message::Keep { file } if (file as usize) < n => answers[file as usize] = Answer::Keeps,
            m => return Err(unexpected("the receiver's ranges", &m)),
        }
    }
    Ok(answers)
}

/// Tells the sender what the receiver holds of each file, or that it keeps it.
pub fn send_held(ctrl: &mut Conn, shared: &RecvShared) -> Result<()> {
    for (i, r) in shared.answers().into_iter().enumerate() {
        let file = i as u32;
        ctrl.send(&match r {
            Answer::Holds(r) => Message::Ranges {
                file,
                ranges: r.ranges(),
            },
            Answer::Keeps => Message::Keep { file },
        })?;
    }
    Ok(())
}

/// A channel for the sending end's events.
pub fn events() -> (Sender<Event>, Receiver<Event>) {
    mpsc::channel()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_wait_ends_when_the_streams_finish_or_the_session_stops_not_on_a_timer() {
        let t = Tally::default();
        t.start();
        t.start();
        let abort = Abort::default();
        let long = Duration::from_secs(30);
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(20));
                t.finish();
                thread::sleep(Duration::from_millis(20));
                t.finish();
            });
            let began = Instant::now();
            assert!(t.wait(|started| started, &abort, long));
            assert!(began.elapsed() < long / 2);
        });
        assert_eq!(
            t.counts(),
            Counts {
                started: 2,
                finished: 2
            }
        );
        // A third stream joins: what is wanted grows; a stop ends the wait.
        t.start();
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(20));
                abort.stop();
            });
            let began = Instant::now();
            assert!(!t.wait(|started| started, &abort, long));
            assert!(began.elapsed() < long / 2);
        });
        t.lost();
        assert_eq!(
            t.counts(),
            Counts {
                started: 2,
                finished: 2
            }
        );
    }

    /// Runs a session's accept loop with no connection arriving, fires
    /// `end` on its Life, and says whether the loop ended within 10 s (it
    /// sleeps in the channel: only a wake ends it).
    fn accept_loop_ends(end: impl FnOnce(&Life) + Send + 'static) -> bool {
        let (ended, over) = mpsc::channel();
        thread::spawn(move || {
            let (_door, arrivals) = Arrivals::channel();
            let life = Life::arriving(&Cancel::new(), &arrivals);
            let work = |_: usize, _: Conn| StreamEnd::Finished;
            let streams = life.streams(1, Notes::Off);
            thread::scope(|s| {
                streams.accept(s, arrivals, &work);
                thread::sleep(Duration::from_millis(50));
                end(&life);
            });
            let _ = ended.send(());
        });
        over.recv_timeout(Duration::from_secs(10)).is_ok()
    }

    #[test]
    fn the_accept_loop_sleeps_until_the_session_ends_or_stops() {
        assert!(accept_loop_ends(|life| life.done.cancel()));
        assert!(accept_loop_ends(|life| life.abort.stop()));
        assert!(accept_loop_ends(|life| life.user.cancel()));
    }

    fn loopback_conn() -> (Conn, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let near = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (Conn::new(l.accept().unwrap().0).unwrap(), near)
    }

    /// The CI failure of b195236: a close told right after an attach was
    /// answered before the accept loop had counted the stream in.
    #[test]
    fn an_admitted_stream_counts_before_the_accept_loop_takes_it() {
        let (door, arrivals) = Arrivals::channel();
        let life = Life::arriving(&Cancel::new(), &arrivals);
        let (conn, _near) = loopback_conn();
        door.admit(0, conn, |_| true);
        assert_eq!(life.tally.counts().started, 1);
        // A welcome that could not be sent counts the stream out again.
        let (conn, _near) = loopback_conn();
        door.admit(1, conn, |_| false);
        assert_eq!(life.tally.counts().started, 1);
        // So does a session that is gone.
        drop(arrivals);
        let (conn, _near) = loopback_conn();
        door.admit(2, conn, |_| true);
        assert_eq!(life.tally.counts().started, 1);
    }

    #[test]
    fn an_attached_bell_rings_on_every_change() {
        let t = Tally::default();
        let bell = Arc::new(Bell::new().unwrap());
        t.attach(Arc::clone(&bell));
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(!crate::session::conn::readable_or(
            &a,
            &bell,
            Duration::ZERO
        ));
        t.start();
        let began = Instant::now();
        // The bell, not the socket: false, at once.
        assert!(!crate::session::conn::readable_or(
            &a,
            &bell,
            Duration::from_secs(30)
        ));
        assert!(began.elapsed() < Duration::from_secs(15));
        // Cleared, it stays quiet; the socket's data is told apart from it.
        bell.clear();
        assert!(!crate::session::conn::readable_or(
            &a,
            &bell,
            Duration::from_millis(5)
        ));
        std::io::Write::write_all(&mut b, b"x").unwrap();
        assert!(crate::session::conn::readable_or(
            &a,
            &bell,
            Duration::from_secs(30)
        ));
    }
}
