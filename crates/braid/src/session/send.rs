//! The sending end of a file transfer: stream workers pull blocks from the
//! shared scheduler and hash each block they read into the file's BLAKE3
//! tree, an acknowledgement reader per stream retires them, and a finishing
//! thread completes each acknowledged file's hash (reading from disk only
//! the blocks the receiver held already) for the end-to-end check.

use std::fs::File;
use std::net::Shutdown;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use braid_wire::Message;

use crate::error::Result;
use crate::files::manifest::Source;
use crate::files::ranges::RangeSet;
use crate::files::treehash::{self, BlockHasher, BlockTree};
use crate::proto::sched::BlockRef;
use crate::proto::sender::{Action, Next, SenderCore};
use crate::proto::Answer;
use crate::session::conn::{Conn, FrameWriter};
use crate::session::engine::Notes;
use crate::session::pacer::Pacer;
use crate::session::sync::Removed;
use crate::telemetry::Telemetry;

/// What the sending session's driver hears about, besides the core's actions.
#[derive(Debug)]
pub enum Event {
    /// The core has actions queued.
    Wake,
    /// A file's whole-content hash is ready.
    Hashed(u32, [u8; 32]),
    /// A source file could not be read or hashed, or changed size.
    SourceFailed(u32, String),
    /// A message on the control connection, or its end.
    Control(Result<Message>),
    /// The session was stopped: the user's cancel, or a stream gave up.
    Stopped,
}

/// Source files open at once; past this a file is opened for each block, so
/// a tree of any number of files stays within the descriptor limit.
const OPEN_FILES: usize = 128;

pub struct SendShared {
    core: Mutex<SenderCore>,
    /// Wakes stream workers waiting for a block when the core changes.
    cv: Condvar,
    sources: Vec<Source>,
    /// Each source, open from its first block until its hash is complete.
    files: Vec<Mutex<Option<Arc<File>>>>,
    open: AtomicUsize,
    sizes: Vec<u64>,
    /// Each file's BLAKE3 tree, filled by the workers as blocks go out.
    trees: Vec<Mutex<BlockTree>>,
    block_size: u32,
    events: Sender<Event>,
    pub tel: Arc<Telemetry>,
    pacer: Option<Pacer>,
    /// What the receiver's --delete removed, as it said before its `Close`.
    pub removed: Mutex<Removed>,
    /// Each file the receiver held whole before the session (nothing of it moves).
    held_whole: Vec<bool>,
    /// Where a stream's thread tells of its loss.
    notes: Notes,
}

impl SendShared {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        sources: &[Source],
        answers: &[Answer],
        block_size: u32,
        streams: usize,
        events: Sender<Event>,
        tel: Arc<Telemetry>,
        limit_bps: Option<u64>,
        notes: Notes,
    ) -> Result<Arc<Self>> {
        // A file the receiver keeps is settled as a directory is: nothing
        // of it moves, nothing is verified.
        let plan: Vec<(String, u64, bool, RangeSet)> = sources
            .iter()
            .zip(answers)
            .map(|(s, a)| {
                let (settled, held) = match a {
                    Answer::Holds(h) => (!s.entry.is_file(), h.clone()),
                    Answer::Keeps => (true, RangeSet::from_ranges(&[(0, s.entry.size)])),
                };
                (s.entry.path.clone(), s.entry.size, settled, held)
            })
            .collect();
        tel.expected
            .store(SenderCore::to_move(&plan), Ordering::Relaxed);
        let held_whole = plan
            .iter()
            .map(|(_, size, _, held)| held.is_complete(*size))
            .collect();
        let core = SenderCore::new(&plan, block_size, streams);
        if core.has_actions() {
            let _ = events.send(Event::Wake);
        }
        Ok(Arc::new(SendShared {
            core: Mutex::new(core),
            cv: Condvar::new(),
            sources: sources.to_vec(),
            files: sources.iter().map(|_| Mutex::new(None)).collect(),
            open: AtomicUsize::new(0),
            sizes: sources.iter().map(|s| s.entry.size).collect(),
            trees: sources
                .iter()
                .map(|s| Mutex::new(BlockTree::new(s.entry.size, block_size)))
                .collect(),
            block_size,
            events,
            tel,
            pacer: limit_bps.map(Pacer::new),
            removed: Mutex::new(Removed::default()),
            held_whole,
            notes,
        }))
    }

    /// Runs `f` on the core; workers and the driver are woken if it changed anything.
    pub fn with_core<R>(&self, f: impl FnOnce(&mut SenderCore) -> R) -> R {
        let mut core = self.core.lock().unwrap();
        let r = f(&mut core);
        if core.has_actions() {
            let _ = self.events.send(Event::Wake);
        }
        drop(core);
        self.cv.notify_all();
        r
    }

    /// The core's queued actions, oldest first.
    pub fn actions(&self) -> Vec<Action> {
        let mut core = self.core.lock().unwrap();
        std::iter::from_fn(|| core.poll_action()).collect()
    }

    /// Source `f`, opened on first use and checked against what the manifest
    /// said of it: a file replaced since it was listed is not sent.
    fn file(&self, f: u32) -> Result<Arc<File>, String> {
        let mut slot = self.files[f as usize].lock().unwrap();
        if let Some(h) = &*slot {
            return Ok(Arc::clone(h));
        }
        let s = &self.sources[f as usize];
        let path = s.local.display();
        let file = s.open().map_err(|e| format!("opening {path}: {e}"))?;
        let m = file
            .metadata()
            .map_err(|e| format!("reading {path}: {e}"))?;
        if m.len() != s.entry.size || crate::files::manifest::mtime_ns(&m) != s.entry.mtime_ns {
            return Err(format!(
                "{path} changed since it was listed ({} bytes then, {} now); send it again",
                s.entry.size,
                m.len()
            ));
        }
        let h = Arc::new(file);
        if self.open.fetch_add(1, Ordering::Relaxed) < OPEN_FILES {
            *slot = Some(Arc::clone(&h));
        } else {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(h)
    }

    /// Closes source `f` once nothing more is read from it.
    fn close(&self, f: u32) {
        if self.files[f as usize].lock().unwrap().take().is_some() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// A new connection for `stream`: whatever the old one had in flight goes back.
    pub fn take_over(&self, stream: usize) -> u64 {
        self.with_core(|c| c.attach(stream))
    }

    pub fn requeued(&self) -> u64 {
        self.core.lock().unwrap().requeued()
    }

    /// Whether `stream` should be dialled again after its connection ended.
    pub fn redial(&self, stream: usize) -> bool {
        self.core.lock().unwrap().redial(stream)
    }

    /// Stops every stream worker (the driver has the error to tell).
    pub fn abort(&self) {
        self.with_core(|c| c.fail(crate::error::Error::Interrupted));
    }

    fn next(&self, stream: usize, gen: u64) -> Next {
        let mut core = self.core.lock().unwrap();
        loop {
            match core.next(stream, gen) {
                Next::Wait => core = self.cv.wait(core).unwrap(),
                next => return next,
            }
        }
    }

    fn ack(&self, stream: usize, gen: u64, bytes: u64) {
        self.with_core(|c| c.on_progress(stream, gen, bytes));
    }

    fn lost(&self, stream: usize, gen: u64, why: String) {
        if self.with_core(|c| c.on_lost(stream, gen)) {
            self.notes.say(
                "stream_lost",
                stream,
                &why,
                &format!("stream {stream} lost ({why}); its blocks go to the others"),
            );
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
        let mut refused = false;
        thread::spawn(move || loop {
            match r.recv_opt() {
                Ok(Some(Message::Progress { bytes })) => shared.ack(stream, gen, bytes),
                Ok(Some(Message::Bottleneck { bytes_per_sec })) => {
                    // Advice for the steer, not the transfer's: a word no receiver
                    // could have measured is said once and left out.
                    if let (Err(why), false) = (shared.tel.hear_bottleneck(bytes_per_sec), refused)
                    {
                        refused = true;
                        shared.notes.say("bottleneck_refused", stream, &why, &why);
                    }
                }
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
    let finished = loop {
        match shared.next(stream, gen) {
            Next::Stop => break false,
            Next::Wait => unreachable!("next() waits itself"),
            Next::Detach => {
                break w
                    .send(&Message::Detach {
                        stream: stream as u16,
                    })
                    .is_ok()
            }
            Next::Block(b) => match send_block(&mut w, &shared, b, stream) {
                Ok(()) => shared.tel.add(stream, b.len as u64),
                Err(Failed::Source(why)) => {
                    let _ = shared.events.send(Event::SourceFailed(b.file, why));
                    break false;
                }
                Err(Failed::Conn(e)) => {
                    shared.lost(stream, gen, e.to_string());
                    break false;
                }
            },
        }
    };
    if finished {
        // The receiver closes after Detach; the reader sees that end.
        w.finish();
    } else {
        let _ = w.stream().shutdown(Shutdown::Both);
    }
    let _ = acks.join();
    finished
}

/// Why a block did not go out.
enum Failed {
    /// Its source could not be read: the session fails.
    Source(String),
    /// The connection failed: the block goes to another stream.
    Conn(crate::error::Error),
}

/// Sends block `b`: read from its file piece by piece straight into the
/// records that carry it, each piece hashed into the block's value on the
/// way, so the bytes hashed are the bytes sent. Between records it takes
/// the steer's look at its stream (`stream`), if one is due.
fn send_block(
    w: &mut FrameWriter,
    shared: &SendShared,
    b: BlockRef,
    stream: usize,
) -> Result<(), Failed> {
    let file = shared.file(b.file).map_err(Failed::Source)?;
    let size = shared.sizes[b.file as usize];
    let mut value = treehash::block_index(size, shared.block_size, b.offset, b.len as u64)
        .map(|i| (i, BlockHasher::new(b.offset, b.len as u64, size)));
    if let Some(p) = &shared.pacer {
        p.wait(b.len as usize);
    }
    let header = Message::Block {
        file: b.file,
        offset: b.offset,
        len: b.len,
    };
    let sent = w.send_block(&header, b.len as usize, |piece, at, socket| {
        // Awake between two records' writes: the steer's look, if one is due.
        shared.tel.look_if_due(stream, socket);
        file.read_exact_at(piece, b.offset + at).map_err(|e| {
            format!(
                "reading {} at {}: {e}",
                shared.sources[b.file as usize].local.display(),
                b.offset + at
            )
        })?;
        if let Some((_, h)) = &mut value {
            h.update(piece);
        }
        Ok(())
    });
    sent.map_err(Failed::Conn)?.map_err(Failed::Source)?;
    if let Some((i, h)) = value {
        shared.trees[b.file as usize]
            .lock()
            .unwrap()
            .set(i, h.finish());
    }
    Ok(())
}

/// Completes the hash of each file whose index arrives on the returned
/// channel (once all its blocks are acknowledged), on its own thread: blocks
/// that were never read for sending are read now, and a source whose size or
/// mtime moved since the manifest fails, as its blocks may be of two versions.
pub fn spawn_finisher(
    sources: Vec<Source>,
    shared: Arc<SendShared>,
    events: Sender<Event>,
) -> Sender<u32> {
    let (tx, rx) = std::sync::mpsc::channel::<u32>();
    thread::spawn(move || {
        let mut buf = Vec::new();
        for f in rx {
            let result = finish(&sources[f as usize], &shared, f, &mut buf);
            shared.close(f);
            let event = match result {
                Ok(h) => Event::Hashed(f, h),
                Err(why) => Event::SourceFailed(f, why),
            };
            if events.send(event).is_err() {
                return;
            }
        }
    });
    tx
}

fn finish(
    source: &Source,
    shared: &SendShared,
    f: u32,
    buf: &mut Vec<u8>,
) -> Result<[u8; 32], String> {
    let path = source.local.display();
    // A file read whole for its sum (--checksum) that the receiver held
    // whole (no block of it moved) has that sum as its hash: BLAKE3's tree
    // of its blocks is BLAKE3 of the file. Whether it changed since is
    // asked below, as for any file.
    let tree = &shared.trees[f as usize];
    let known = source.sum.filter(|_| shared.held_whole[f as usize]);
    let missing = if known.is_some() {
        Vec::new()
    } else {
        tree.lock().unwrap().missing()
    };
    for (i, offset, len) in missing {
        buf.resize(len, 0);
        shared
            .file(f)?
            .read_exact_at(buf, offset)
            .map_err(|e| format!("hashing {path} at {offset}: {e}"))?;
        let value = treehash::hash_block(buf, offset, source.entry.size);
        shared.trees[f as usize].lock().unwrap().set(i, value);
    }
    let meta = source
        .open()
        .and_then(|f| f.metadata())
        .map_err(|e| format!("reading {path}: {e}"))?;
    if meta.len() != source.entry.size
        || crate::files::manifest::mtime_ns(&meta) != source.entry.mtime_ns
    {
        return Err(format!(
            "{path} changed while being sent ({} bytes then {}); send it again",
            source.entry.size,
            meta.len()
        ));
    }
    Ok(known.unwrap_or_else(|| {
        tree.lock()
            .unwrap()
            .root()
            .expect("every block has a value")
    }))
}
