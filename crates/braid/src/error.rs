//! The engine's errors, each with what it was doing, and the exit code it means.

use std::io;

pub use braid_wire::Code;

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
    /// The peer reported an error: it refused, or it stopped or was full.
    #[error("{} {message} (code {code})", remote_prefix(*code))]
    Remote { code: u16, message: String },
    /// This end refuses what the peer asked (a path it does not write, a
    /// file another session is writing, no space, one of its limits); the
    /// peer hears `code` and the message as they are.
    #[error("{message}")]
    Refused { code: Code, message: String },
    /// A checksum or whole-file hash did not match.
    #[error("verification failed: {0}")]
    Verify(String),
    /// A sealed record did not open: someone on the path changed, dropped,
    /// repeated, reordered or forged what a connection carried. Nothing it
    /// carried is used.
    #[error("the connection was tampered with: {0}; nothing it carried was used")]
    Tampered(String),
    /// SIGINT or SIGTERM: the session stopped, with what arrived journaled for the next.
    #[error("interrupted; a transfer keeps what arrived, and the same command moves the rest")]
    Interrupted,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

fn remote_prefix(code: u16) -> &'static str {
    match Code::from_u16(code) {
        Some(Code::Unavailable | Code::Timeout) => "the peer stopped:",
        _ => "the peer refused:",
    }
}

/// Exit codes of `braid send|get|bench|serve`, documented in README.
pub mod exit {
    pub const USAGE: u8 = 2;
    pub const LOCAL_IO: u8 = 3;
    pub const CONNECT: u8 = 4;
    pub const AUTH: u8 = 5;
    pub const PROTOCOL: u8 = 6;
    pub const REMOTE: u8 = 7;
    pub const VERIFY: u8 = 8;
    /// This end refused the request (a local path it does not write, a
    /// file in use, no space for the files, one of its limits).
    pub const REFUSED: u8 = 9;
    /// 128 + SIGINT, as shells report a Ctrl-C.
    pub const INTERRUPTED: u8 = 130;
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

    pub fn refused(code: Code, message: impl Into<String>) -> Self {
        Error::Refused {
            code,
            message: message.into(),
        }
    }

    /// The peer said nothing for longer than allowed (the connection itself may be fine).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Connect { source, .. } if matches!(source.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock))
    }

    /// Nothing listens at the address: the case where starting the far end over ssh helps.
    pub fn is_refused(&self) -> bool {
        matches!(self, Error::Connect { source, .. } if source.kind() == io::ErrorKind::ConnectionRefused)
    }

    /// The address to listen on is taken (another port of a range may be free).
    pub fn is_addr_in_use(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::AddrInUse)
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::Io { .. } => exit::LOCAL_IO,
            Error::Connect { .. } => exit::CONNECT,
            Error::Auth(_) => exit::AUTH,
            Error::Protocol(_) => exit::PROTOCOL,
            Error::Remote { code, .. } => match Code::from_u16(*code) {
                Some(Code::Auth) => exit::AUTH,
                Some(Code::Verify) => exit::VERIFY,
                // The peer went away (Ctrl-C there, a full server, a timeout):
                // as for a dropped connection, --resume moves the rest.
                Some(Code::Unavailable | Code::Timeout) => exit::CONNECT,
                _ => exit::REMOTE,
            },
            Error::Refused { .. } => exit::REFUSED,
            Error::Verify(_) | Error::Tampered(_) => exit::VERIFY,
            Error::Interrupted => exit::INTERRUPTED,
        }
    }

    /// The code and text to tell the peer: what this end says in its own
    /// words, a peer's error passed on as that peer put it.
    pub fn to_wire(&self) -> (u16, String) {
        let c = match self {
            Error::Usage(_) | Error::Protocol(_) => Code::BadRequest,
            Error::Auth(_) => Code::Auth,
            Error::Verify(_) | Error::Tampered(_) => Code::Verify,
            Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC) => {
                Code::NoSpace
            }
            Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => Code::NotFound,
            Error::Connect { source, .. }
                if matches!(
                    source.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Code::Timeout
            }
            Error::Remote { code, message } => return (*code, message.clone()),
            Error::Refused { code, message } => return (*code as u16, message.clone()),
            Error::Interrupted => {
                return (
                    Code::Unavailable as u16,
                    "interrupted (Ctrl-C or SIGTERM); what arrived is kept: the same command \
                     moves the rest"
                        .into(),
                )
            }
            _ => Code::Io,
        };
        (c as u16, self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_crosses_once_with_its_code_and_no_prefix_doubled() {
        let here = Error::refused(Code::ForbiddenPath, "refusing \"../x\": it leaves the root");
        assert_eq!(here.exit_code(), exit::REFUSED);
        let (code, message) = here.to_wire();
        let there = Error::Remote { code, message };
        assert_eq!(
            there.to_string(),
            "the peer refused: refusing \"../x\": it leaves the root (code 403)"
        );
        assert_eq!(there.exit_code(), exit::REMOTE);
        // Passed on again (a far end started over ssh), it is not wrapped twice.
        let (c2, m2) = there.to_wire();
        assert_eq!((c2, m2.matches("code").count()), (403, 0));
    }

    #[test]
    fn a_stopped_or_full_peer_is_a_lost_connection_not_a_refusal() {
        let (code, message) = Error::Interrupted.to_wire();
        let e = Error::Remote { code, message };
        assert!(
            e.to_string().starts_with("the peer stopped: interrupted"),
            "{e}"
        );
        assert_eq!(e.exit_code(), exit::CONNECT);
        let idle = Error::connect(
            "receiving from 10.0.0.1:5000",
            io::Error::from(io::ErrorKind::WouldBlock),
        );
        assert_eq!(idle.to_wire().0, Code::Timeout as u16);
        let nospace = Error::io("writing f", io::Error::from_raw_os_error(libc::ENOSPC));
        assert_eq!(nospace.to_wire().0, Code::NoSpace as u16);
    }
}
