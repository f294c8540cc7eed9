//! The sending core against a simulated receiver and network, seeded: blocks
//! travel per connection in order, acknowledgements lag behind, connections
//! die, streams join and leave, and a session is stopped and started again
//! from what the receiver holds (`--resume`). Every seed must end with every
//! byte of every file at the receiver, each file verified once.

use std::collections::VecDeque;

use braid_wire::Message;

use super::sender::{Action, Next, SenderCore};
use crate::files::ranges::RangeSet;
use crate::proto::sched::BlockRef;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// One live connection of a stream.
struct Link {
    gen: u64,
    /// Blocks sent and not yet at the receiver.
    wire: VecDeque<BlockRef>,
    /// Bytes the receiver took on this connection; `acked` of them the sender has heard of.
    received: u64,
    acked: u64,
    detached: bool,
}

struct World {
    rng: Rng,
    sizes: Vec<u64>,
    held: Vec<RangeSet>,
    links: Vec<Option<Link>>,
    /// Files the receiver confirmed, counted (each must be once).
    verified: Vec<u32>,
    kills: u64,
    losses_told: u64,
}

impl World {
    fn files(&self) -> Vec<(String, u64, bool, RangeSet)> {
        self.sizes
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("f{i}"), *s, false, self.held[i].clone()))
            .collect()
    }

    fn attach(&mut self, core: &mut SenderCore, i: usize) {
        if self.links.len() <= i {
            self.links.resize_with(i + 1, || None);
        }
        let gen = core.attach(i);
        self.links[i] = Some(Link {
            gen,
            wire: VecDeque::new(),
            received: 0,
            acked: 0,
            detached: false,
        });
    }

    /// Runs the core's actions; true once the session is finished or failed.
    fn act(&mut self, core: &mut SenderCore) -> Option<bool> {
        while let Some(a) = core.poll_action() {
            match a {
                Action::Hash(f) => {
                    // The sender's hash covers what it read; the receiver holds it all by now.
                    assert!(self.held[f as usize].is_complete(self.sizes[f as usize]));
                    core.on_hashed(f, [f as u8; 32]);
                }
                Action::Send(Message::Verify { file, hash }) => {
                    assert_eq!(hash, [file as u8; 32]);
                    self.verified.push(file);
                    core.on_control(Message::Verify { file, hash });
                }
                Action::Send(m) => panic!("unexpected {m:?}"),
                Action::Open(i) => self.attach(core, i),
                // The receiver answers every Verify before its Close, as here.
                Action::Close => core.on_control(Message::Close { bytes: 0 }),
                Action::AllVerified => {}
                Action::Finished(_) => return Some(true),
                Action::Fail(_) => return Some(false),
            }
        }
        None
    }

    /// One step of the world: a stream takes a block, a block arrives, an
    /// acknowledgement arrives, a connection dies, or the stream count changes.
    fn step(&mut self, core: &mut SenderCore, churn: bool) {
        let n = self.links.len();
        let i = self.rng.below(n as u64) as usize;
        let roll = self.rng.below(100);
        let Some(link) = self.links[i].as_mut() else {
            if core.redial(i) {
                self.attach(core, i);
            }
            return;
        };
        match roll {
            0..=39 if !link.detached => match core.next(i, link.gen) {
                Next::Block(b) => link.wire.push_back(b),
                Next::Detach => link.detached = true,
                Next::Stop => self.links[i] = None,
                Next::Wait => {}
            },
            40..=74 => {
                if let Some(b) = link.wire.pop_front() {
                    self.held[b.file as usize].insert(b.offset, b.offset + b.len as u64);
                    link.received += b.len as u64;
                }
            }
            75..=96 => {
                if link.acked < link.received {
                    // Acknowledgements are cumulative and may skip ahead.
                    link.acked = link.received;
                    core.on_progress(i, link.gen, link.acked);
                } else if link.detached && link.wire.is_empty() {
                    // The receiver closes a detached connection.
                    self.losses_told += core.on_lost(i, link.gen) as u64;
                    self.links[i] = None;
                }
            }
            _ if churn && self.rng.chance(300) => {
                self.kills += 1;
                self.losses_told += core.on_lost(i, link.gen) as u64;
                self.links[i] = None;
            }
            _ if churn => core.set_streams(1 + self.rng.below(6) as usize),
            _ => {}
        }
    }
}

/// Runs one session until it ends, or until `stop_after` steps (then it is
/// stopped as a Ctrl-C would). Returns whether it finished.
fn session(w: &mut World, streams: usize, churn: bool, stop_after: Option<u64>) -> bool {
    let mut core = SenderCore::new(&w.files(), 7, streams);
    w.links = (0..streams).map(|_| None).collect();
    for i in 0..streams {
        w.attach(&mut core, i);
    }
    for steps in 0.. {
        if let Some(done) = w.act(&mut core) {
            return done;
        }
        if stop_after == Some(steps) {
            core.fail(crate::error::Error::Interrupted);
            continue;
        }
        assert!(steps < 2_000_000, "the session did not end");
        w.step(&mut core, churn);
    }
    unreachable!()
}

fn world(seed: u64) -> World {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let sizes = (0..1 + rng.below(6))
        .map(|_| match rng.below(4) {
            0 => 0,
            1 => rng.below(8),
            _ => rng.below(400),
        })
        .collect::<Vec<_>>();
    World {
        held: vec![RangeSet::new(); sizes.len()],
        sizes,
        rng,
        links: Vec::new(),
        verified: Vec::new(),
        kills: 0,
        losses_told: 0,
    }
}

fn all_there(w: &World) {
    for (f, size) in w.sizes.iter().enumerate() {
        assert!(w.held[f].is_complete(*size), "file {f} incomplete");
    }
    let mut v = w.verified.clone();
    v.sort();
    assert_eq!(
        v,
        (0..w.sizes.len() as u32).collect::<Vec<_>>(),
        "each file verified once"
    );
}

#[test]
fn every_seed_delivers_every_byte_through_deaths_joins_and_leaves() {
    let (mut kills, mut told) = (0, 0);
    for seed in 1..=300 {
        let mut w = world(seed);
        let streams = 1 + (seed % 4) as usize;
        assert!(session(&mut w, streams, true, None), "seed {seed} failed");
        all_there(&w);
        assert!(w.losses_told <= w.kills, "seed {seed}: a loss told twice");
        kills += w.kills;
        told += w.losses_told;
    }
    // The churn is real: connections died, and most deaths were mid-transfer.
    assert!(
        kills > 300 && told > kills / 2,
        "kills {kills}, told {told}"
    );
}

#[test]
fn a_stopped_session_started_again_moves_only_what_the_receiver_lacks() {
    let mut restarts = 0;
    for seed in 1..=200 {
        let mut w = world(seed);
        let total: u64 = w.sizes.iter().sum();
        let stop = w.rng.below(300);
        if session(&mut w, 3, true, Some(stop)) {
            all_there(&w);
            continue;
        }
        restarts += 1;
        let had: u64 = w.held.iter().map(|h| h.covered()).sum();
        w.verified.clear();
        let lacking = SenderCore::to_move(&w.files());
        assert_eq!(lacking, total - had, "seed {seed}");
        assert!(
            session(&mut w, 2, false, None),
            "seed {seed}: the restart failed"
        );
        all_there(&w);
    }
    assert!(
        restarts > 100,
        "most sessions were stopped midway: {restarts}"
    );
}
