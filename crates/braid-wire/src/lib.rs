//! braid's wire protocol, as pure encode/decode with no I/O.
//!
//! A session is one control connection and N data connections. Every
//! connection carries frames:
//!
//! ```text
//!  0        4      5
//!  | length | type | payload (length - 1 bytes) ...
//! ```
//! `length` (big-endian u32) counts the type byte and the payload and is at
//! most [`MAX_FRAME`]. Integers are big-endian; a string is a u16 byte count
//! and UTF-8; a list is a u32 count and its items. A `Block` frame is a
//! header only: its `len` bytes of data follow it raw on the same stream.
//!
//! The handshake (see [`auth`]): the client says `Hello` with a nonce, the
//! server answers `Challenge` with its own and the suites it can run, the
//! client proves it holds the token (`Proof`, with the suites it offers) and
//! seals what it sends from there on with the suite both ends choose from the
//! two ([`seal::Offer::choose`]), without waiting; the server proves it too
//! (`Welcome`, with that suite). The token itself never crosses the wire. Data connections `Attach` with a proof keyed by the session key both
//! ends derived, over a counter the server accepts once. From there on every
//! byte of every connection travels in sealed records ([`seal`]).
//!
//! If [`decode`] returns `Ok(Some(..))`, the message is complete and valid;
//! malformed input is an error naming what is wrong, never a panic.

pub mod auth;
mod codec;
mod message;
pub mod seal;

pub use codec::{cut, decode, encode, DecodeError, MAX_FRAME};
pub use message::{
    Code, FileEntry, Kind, Message, Mode, SessionParams, FLAG_CHECKSUM, FLAG_DELETE, FLAG_DRY_RUN,
    FLAG_FILTER, FLAG_GROUP, FLAG_HARD_LINKS, FLAG_LINKS, FLAG_NAME_AS_DEST, FLAG_OWNER,
    FLAG_RESUME, FLAG_REVERSE, FLAG_UPDATE, MODE_DIR, MODE_HARD_LINK, MODE_LINK,
};

/// The protocol version this build speaks; a peer with another is refused.
/// 3: every frame after the handshake is sealed (see [`seal`]); 4: the
/// receiver tells the sender the bottleneck's rate it sees (`Bottleneck`);
/// 5: the server announces its suites in `Challenge` and the client seals
/// right behind its `Proof`, a round trip sooner.
pub const VERSION: u16 = 5;
