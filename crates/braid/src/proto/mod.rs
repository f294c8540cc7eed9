//! A session's protocol: the order of its messages (here), and each end's
//! logic as a state machine without I/O (`sender`, `receiver`, `steer`).
//! The I/O is elsewhere: `client` and `server` each do their half of the
//! opening exchange below, then `driver` (with `engine`'s control loops)
//! owns the sockets and the threads, feeds these machines what happened and
//! does what they say.
//!
//! # The order of a session's messages
//!
//! One control connection, then data streams that attach to the session.
//! `C` is the client (it dials everything), `S` the server.
//!
//! ```text
//! control connection
//!   C -> S  Hello {version, nonce}            a version the server does not speak: Error 426
//!   S -> C  Challenge {version, nonce, suites} how the server can seal (and whether it allows plain)
//!   C -> S  Proof {mac, offer}                 the token, proven, and how the client can seal; both
//!                                              ends choose the suite from the offer and the suites
//!                                              (braid_wire::seal::Offer::choose) and derive the
//!                                              session key. Everything the client sends from here
//!                                              on is sealed (braid_wire::seal), without waiting;
//!                                              a wrong token: Error 401
//!   S -> C  Welcome {mac, suite}               the server proves it too; everything it sends from
//!                                              here on is sealed. (A plain session's client waits
//!                                              for the Welcome before its Open.)
//!   C -> S  Open {kind, mode, streams, ...}    send | get | bench
//!   C -> S  Filter {rules}                     send, get with FLAG_FILTER (--exclude/--include)
//!   send:  C -> S Manifest* (the files, 1 MiB frames), Sums* (FLAG_CHECKSUM),
//!                 Link (one per link of the manifest, FLAG_LINKS),
//!                 Owners* (FLAG_OWNER or FLAG_GROUP: each entry's ids, in order),
//!                 HardLink (one per hard link of the manifest, FLAG_HARD_LINKS)
//!          S -> C Accepted {session}
//!          S -> C Ranges or Keep (one per file: what it holds already, or that it keeps its own)
//!          with FLAG_DRY_RUN: S -> C Removed* (FLAG_DELETE), Close {0}; the session ends
//!   get:   C -> S Manifest* (the names wanted)          S -> C Accepted {session}
//!          S -> C Manifest* (the files), Sums*, Link, Owners*, HardLink
//!                                                       C -> S Ranges or Keep (one per file)
//!          with FLAG_DRY_RUN: S -> C Close {0}; the session ends
//!   bench: S -> C Accepted {session}
//!
//! every data stream (a new TCP connection, any time while the session runs; the
//! client begins the first streams' connections while it waits for Accepted, and a
//! server says nothing on one before its Attach)
//!   C -> S  Attach {session, stream, counter, mac}   a replayed counter or wrong mac: Error 401;
//!                                                    a stream past the session's: Error 400
//!   (sealed from here, with keys of this connection: the session key, stream and counter)
//!   S -> C  Accepted {session}                 a client that sends does not wait for it: its
//!                                              blocks follow the Attach, and Accepted is the
//!                                              first frame it reads back
//!   sender -> receiver  Block {file, offset, len} + bytes, ...
//!   receiver -> sender  Progress {bytes}     cumulative on this connection: acknowledges a prefix
//!   receiver -> sender  Bottleneck {bytes_per_sec}  the path's bottleneck as the receiver's
//!                                            arrivals show it (path::dispersion), about each second
//!   sender -> receiver  Detach               the transfer is over, or this stream leaves
//!   (a connection that dies gives its unacknowledged blocks back; the client attaches again)
//!
//! files, on the control connection, while the streams run
//!   sender -> receiver  Verify {file, blake3}   all of the file acknowledged, its hash complete
//!   receiver -> sender  Verify {file, blake3}   the receiver's own hash agrees; the file is published
//!   sender -> receiver  Close {bytes}           right behind the last Verify, without waiting
//!                                              for the answers: every file is announced
//!   receiver -> sender  Verify*                 its answers to every Verify before the Close
//!                                              (a Close before them all: the session fails)
//!   receiver -> sender  Removed* (FLAG_DELETE: what it removed once every file was published)
//!   receiver -> sender  Close {bytes}
//!
//! bench: the streams carry bare data (sealed records of zeros) until the sender's
//!   deadline (and Bottleneck back, as above); then sender -> receiver Close {bytes}, receiver -> sender Close {bytes}.
//!
//! a sealed connection ends with the sender's sealed END record, so a connection cut
//! short is never taken for a finished one; a record that does not open (changed,
//! dropped, repeated, reordered, forged) ends the session (Error::Tampered).
//!
//! Either end may say Error {code, message} at any point and close; the codes
//! are braid_wire::Code.
//! ```

use braid_wire::Message;

use crate::error::Error;
use crate::files::ranges::RangeSet;

pub mod receiver;
pub mod sched;
pub mod sender;
pub mod steer;

#[cfg(test)]
mod sim;

/// A message that is not the one the order above has next.
pub(crate) fn unexpected(wanted: &str, got: &Message) -> Error {
    let name = format!("{got:?}");
    let name = name.split([' ', '(', '{']).next().unwrap_or("?").to_owned();
    Error::Protocol(format!("expected {wanted}, got {name}"))
}

/// What the receiver said of one file of the manifest before any data moved.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// It holds these ranges already (none: it wants the whole file).
    Holds(RangeSet),
    /// It keeps its own file as it is: nothing is sent or verified.
    Keeps,
}
