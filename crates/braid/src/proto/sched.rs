//! The striping scheduler: blocks of every file in one queue, pulled by
//! whichever stream is ready (GridFTP's extended block mode). A stream
//! carries blocks in order, so a receiver's running byte count acknowledges a
//! prefix of what that stream was given; a stream that dies gives the rest
//! back to the front of the queue.

use std::collections::VecDeque;

use crate::files::ranges::RangeSet;

/// One block: `len` bytes of `file` at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
}

#[derive(Default)]
struct Stream {
    /// Given to the stream and not yet acknowledged, oldest first.
    in_flight: VecDeque<BlockRef>,
    /// Payload bytes of `in_flight`'s blocks acknowledged so far on this connection.
    acked: u64,
    /// Where the front block's acknowledged bytes start.
    front_base: u64,
}

pub struct Scheduler {
    queue: VecDeque<BlockRef>,
    streams: Vec<Stream>,
    /// Bytes of each file still to be acknowledged.
    remaining: Vec<u64>,
    /// Blocks handed out again after a stream died.
    pub requeued: u64,
}

impl Scheduler {
    /// `files`: each file's size and the ranges the receiver already holds.
    pub fn new(files: &[(u64, RangeSet)], block_size: u32, streams: usize) -> Self {
        assert!(block_size > 0);
        let mut queue = VecDeque::new();
        let mut remaining = Vec::with_capacity(files.len());
        for (i, (size, held)) in files.iter().enumerate() {
            let mut left = 0;
            for (a, b) in held.missing(*size) {
                left += b - a;
                let mut at = a;
                while at < b {
                    let len = (b - at).min(block_size as u64) as u32;
                    queue.push_back(BlockRef {
                        file: i as u32,
                        offset: at,
                        len,
                    });
                    at += len as u64;
                }
            }
            remaining.push(left);
        }
        Self {
            queue,
            streams: (0..streams).map(|_| Stream::default()).collect(),
            remaining,
            requeued: 0,
        }
    }

    /// Files with nothing to move (empty, or wholly held already).
    pub fn complete_at_start(&self) -> impl Iterator<Item = u32> + '_ {
        self.remaining
            .iter()
            .enumerate()
            .filter(|(_, r)| **r == 0)
            .map(|(i, _)| i as u32)
    }

    /// The next block for `stream`, or `None` if the queue is empty (blocks
    /// may still come back if another stream dies).
    pub fn next(&mut self, stream: usize) -> Option<BlockRef> {
        let b = self.queue.pop_front()?;
        self.streams[stream].in_flight.push_back(b);
        Some(b)
    }

    /// The receiver has taken `total` payload bytes on `stream`'s current
    /// connection. Returns the files this completed.
    pub fn ack(&mut self, stream: usize, total: u64) -> Vec<u32> {
        let s = &mut self.streams[stream];
        let mut done = Vec::new();
        if total <= s.acked {
            return done;
        }
        s.acked = total;
        while let Some(b) = s.in_flight.front() {
            if s.front_base + b.len as u64 > s.acked {
                break;
            }
            s.front_base += b.len as u64;
            let r = &mut self.remaining[b.file as usize];
            *r -= b.len as u64;
            if *r == 0 {
                done.push(b.file);
            }
            s.in_flight.pop_front();
        }
        done
    }

    /// `stream`'s connection died: its unacknowledged blocks go first in line.
    pub fn fail(&mut self, stream: usize) {
        let s = &mut self.streams[stream];
        self.requeued += s.in_flight.len() as u64;
        while let Some(b) = s.in_flight.pop_back() {
            self.queue.push_front(b);
        }
        s.acked = 0;
        s.front_base = 0;
    }

    /// A stream that joins the session; its index is returned.
    pub fn add_stream(&mut self) -> usize {
        self.streams.push(Stream::default());
        self.streams.len() - 1
    }

    pub fn streams(&self) -> usize {
        self.streams.len()
    }

    /// Blocks given to `stream` and not acknowledged yet.
    pub fn in_flight(&self, stream: usize) -> usize {
        self.streams[stream].in_flight.len()
    }

    /// Blocks waiting for a stream to carry them.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Nothing queued and nothing unacknowledged.
    pub fn is_done(&self) -> bool {
        self.queue.is_empty() && self.streams.iter().all(|s| s.in_flight.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(sizes: &[u64]) -> Vec<(u64, RangeSet)> {
        sizes.iter().map(|s| (*s, RangeSet::new())).collect()
    }

    #[test]
    fn cuts_files_into_blocks_and_skips_held_ranges() {
        let mut held = RangeSet::new();
        held.insert(0, 10);
        let mut s = Scheduler::new(
            &[(25, held), (0, RangeSet::new()), (4, RangeSet::new())],
            10,
            1,
        );
        assert_eq!(s.complete_at_start().collect::<Vec<_>>(), vec![1]);
        let mut got = Vec::new();
        while let Some(b) = s.next(0) {
            got.push((b.file, b.offset, b.len));
        }
        assert_eq!(got, vec![(0, 10, 10), (0, 20, 5), (2, 0, 4)]);
    }

    #[test]
    fn cumulative_acks_complete_files_in_stream_order() {
        let mut s = Scheduler::new(&files(&[20, 5]), 10, 2);
        s.next(0); // file 0 [0,10)
        s.next(1); // file 0 [10,20)
        s.next(0); // file 1 [0,5)
        assert!(s.ack(0, 9).is_empty());
        assert!(
            s.ack(0, 10).is_empty(),
            "file 0's second block is still out on stream 1"
        );
        assert_eq!(s.ack(1, 10), vec![0]);
        assert_eq!(s.ack(0, 15), vec![1]);
        assert!(s.is_done());
    }

    #[test]
    fn a_dead_stream_gives_its_blocks_back_first_in_line() {
        let mut s = Scheduler::new(&files(&[40]), 10, 2);
        let a = s.next(0).unwrap();
        let b = s.next(0).unwrap();
        s.next(1);
        s.ack(0, 10); // a arrived, b did not
        s.fail(0);
        assert_eq!(s.requeued, 1);
        assert_eq!(s.next(1), Some(b));
        assert_ne!(a, b);
        // The reconnected stream counts from zero again.
        let c = s.next(0).unwrap();
        assert_eq!(c.offset, 30);
        assert!(s.ack(0, 10).is_empty());
        assert_eq!(s.ack(1, 20), vec![0]);
        assert!(s.is_done());
    }

    #[test]
    fn a_slow_stream_carries_less() {
        // Stream 1 takes a block only every fourth turn: it carries a quarter as many.
        let mut s = Scheduler::new(&files(&[1000]), 10, 2);
        let mut per = [0, 0];
        let mut turn = 0;
        loop {
            let st = if turn % 5 == 4 { 1 } else { 0 };
            turn += 1;
            match s.next(st) {
                Some(_) => per[st] += 1,
                None => break,
            }
        }
        assert_eq!(per, [80, 20]);
    }
}
