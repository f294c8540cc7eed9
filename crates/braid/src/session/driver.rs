//! One session's streams and control loop, whichever end opened it.
//!
//! The client is the dial side (it dials every data stream, any that joins,
//! and any that is lost), the server the accept side (it takes whatever
//! stream attaches with the session's key). Past that a sending end is a
//! sending end and a receiving end a receiving end: `client` and `server`
//! each do their half of the opening exchange (proto/mod.rs has the order)
//! and hand the session to one of the three drivers here, which own its
//! threads, its `Life` and its one cancellation token.
//!
//! | kind  | client (dial side)      | server (accept side)     |
//! |-------|-------------------------|--------------------------|
//! | send  | `send_files`            | `receive_files`          |
//! | get   | `receive_files`         | `send_files`             |
//! | bench | `bench` (sends; `-R` receives) | `bench` (the other role) |

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread::{self, Scope};
use std::time::{Duration, Instant};

use braid_wire::{Kind, Mode, SessionParams, FLAG_REVERSE};

use crate::cancel::Cancel;
use crate::error::Result;
use crate::files::manifest::Source;
use crate::proto::steer::Steer;
use crate::proto::steer::StreamControl;
use crate::proto::Answer;
use crate::session;
use crate::session::bench;
use crate::session::conn::Conn;
use crate::session::engine::{
    self, Arrivals, BenchSteer, Hooks, Life, Notes, SteerHook, StreamEnd, Streams,
};
use crate::session::pacer::Pacer;
use crate::session::receive::RecvShared;
use crate::session::send::SendShared;
use crate::session::sync::Removed;
use crate::steer::auto::Auto;
use crate::steer::falcon::Falcon;
use crate::steer::plan;
use crate::telemetry::Telemetry;

/// A data stream's work on one connection.
type Work<'a> = dyn Fn(usize, Conn) -> StreamEnd + Sync + 'a;

/// How a session's data streams come to it.
pub enum Side<'a> {
    /// The client's: dials stream `i`. A sending client's dialler sets the
    /// stream's control before it connects, so the first window is already
    /// the control's.
    Dial(&'a (dyn Fn(usize) -> Result<Conn> + Sync)),
    /// The server's: the connections the peer attaches. A sending server
    /// sets each one's control on the accepted socket.
    Accept(Arrivals),
}

impl Side<'_> {
    fn dials(&self) -> bool {
        matches!(self, Side::Dial(_))
    }

    /// The session's life: an accepting end counts each stream from the
    /// moment its attach is admitted (see `engine::Door`).
    fn life(&self, cancel: &Cancel) -> Life {
        match self {
            Side::Dial(_) => Life::new(cancel),
            Side::Accept(arrivals) => Life::arriving(cancel, arrivals),
        }
    }
}

/// Which part this end plays in a session of `kind`: whether it sends.
pub fn sends(kind: Kind, flags: u32, dials: bool) -> bool {
    let reverse = flags & FLAG_REVERSE != 0;
    match kind {
        Kind::Send => dials,
        Kind::Get => !dials,
        Kind::Bench => dials != reverse,
    }
}

/// How many streams the sending end starts with: a dialling end may start
/// with fewer and let its steer add more; an accepting one carries on
/// whatever the peer dials.
fn initial_streams(p: &SessionParams, dials: bool) -> usize {
    if dials {
        plan::initial_streams(p)
    } else {
        p.streams as usize
    }
}

/// The steer of `--mode auto` or `--mode falcon` for the sending end. Falcon
/// changes how many streams run, so only a dialling end can follow it; auto
/// on an end that does not dial paces the streams it does not want instead.
pub fn own_steer(p: &SessionParams, dials: bool) -> Option<Box<dyn Steer>> {
    match p.mode {
        Mode::Auto => Some(Box::new(Auto::new(
            p.streams as usize,
            plan::fair_streams(p),
            dials,
        ))),
        Mode::Falcon if dials => Some(Box::new(Falcon::new(
            plan::initial_streams(p),
            p.streams as usize,
        ))),
        _ => None,
    }
}

/// The sending end's controls: one per stream (a stream that joins takes the
/// last one's unless told otherwise), and braid-cc's maps if settings need them.
pub struct Sending {
    controls: Mutex<Vec<StreamControl>>,
    maps: Option<braid_cc::Controls>,
    /// The controls' count of repaired windows when the session began.
    repaired_at_start: Option<u32>,
}

impl Sending {
    /// The controls of a session whose TCP-P group is `group`. A steer may give
    /// any stream braid-cc settings later, so `steered` opens the maps if
    /// they are there, whether or not the first controls need them.
    pub fn new(
        p: &SessionParams,
        group: u64,
        pin_dir: &std::path::Path,
        steered: bool,
    ) -> Result<Sending> {
        let mut controls = plan::stream_controls(p, group);
        if p.mode == Mode::Auto && p.cc.is_empty() {
            let cc = session::auto_control();
            controls.iter_mut().for_each(|c| c.cc = cc.clone());
        }
        let maps = match session::open_controls(&controls, pin_dir)? {
            None if steered => braid_cc::Controls::open(pin_dir).ok(),
            maps => maps,
        };
        let repaired_at_start = maps.as_ref().and_then(|m| m.repaired_windows().ok());
        Ok(Sending {
            controls: Mutex::new(controls),
            maps,
            repaired_at_start,
        })
    }

    /// Stream `i`'s control now.
    pub fn control(&self, i: usize) -> StreamControl {
        let c = self.controls.lock().unwrap();
        c.get(i).or(c.last()).cloned().unwrap_or_default()
    }

    pub fn maps(&self) -> Option<&braid_cc::Controls> {
        self.maps.as_ref()
    }

    /// Windows braid's controls found out of bounds and put back while this
    /// session ran (a count kept for the whole host: any other braid
    /// transfer's repairs meanwhile are in it too). None without the maps.
    pub fn repaired_windows(&self) -> Option<u32> {
        let now = self.maps.as_ref()?.repaired_windows().ok()?;
        Some(now.wrapping_sub(self.repaired_at_start?))
    }

    /// Gives stream `i` a control: on its live socket, and on its later connections.
    fn apply(&self, tel: &Telemetry, i: usize, control: &StreamControl) -> Result<()> {
        {
            let mut c = self.controls.lock().unwrap();
            while c.len() <= i {
                let last = c.last().cloned().unwrap_or_default();
                c.push(last);
            }
            c[i] = control.clone();
        }
        tel.with_socket(i, |sock| {
            session::apply_control(sock, control, self.maps.as_ref())
        })
        .unwrap_or(Ok(()))
    }

    /// Readies stream `i`'s new connection: a dialled one got its control
    /// before it connected; one the peer dialled gets it now.
    fn ready(&self, dials: bool, i: usize, conn: &Conn) -> Result<()> {
        if dials {
            return Ok(());
        }
        session::apply_control(conn.stream(), &self.control(i), self.maps.as_ref())
    }
}

/// What each driver needs besides its side and its role.
pub struct Run<'a> {
    pub tel: &'a Arc<Telemetry>,
    /// The caller's stop (the CLI's Ctrl-C, the server's shutdown).
    pub cancel: &'a Cancel,
    pub notes: Notes,
    /// The sending end's steer, if any; a receiving end has none.
    pub steer: Option<&'a mut (dyn Steer + 'static)>,
}

/// Starts the streams on `side`: dials every one, or accepts whatever
/// attaches. Returns the dialler, for streams that join later.
fn start<'s, 'e: 's>(
    streams: &'e Streams<'e>,
    scope: &'s Scope<'s, 'e>,
    side: Side<'e>,
    work: &'e Work<'e>,
) -> Option<&'e (dyn Fn(usize) -> Result<Conn> + Sync)> {
    match side {
        Side::Dial(dial) => {
            streams.dial(scope, dial, work);
            Some(dial)
        }
        Side::Accept(arrivals) => {
            streams.accept(scope, arrivals, work);
            None
        }
    }
}

/// What a file session's sending end moved.
pub struct Sent {
    /// The receiver's count of bytes, from its `Close`.
    pub peer: u64,
    pub requeued: u64,
    /// What the receiver's --delete removed.
    pub removed: Removed,
}

/// The sending end of `send` (client) and `get` (server), once the manifest
/// and the receiver's ranges have been exchanged.
#[allow(clippy::too_many_arguments)]
pub fn send_files(
    ctrl: Conn,
    side: Side,
    sending: &Sending,
    sources: &[Source],
    answers: &[Answer],
    p: &SessionParams,
    limit_bps: Option<u64>,
    run: Run,
) -> Result<Sent> {
    let Run {
        tel,
        cancel,
        notes,
        steer,
    } = run;
    let dials = side.dials();
    let n = initial_streams(p, dials);
    let (tx, rx) = engine::events();
    let shared = SendShared::new(
        sources,
        answers,
        p.block_size,
        n,
        tx.clone(),
        Arc::clone(tel),
        limit_bps,
        notes,
    )?;
    let life = side.life(cancel);
    let streams = life.streams(n, notes);
    let send = engine::send_work(&shared);
    let work = |i: usize, c: Conn| match sending.ready(dials, i, &c) {
        Ok(()) => send(i, c),
        Err(e) => StreamEnd::Fatal(e),
    };
    // A steer's new control reaches the stream's live socket, and its later ones.
    let apply = |i: usize, c: &StreamControl| sending.apply(tel, i, c);
    let r = thread::scope(|s| {
        let dial = start(&streams, s, side, &work);
        let open = |i: usize| {
            if let Some(dial) = dial {
                streams.dial_one(s, i, dial, &work)
            }
        };
        let hooks = Hooks {
            open: dial.is_some().then_some(&open as &(dyn Fn(usize) + Sync)),
            steer: steer.map(|steer| SteerHook {
                steer,
                apply: &apply,
            }),
        };
        let r = engine::drive_sender(ctrl, sources, tx, rx, &shared, &life, notes, hooks);
        if r.is_err() {
            shared.abort();
        }
        life.end(r, tel)
    });
    let removed = shared.removed.lock().unwrap().clone();
    Ok(Sent {
        peer: r?,
        requeued: shared.requeued(),
        removed,
    })
}

/// The receiving end of `send` (server) and `get` (client), once it has
/// told the sender what it holds; returns the bytes it received.
pub fn receive_files(
    ctrl: Conn,
    side: Side,
    shared: &RecvShared,
    streams: usize,
    run: Run,
) -> Result<u64> {
    let life = side.life(run.cancel);
    let streams = life.streams(streams, run.notes);
    let Conn { r, w } = ctrl;
    let w = Mutex::new(w);
    let work = engine::receive_work(shared, &w);
    thread::scope(|s| {
        start(&streams, s, side, &work);
        engine::drive_receiver(r, &w, shared, &life)
    })
}

/// A bench's part at this end.
pub enum BenchRole<'a> {
    /// Writes for the session's duration, at most `pacer`'s rate.
    Send {
        sending: &'a Sending,
        pacer: Option<Pacer>,
    },
    /// Counts what arrives.
    Receive,
}

/// Either end of `bench`, once the session is accepted; returns the peer's
/// count of bytes from its `Close`.
pub fn bench(
    ctrl: &mut Conn,
    side: Side,
    role: BenchRole,
    p: &SessionParams,
    run: Run,
) -> Result<u64> {
    let Run {
        tel,
        cancel,
        notes,
        steer,
    } = run;
    let dials = side.dials();
    let life = side.life(cancel);
    let sending = matches!(role, BenchRole::Send { .. });
    // A receiving end takes whatever the sender dials or attaches.
    let n = if sending {
        initial_streams(p, dials)
    } else {
        p.streams as usize
    };
    let streams = life.streams(n, notes);
    let duration = Duration::from_millis(p.duration_ms as u64);
    // The run lasts `duration` from its first stream's start.
    let first = OnceLock::new();
    let start_at = &first;
    let deadline = || *start_at.get_or_init(|| Instant::now() + duration);
    // Streams below `active` send; each one's flag says whether its thread still runs.
    let active = AtomicUsize::new(n);
    let running: Vec<AtomicBool> = (0..plan::MAX_STREAMS as usize)
        .map(|i| AtomicBool::new(i < n))
        .collect();
    let wanted = |i: usize| i < active.load(Ordering::SeqCst);
    let send_work = |i: usize, conn: Conn| {
        let BenchRole::Send { sending, pacer } = &role else {
            unreachable!("only a sending end sends")
        };
        if let Err(e) = sending.ready(dials, i, &conn) {
            return StreamEnd::Fatal(e);
        }
        bench::send(i, conn, deadline(), tel, pacer.as_ref(), cancel, &|| {
            wanted(i)
        });
        running[i].store(false, Ordering::SeqCst);
        StreamEnd::Finished
    };
    let recv_work = |i: usize, conn: Conn| {
        bench::receive(i, conn, tel, cancel, &life.done);
        StreamEnd::Finished
    };
    let apply = |i: usize, c: &StreamControl| match &role {
        BenchRole::Send { sending, .. } => sending.apply(tel, i, c),
        BenchRole::Receive => Ok(()),
    };
    let steer = steer.filter(|_| sending);
    let (stop_steer, steer_stop) = mpsc::channel::<()>();
    let peer = thread::scope(|s| -> Result<u64> {
        let work: &Work = if sending { &send_work } else { &recv_work };
        let dial = start(&streams, s, side, work);
        let (streams, active, running) = (&streams, &active, &running);
        let set_streams = move |k: usize| {
            let Some(dial) = dial else { return };
            if start_at.get().is_some_and(|&d| Instant::now() >= d) {
                return;
            }
            let k = k.clamp(1, running.len());
            active.store(k, Ordering::SeqCst);
            for (i, r) in running.iter().enumerate().take(k) {
                if !r.swap(true, Ordering::SeqCst) {
                    streams.dial_one(s, i, dial, work);
                }
            }
        };
        if let Some(steer) = steer {
            let (apply, wanted) = (&apply, &wanted);
            s.spawn(move || {
                let hook = BenchSteer {
                    tel,
                    wanted,
                    apply,
                    streams: dials.then_some(&set_streams as &(dyn Fn(usize) + Sync)),
                };
                engine::steer_bench(&steer_stop, steer, &hook, notes)
            });
        }
        let _stop_steer = stop_steer;
        let wait = duration + Duration::from_secs(30);
        let r = if sending {
            bench::close_sending(ctrl, &life, n, wait, tel)
        } else {
            bench::close_receiving(ctrl, &life, wait, tel)
        };
        life.end(r, tel)
    });
    // A stream's own failure (a control the kernel refused) says more than
    // the exchange it cut short.
    match life.abort.take() {
        Some(e) => Err(e),
        None => peer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sending_end_is_named_by_kind_side_and_direction() {
        // (kind, reversed) -> does the client send, does the server send
        for (kind, flags, client) in [
            (Kind::Send, 0, true),
            (Kind::Get, 0, false),
            (Kind::Bench, 0, true),
            (Kind::Bench, FLAG_REVERSE, false),
        ] {
            assert_eq!(sends(kind, flags, true), client, "{kind:?} {flags}");
            assert_eq!(sends(kind, flags, false), !client, "{kind:?} {flags}");
        }
    }
}
