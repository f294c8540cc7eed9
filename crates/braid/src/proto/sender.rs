//! The sending end of a file session, without I/O: which block each stream
//! carries next, which files are wholly acknowledged (and so need their hash
//! completed), when a file is announced with `Verify`, whether the receiver's
//! `Verify` agrees, and when the session closes: `Close` follows the last
//! `Verify` at once (nothing is sent after it whatever the answers say),
//! and the receiver answers every file before its own `Close`. Streams join and leave here:
//! a stream asked to leave takes no new block and detaches once the receiver
//! has acknowledged what it carries.
//!
//! The driver (`engine`) feeds it what happened and performs the actions it
//! queues; stream workers call [`SenderCore::next`] under the driver's lock.

use std::collections::VecDeque;

use braid_wire::Message;

use crate::error::Error;
use crate::files::ranges::RangeSet;
use crate::proto::sched::{BlockRef, Scheduler};
use crate::proto::unexpected;

/// What a stream's worker does next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Block(BlockRef),
    /// Nothing for now: wait until the core changes (a stream dies and its
    /// blocks come back, or this stream's last block is acknowledged).
    Wait,
    /// Detach this connection: the transfer is over, or the stream leaves.
    Detach,
    /// Drop this connection without a word: it was replaced, or the session stopped.
    Stop,
}

/// What the driver does for the core.
#[derive(Debug)]
pub enum Action {
    /// A message on the control connection.
    Send(Message),
    /// Every byte of this file is acknowledged: complete its hash and report it.
    Hash(u32),
    /// Dial this stream (it joins the session, or is wanted again after leaving).
    Open(usize),
    /// Every file is announced: say `Close` with the bytes this end sent,
    /// behind the last `Verify` (the receiver answers those first).
    Close,
    /// Every file is verified: the receiver's `Close` comes next, and is
    /// waited for from now on.
    AllVerified,
    /// The receiver confirmed the end; it counted this many bytes.
    Finished(u64),
    /// The session failed: tell the peer why and stop every stream.
    Fail(Error),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum File {
    /// Blocks still to be acknowledged.
    Moving,
    /// Acknowledged; its hash is being completed.
    Hashing,
    /// `Verify` sent with this hash.
    Announced([u8; 32]),
    /// The receiver agreed (or a directory: nothing to check).
    Verified,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Carries blocks.
    Wanted,
    /// Takes no new block; detaches when its last one is acknowledged.
    Leaving,
    /// Detached (or never dialled); `Open` brings it back.
    Gone,
}

#[derive(Debug, PartialEq, Eq)]
enum Phase {
    Moving,
    /// `Close` sent behind the last `Verify`; waiting for the receiver's
    /// answers to them, then its `Close`.
    Closing,
    Over,
}

pub struct SenderCore {
    sched: Scheduler,
    /// Each stream's connection generation: word of an older one is ignored.
    gens: Vec<u64>,
    /// The generation each stream last detached at: its connection's end is no loss.
    detached: Vec<u64>,
    slots: Vec<Slot>,
    files: Vec<File>,
    names: Vec<String>,
    /// Files not yet announced (moving or hashing).
    unannounced: usize,
    unverified: usize,
    phase: Phase,
    actions: VecDeque<Action>,
}

impl SenderCore {
    /// `files`: each file's name (for messages), size, whether it is settled
    /// from the start (a directory, or a file the receiver keeps: nothing to
    /// move or verify), and what the receiver holds of it already.
    pub fn new(files: &[(String, u64, bool, RangeSet)], block_size: u32, streams: usize) -> Self {
        let plan: Vec<(u64, RangeSet)> = files
            .iter()
            .map(|(_, size, _, held)| (*size, held.clone()))
            .collect();
        let sched = Scheduler::new(&plan, block_size, streams);
        let mut core = SenderCore {
            gens: vec![0; streams],
            detached: vec![u64::MAX; streams],
            slots: vec![Slot::Wanted; streams],
            files: files
                .iter()
                .map(|f| if f.2 { File::Verified } else { File::Moving })
                .collect(),
            names: files.iter().map(|f| f.0.clone()).collect(),
            unannounced: files.iter().filter(|f| !f.2).count(),
            unverified: files.iter().filter(|f| !f.2).count(),
            phase: Phase::Moving,
            actions: VecDeque::new(),
            sched,
        };
        let done: Vec<u32> = core.sched.complete_at_start().collect();
        for f in done {
            core.acked(f);
        }
        core.check_end();
        core
    }

    /// The bytes still to move, for the progress display.
    pub fn to_move(files: &[(String, u64, bool, RangeSet)]) -> u64 {
        files
            .iter()
            .map(|(_, s, _, h)| s - h.covered().min(*s))
            .sum()
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    pub fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }

    pub fn requeued(&self) -> u64 {
        self.sched.requeued
    }

    /// Blocks are all acknowledged (files may still be hashing or verifying).
    pub fn all_acked(&self) -> bool {
        self.sched.is_done()
    }

    pub fn is_over(&self) -> bool {
        self.phase == Phase::Over
    }

    /// Streams the session has now (carrying, leaving or gone).
    pub fn streams(&self) -> usize {
        self.slots.len()
    }

    /// Streams that carry blocks.
    pub fn wanted(&self) -> usize {
        self.slots.iter().filter(|s| **s == Slot::Wanted).count()
    }

    pub fn is_wanted(&self, stream: usize) -> bool {
        self.slots.get(stream) == Some(&Slot::Wanted)
    }

    /// A new connection for `stream`: what an old one had in flight goes back.
    /// Returns the connection's generation.
    pub fn attach(&mut self, stream: usize) -> u64 {
        self.sched.fail(stream);
        self.gens[stream] += 1;
        if self.slots[stream] == Slot::Gone {
            self.slots[stream] = Slot::Wanted;
        }
        self.gens[stream]
    }

    /// Whether `stream` should be dialled again after its connection ended.
    pub fn redial(&self, stream: usize) -> bool {
        self.phase == Phase::Moving && self.slots[stream] == Slot::Wanted
    }

    pub fn next(&mut self, stream: usize, gen: u64) -> Next {
        if self.phase == Phase::Over || self.gens[stream] != gen {
            return Next::Stop;
        }
        if self.sched.is_done() {
            self.detached[stream] = gen;
            return Next::Detach;
        }
        if self.slots[stream] != Slot::Wanted {
            return if self.sched.in_flight(stream) == 0 {
                self.slots[stream] = Slot::Gone;
                self.detached[stream] = gen;
                Next::Detach
            } else {
                Next::Wait
            };
        }
        match self.sched.next(stream) {
            Some(b) => Next::Block(b),
            None => Next::Wait,
        }
    }

    /// The receiver has taken `total` payload bytes on this connection.
    pub fn on_progress(&mut self, stream: usize, gen: u64, total: u64) {
        if self.gens[stream] != gen {
            return;
        }
        for f in self.sched.ack(stream, total) {
            self.acked(f);
        }
    }

    /// A connection died. Its blocks go back in line. Returns whether it is a
    /// loss to tell (one before the end): the stream's own thread tells it,
    /// so that its word comes before anything that thread does next (a redial).
    pub fn on_lost(&mut self, stream: usize, gen: u64) -> bool {
        if self.gens[stream] != gen || self.phase == Phase::Over {
            return false;
        }
        let mid_transfer = !self.sched.is_done() && self.detached[stream] != gen;
        self.sched.fail(stream);
        self.gens[stream] += 1;
        if self.slots[stream] == Slot::Leaving {
            self.slots[stream] = Slot::Gone;
        }
        mid_transfer
    }

    /// The session should carry blocks on `n` streams: the first `n` carry,
    /// the rest leave once what they carry is acknowledged. With every block
    /// given out already, no stream is opened: it would find nothing to carry
    /// (a steer that sees the last blocks' streams go quiet may ask for more).
    pub fn set_streams(&mut self, n: usize) {
        let mut n = n.max(1);
        if self.phase != Phase::Moving {
            return;
        }
        if self.sched.queued() == 0 {
            n = n.min(self.wanted().max(1));
        }
        for i in 0..self.slots.len() {
            match (i < n, self.slots[i]) {
                (true, Slot::Leaving) => self.slots[i] = Slot::Wanted,
                (true, Slot::Gone) => {
                    self.slots[i] = Slot::Wanted;
                    self.actions.push_back(Action::Open(i));
                }
                (false, Slot::Wanted) => self.slots[i] = Slot::Leaving,
                _ => {}
            }
        }
        while self.slots.len() < n {
            let i = self.sched.add_stream();
            self.gens.push(0);
            self.detached.push(u64::MAX);
            self.slots.push(Slot::Wanted);
            self.actions.push_back(Action::Open(i));
        }
    }

    /// The file's whole-content hash is complete.
    pub fn on_hashed(&mut self, file: u32, hash: [u8; 32]) {
        if self.files.get(file as usize) == Some(&File::Hashing) {
            self.files[file as usize] = File::Announced(hash);
            self.unannounced -= 1;
            self.actions
                .push_back(Action::Send(Message::Verify { file, hash }));
            self.check_end();
        }
    }

    /// A message from the receiver on the control connection.
    pub fn on_control(&mut self, m: Message) {
        match (&self.phase, m) {
            (Phase::Moving | Phase::Closing, Message::Verify { file, hash }) => {
                match self.files.get(file as usize).copied() {
                    Some(File::Announced(ours)) if ours == hash => {
                        self.files[file as usize] = File::Verified;
                        self.unverified -= 1;
                        if self.unverified == 0 && self.phase == Phase::Closing {
                            self.actions.push_back(Action::AllVerified);
                        }
                    }
                    Some(File::Announced(_)) => self.fail(Error::Verify(format!(
                        "{}: the receiver's BLAKE3 differs",
                        self.names[file as usize]
                    ))),
                    _ => self.fail(Error::Protocol(format!(
                        "the receiver verified file {file} before it was announced"
                    ))),
                }
            }
            (Phase::Closing, Message::Close { bytes }) if self.unverified == 0 => {
                self.phase = Phase::Over;
                self.actions.push_back(Action::Finished(bytes));
            }
            (Phase::Closing, Message::Close { .. }) => self.fail(Error::Protocol(format!(
                "the receiver closed with {} files not verified",
                self.unverified
            ))),
            (Phase::Closing, m) => {
                self.fail(unexpected("a verification or the receiver's close", &m))
            }
            (_, m) => self.fail(unexpected("a verification", &m)),
        }
    }

    /// The session cannot go on (a source failed, the user stopped it, a stream gave up).
    pub fn fail(&mut self, e: Error) {
        if self.phase != Phase::Over {
            self.phase = Phase::Over;
            self.actions.push_back(Action::Fail(e));
        }
    }

    fn acked(&mut self, f: u32) {
        if self.files[f as usize] == File::Moving {
            self.files[f as usize] = File::Hashing;
            self.actions.push_back(Action::Hash(f));
        }
    }

    /// Once the last file is announced, `Close` follows its `Verify`.
    fn check_end(&mut self) {
        if self.unannounced == 0 && self.phase == Phase::Moving {
            self.phase = Phase::Closing;
            self.actions.push_back(Action::Close);
            if self.unverified == 0 {
                self.actions.push_back(Action::AllVerified);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(sizes: &[u64], streams: usize) -> SenderCore {
        let files: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("f{i}"), *s, false, RangeSet::new()))
            .collect();
        SenderCore::new(&files, 10, streams)
    }

    fn drain(c: &mut SenderCore) -> Vec<String> {
        std::iter::from_fn(|| c.poll_action())
            .map(|a| match a {
                Action::Send(Message::Verify { file, .. }) => format!("verify {file}"),
                Action::Send(m) => format!("{m:?}"),
                Action::Hash(f) => format!("hash {f}"),
                Action::Open(i) => format!("open {i}"),
                Action::Close => "close".into(),
                Action::AllVerified => "all verified".into(),
                Action::Finished(b) => format!("finished {b}"),
                Action::Fail(e) => format!("fail {e}"),
            })
            .collect()
    }

    fn block(c: &mut SenderCore, stream: usize, gen: u64) -> BlockRef {
        match c.next(stream, gen) {
            Next::Block(b) => b,
            other => panic!("expected a block, got {other:?}"),
        }
    }

    #[test]
    fn a_session_goes_acked_hashed_announced_verified_closed() {
        let mut c = core(&[15, 0], 1);
        // The empty file needs only its hash.
        assert_eq!(drain(&mut c), ["hash 1"]);
        let g = c.attach(0);
        block(&mut c, 0, g);
        block(&mut c, 0, g);
        assert_eq!(c.next(0, g), Next::Wait);
        c.on_progress(0, g, 10);
        assert!(drain(&mut c).is_empty());
        c.on_progress(0, g, 15);
        assert_eq!(drain(&mut c), ["hash 0"]);
        assert_eq!(c.next(0, g), Next::Detach);
        c.on_hashed(0, [7; 32]);
        assert_eq!(drain(&mut c), ["verify 0"]);
        // The last file's Verify: Close behind it, without waiting for the answers.
        c.on_hashed(1, [8; 32]);
        assert_eq!(drain(&mut c), ["verify 1", "close"]);
        c.on_control(Message::Verify {
            file: 1,
            hash: [8; 32],
        });
        assert!(drain(&mut c).is_empty());
        c.on_control(Message::Verify {
            file: 0,
            hash: [7; 32],
        });
        assert_eq!(drain(&mut c), ["all verified"]);
        c.on_control(Message::Close { bytes: 15 });
        assert_eq!(drain(&mut c), ["finished 15"]);
        assert!(c.is_over());
        assert_eq!(c.next(0, g), Next::Stop);
    }

    #[test]
    fn a_verify_that_disagrees_or_comes_early_fails_the_session() {
        let mut c = core(&[0], 1);
        c.on_control(Message::Verify {
            file: 0,
            hash: [1; 32],
        });
        let got = drain(&mut c);
        assert_eq!(got.len(), 2);
        assert!(got[1].contains("before it was announced"), "{got:?}");

        let mut c = core(&[0], 1);
        drain(&mut c);
        c.on_hashed(0, [2; 32]);
        drain(&mut c);
        c.on_control(Message::Verify {
            file: 0,
            hash: [3; 32],
        });
        let got = drain(&mut c);
        assert!(
            got[0].contains("f0: the receiver's BLAKE3 differs"),
            "{got:?}"
        );
        // Nothing after a failure: a later close does not finish it.
        c.on_control(Message::Close { bytes: 0 });
        assert!(drain(&mut c).is_empty());
    }

    #[test]
    fn a_lost_connection_gives_its_blocks_back_and_old_word_is_ignored() {
        let mut c = core(&[30], 2);
        let g0 = c.attach(0);
        let g1 = c.attach(1);
        let a = block(&mut c, 0, g0);
        block(&mut c, 1, g1);
        assert!(c.on_lost(0, g0), "a loss mid-transfer is told");
        assert!(!c.on_lost(0, g0), "once");
        assert!(drain(&mut c).is_empty());
        assert_eq!(c.next(0, g0), Next::Stop, "the old connection stops");
        // Progress of the dead connection counts for nothing.
        c.on_progress(0, g0, 10);
        assert_eq!(block(&mut c, 1, g1), a, "the lost block goes first in line");
        let g0 = c.attach(0);
        assert_eq!(block(&mut c, 0, g0).offset, 20);
        assert_eq!(c.requeued(), 1);
    }

    #[test]
    fn streams_join_and_a_leaving_one_detaches_once_its_blocks_are_acknowledged() {
        let mut c = core(&[100], 1);
        let g0 = c.attach(0);
        block(&mut c, 0, g0);
        c.set_streams(3);
        assert_eq!(drain(&mut c), ["open 1", "open 2"]);
        assert_eq!((c.streams(), c.wanted()), (3, 3));
        let g2 = c.attach(2);
        block(&mut c, 2, g2);
        c.set_streams(1);
        assert_eq!(c.wanted(), 1);
        // Stream 2 has a block out: it waits for it, takes no other.
        assert_eq!(c.next(2, g2), Next::Wait);
        c.on_progress(2, g2, 10);
        assert_eq!(c.next(2, g2), Next::Detach);
        // The receiver closes a detached connection: no loss to tell.
        assert!(!c.on_lost(2, g2));
        assert!(drain(&mut c).is_empty());
        assert!(!c.redial(2), "a stream that left is not dialled again");
        // Stream 1 never connected: it is gone without a word.
        assert_eq!(c.next(1, 0), Next::Detach);
        // Wanted again: dialled again.
        c.set_streams(2);
        assert_eq!(drain(&mut c), ["open 1"]);
        let g1 = c.attach(1);
        assert!(matches!(c.next(1, g1), Next::Block(_)));
    }

    #[test]
    fn no_stream_is_opened_once_every_block_is_given_out() {
        // 20 bytes in blocks of 10: both go out on stream 0.
        let mut c = core(&[20], 1);
        let g0 = c.attach(0);
        block(&mut c, 0, g0);
        block(&mut c, 0, g0);
        c.set_streams(4);
        assert!(drain(&mut c).is_empty(), "nothing left for a new stream");
        assert_eq!((c.streams(), c.wanted()), (1, 1));
        // A stream that dies gives its blocks back: more streams may carry them.
        assert!(c.on_lost(0, g0));
        c.set_streams(2);
        assert_eq!(drain(&mut c), ["open 1"]);
    }

    #[test]
    fn a_leaving_stream_whose_connection_dies_is_not_redialled() {
        let mut c = core(&[100], 2);
        let g1 = c.attach(1);
        block(&mut c, 1, g1);
        c.set_streams(1);
        assert!(c.on_lost(1, g1));
        assert!(!c.redial(1));
        assert!(c.redial(0));
    }

    #[test]
    fn a_directory_needs_nothing_and_an_empty_session_closes_at_once() {
        let files = vec![("d".to_string(), 0, true, RangeSet::new())];
        let mut c = SenderCore::new(&files, 10, 1);
        assert_eq!(drain(&mut c), ["close", "all verified"]);
        assert_eq!(c.next(0, c.gens[0]), Next::Detach);
    }

    #[test]
    fn a_receiver_that_closes_before_answering_every_file_fails_the_session() {
        let mut c = core(&[0, 0], 1);
        assert_eq!(drain(&mut c), ["hash 0", "hash 1"]);
        c.on_hashed(0, [1; 32]);
        c.on_hashed(1, [2; 32]);
        assert_eq!(drain(&mut c), ["verify 0", "verify 1", "close"]);
        c.on_control(Message::Verify {
            file: 0,
            hash: [1; 32],
        });
        assert!(drain(&mut c).is_empty());
        c.on_control(Message::Close { bytes: 0 });
        let got = drain(&mut c);
        assert_eq!(got.len(), 1);
        assert!(
            got[0].contains("closed with 1 files not verified"),
            "{got:?}"
        );
        assert!(c.is_over());
    }
}
