//! The engine's errors, each with what it was doing, and the exit code it means.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad arguments or a request the engine refuses before any I/O.
    #[error("{0}")]
    Usage(String),
    /// A local file or socket operation failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// The peer could not be reached or went away.
    #[error("{what}: {source}")]
    Connect {
        what: String,
        #[source]
        source: io::Error,
    },
    /// Either end failed to prove it holds the token.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// The peer sent something the protocol does not allow.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The peer reported an error.
    #[error("the peer refused: {message} (code {code})")]
    Remote { code: u16, message: String },
    /// A checksum or whole-file hash did not match.
    #[error("verification failed: {0}")]
    Verify(String),
    /// SIGINT or SIGTERM: the session stopped, with what arrived journaled for --resume.
    #[error("interrupted; a transfer keeps what arrived for --resume")]
    Interrupted,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Exit codes of `braid send|get|bench|serve`, documented in README.
pub mod exit {
    pub const USAGE: u8 = 2;
    pub const LOCAL_IO: u8 = 3;
    pub const CONNECT: u8 = 4;
    pub const AUTH: u8 = 5;
    pub const PROTOCOL: u8 = 6;
    pub const REMOTE: u8 = 7;
    pub const VERIFY: u8 = 8;
    /// 128 + SIGINT, as shells report a Ctrl-C.
    pub const INTERRUPTED: u8 = 130;
}

/// Codes carried in `Error` frames.
pub mod code {
    pub const BAD_REQUEST: u16 = 400;
    pub const AUTH: u16 = 401;
    pub const FORBIDDEN_PATH: u16 = 403;
    pub const NOT_FOUND: u16 = 404;
    pub const VERSION: u16 = 426;
    pub const IO: u16 = 500;
    pub const VERIFY: u16 = 502;
    pub const NO_SPACE: u16 = 507;
}

impl Error {
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }

    pub fn connect(what: impl Into<String>, source: io::Error) -> Self {
        Error::Connect {
            what: what.into(),
            source,
        }
    }

    /// Nothing listens at the address: the case where starting the far end over ssh helps.
    pub fn is_refused(&self) -> bool {
        matches!(self, Error::Connect { source, .. } if source.kind() == io::ErrorKind::ConnectionRefused)
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::Io { .. } => exit::LOCAL_IO,
            Error::Connect { .. } => exit::CONNECT,
            Error::Auth(_) => exit::AUTH,
            Error::Protocol(_) => exit::PROTOCOL,
            Error::Remote { code, .. } if *code == code::AUTH => exit::AUTH,
            Error::Remote { code, .. } if *code == code::VERIFY => exit::VERIFY,
            Error::Remote { .. } => exit::REMOTE,
            Error::Verify(_) => exit::VERIFY,
            Error::Interrupted => exit::INTERRUPTED,
        }
    }

    /// The code and text to tell the peer.
    pub fn to_wire(&self) -> (u16, String) {
        let c = match self {
            Error::Usage(_) | Error::Protocol(_) => code::BAD_REQUEST,
            Error::Auth(_) => code::AUTH,
            Error::Verify(_) => code::VERIFY,
            Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC) => {
                code::NO_SPACE
            }
            Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => code::NOT_FOUND,
            Error::Remote { code, .. } => *code,
            _ => code::IO,
        };
        (c, self.to_string())
    }
}
