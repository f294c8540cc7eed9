//! braid's transfer engine: a session is one control connection and N data
//! streams. The client dials; whichever end sends data gives each of its
//! sockets the congestion control the session's mode asks for (Hacker 2004's
//! combined parallel TCP, Cho & Bettati's TCP-P, or plain parallel streams).
//!
//! Pure logic (what a mode means per stream, the striping scheduler, range
//! sets, path checks, rate limiting, the block-wise BLAKE3 tree) is apart from the I/O that drives it.

pub mod advice;
pub mod auto;
pub mod bench;
pub mod beneath;
pub mod bootstrap;
pub mod cancel;
pub mod client;
pub mod conn;
pub mod console;
pub mod driver;
pub mod engine;
pub mod error;
pub mod falcon;
pub mod manifest;
pub mod model;
pub mod pacer;
pub mod pathsafe;
pub mod plan;
pub mod proto;
pub mod ranges;
pub mod receive;
pub mod records;
pub mod sched;
pub mod send;
pub mod server;
pub mod session;
pub mod target;
pub mod telemetry;
pub mod treehash;

pub use error::{Error, Result};
