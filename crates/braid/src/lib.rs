//! braid's transfer engine: a session is one control connection and N data
//! streams. The client dials; whichever end sends data gives each of its
//! sockets the congestion control the session's mode asks for (Hacker 2004's
//! combined parallel TCP, Cho & Bettati's TCP-P, plain parallel streams, or
//! a steer that sets them as it goes).
//!
//! The rooms: `session` (the opening exchange, the sockets and the threads
//! that run a session, each end's files), `proto` (the session without I/O:
//! the order of messages, each end's state machine, the striping scheduler),
//! `steer` (how many streams carry and with which control: the fixed modes'
//! plan, auto, falcon), `path` (models of what streams move over a path, and
//! `braid plan`'s advice), `files` (what is sent and where it lands: listing,
//! paths below a root, range sets, the block-wise BLAKE3 tree). Pure logic
//! is apart from the I/O that drives it; `records` is every JSON line braid
//! prints.

pub mod cancel;
pub mod console;
pub mod error;
pub mod files;
pub mod path;
pub mod proto;
pub mod records;
pub mod session;
pub mod steer;
pub mod target;
pub mod telemetry;

pub use error::{Error, Result};
