//! The sending end of a file transfer: stream workers pull blocks from the
//! shared scheduler, an acknowledgement reader per stream retires them, and
//! a hashing thread computes each file's BLAKE3 for the end-to-end check.

use std::fs::File;
use std::net::Shutdown;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use braid_wire::Message;

use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::manifest::Source;
use crate::pacer::Pacer;
use crate::ranges::RangeSet;
use crate::sched::{BlockRef, Scheduler};
use crate::telemetry::Telemetry;

/// What the sending session's control loop hears about.
#[derive(Debug)]
pub enum Event {
    /// Every byte of a file is acknowledged.
    Acked(u32),
    /// A file's whole-content hash is ready.
    Hashed(u32, [u8; 32]),
    /// A source file could not be read or hashed, or changed size.
    SourceFailed(u32, String),
    /// A message on the control connection, or its end.
    Control(Result<Message>),
    /// A stream's connection died; its blocks are queued again.
    StreamLost(usize, String),
}

struct State {
    sched: Scheduler,
    /// Each stream's connection generation: acknowledgements of an older one are ignored.
    gens: Vec<u64>,
    aborted: bool,
}

pub struct SendShared {
    st: Mutex<State>,
    cv: Condvar,
    files: Vec<File>,
    block_size: u32,
    events: Sender<Event>,
    pub tel: Arc<Telemetry>,
    pacer: Option<Pacer>,
}

enum Next {
    Block(BlockRef),
    /// Everything is acknowledged: say goodbye.
    Done,
    /// This connection was replaced or the session aborted: just stop.
    Stop,
}

impl SendShared {
    pub fn new(
        sources: &[Source],
        held: &[RangeSet],
        block_size: u32,
        streams: usize,
        events: Sender<Event>,
        tel: Arc<Telemetry>,
        limit_bps: Option<u64>,
    ) -> Result<Arc<Self>> {
        let files = sources
            .iter()
            .map(|s| {
                File::open(&s.local)
                    .map_err(|e| Error::io(format!("opening {}", s.local.display()), e))
            })
            .collect::<Result<Vec<_>>>()?;
        let plan: Vec<(u64, RangeSet)> = sources
            .iter()
            .zip(held)
            .map(|(s, h)| (s.entry.size, h.clone()))
            .collect();
        let sched = Scheduler::new(&plan, block_size, streams);
        let to_move: u64 = plan.iter().map(|(s, h)| s - h.covered().min(*s)).sum();
        tel.expected
            .store(to_move, std::sync::atomic::Ordering::Relaxed);
        for f in sched.complete_at_start() {
            let _ = events.send(Event::Acked(f));
        }
        Ok(Arc::new(SendShared {
            st: Mutex::new(State {
                sched,
                gens: vec![0; streams],
                aborted: false,
            }),
            cv: Condvar::new(),
            files,
            block_size,
            events,
            tel,
            pacer: limit_bps.map(Pacer::new),
        }))
    }

    /// A new connection for `stream`: whatever the old one had in flight goes back.
    pub fn take_over(&self, stream: usize) -> u64 {
        let mut st = self.st.lock().unwrap();
        st.sched.fail(stream);
        st.gens[stream] += 1;
        self.cv.notify_all();
        st.gens[stream]
    }

    pub fn requeued(&self) -> u64 {
        self.st.lock().unwrap().sched.requeued
    }

    pub fn is_done(&self) -> bool {
        self.st.lock().unwrap().sched.is_done()
    }

    pub fn abort(&self) {
        self.st.lock().unwrap().aborted = true;
        self.cv.notify_all();
    }

    fn next(&self, stream: usize, gen: u64) -> Next {
        let mut st = self.st.lock().unwrap();
        loop {
            if st.aborted || st.gens[stream] != gen {
                return Next::Stop;
            }
            if let Some(b) = st.sched.next(stream) {
                return Next::Block(b);
            }
            if st.sched.is_done() {
                return Next::Done;
            }
            // Another stream's blocks may come back if it dies.
            st = self
                .cv
                .wait_timeout(st, Duration::from_millis(200))
                .unwrap()
                .0;
        }
    }

    fn ack(&self, stream: usize, gen: u64, bytes: u64) {
        let mut st = self.st.lock().unwrap();
        if st.gens[stream] != gen {
            return;
        }
        for f in st.sched.ack(stream, bytes) {
            let _ = self.events.send(Event::Acked(f));
        }
        if st.sched.is_done() {
            self.cv.notify_all();
        }
    }

    fn lost(&self, stream: usize, gen: u64, why: String) {
        let mut st = self.st.lock().unwrap();
        if st.gens[stream] != gen || st.aborted {
            return;
        }
        let had = !st.sched.is_done();
        st.sched.fail(stream);
        st.gens[stream] += 1;
        self.cv.notify_all();
        if had {
            let _ = self.events.send(Event::StreamLost(stream, why));
        }
    }
}

/// Runs one stream's connection until the transfer is done or the
/// connection dies. Returns `Ok(true)` when it ended the transfer normally.
pub fn worker(stream: usize, gen: u64, conn: Conn, shared: Arc<SendShared>) -> bool {
    shared.tel.set_socket(stream, conn.stream());
    let Conn { mut r, mut w } = conn;
    let acks = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || loop {
            match r.recv_opt() {
                Ok(Some(Message::Progress { bytes })) => shared.ack(stream, gen, bytes),
                Ok(None) => {
                    shared.lost(stream, gen, "the receiver closed the stream".into());
                    return;
                }
                Ok(Some(m)) => {
                    shared.lost(stream, gen, format!("unexpected {m:?}"));
                    return;
                }
                Err(e) => {
                    shared.lost(stream, gen, e.to_string());
                    return;
                }
            }
        })
    };
    let mut buf = vec![0u8; shared.block_size as usize];
    let finished = loop {
        match shared.next(stream, gen) {
            Next::Stop => break false,
            Next::Done => {
                break w
                    .send(&Message::Detach {
                        stream: stream as u16,
                    })
                    .is_ok()
            }
            Next::Block(b) => {
                let data = &mut buf[..b.len as usize];
                if let Err(e) = shared.files[b.file as usize].read_exact_at(data, b.offset) {
                    let _ = shared.events.send(Event::SourceFailed(
                        b.file,
                        format!("reading at {}: {e}", b.offset),
                    ));
                    shared.abort();
                    break false;
                }
                if let Some(p) = &shared.pacer {
                    p.wait(data.len());
                }
                let header = Message::Block {
                    file: b.file,
                    offset: b.offset,
                    len: b.len,
                    checksum: crc32c::crc32c(data),
                };
                if let Err(e) = w.send_with(&header, data) {
                    shared.lost(stream, gen, e.to_string());
                    break false;
                }
                shared.tel.add(stream, b.len as u64);
            }
        }
    };
    if finished {
        // The receiver closes after Detach; the reader sees that end.
        let _ = w.stream().shutdown(Shutdown::Write);
    } else {
        let _ = w.stream().shutdown(Shutdown::Both);
    }
    let _ = acks.join();
    finished
}

/// Hashes every file in order on its own thread.
pub fn spawn_hasher(sources: Vec<Source>, events: Sender<Event>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        for (i, s) in sources.iter().enumerate() {
            match hash_file(&s.local, s.entry.size) {
                Ok(h) => {
                    if events.send(Event::Hashed(i as u32, h)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = events.send(Event::SourceFailed(i as u32, e));
                    return;
                }
            }
        }
    })
}

/// BLAKE3 of a file that must still be `size` bytes long.
fn hash_file(path: &std::path::Path, size: u64) -> Result<[u8; 32], String> {
    let (hash, n) = crate::manifest::blake3_file(path)
        .map_err(|e| format!("hashing {}: {e}", path.display()))?;
    if n != size {
        return Err(format!(
            "{} changed size while being sent: {size} then {n} bytes",
            path.display()
        ));
    }
    Ok(hash)
}
