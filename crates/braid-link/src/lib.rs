//! braid-link: a user-space bottleneck link emulator.
//!
//! Each direction is a [`Direction`]: loss model -> queue (drop-tail or RED)
//! -> serialisation at the bottleneck rate -> delay line. The stages are
//! sans-IO; `src/main.rs` moves frames between two interfaces through them,
//! and [`wake::Wake`] says when it may sleep while it waits for the next.

pub mod direction;
pub mod hist;
pub mod loss;
pub mod red;
pub mod rng;
pub mod spec;
pub mod trace;
pub mod wake;

pub use direction::{Config, Direction, DropReason, Event, Frame, Limit, LossAt, QueueKind};
