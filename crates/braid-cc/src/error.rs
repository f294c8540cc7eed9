//! Errors of braid-cc, each saying what failed and what to do.

use std::io;
use std::path::PathBuf;

/// The result type of braid-cc.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong while installing, configuring or reading the controls.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The controls are not installed where we looked.
    #[error("braid's congestion controls are not installed ({path} is missing); run `braid cc install` as root")]
    NotInstalled { path: PathBuf },

    /// The kernel refused a BPF operation for lack of privilege.
    #[error("{what}: permission denied; braid's congestion controls need root (CAP_BPF and CAP_NET_ADMIN)")]
    NotPermitted { what: String },

    /// Opening, verifying or loading the BPF object failed.
    #[error("loading the BPF congestion controls: {source}")]
    Load {
        #[source]
        source: libbpf_rs::Error,
    },

    /// Registering one control with the kernel failed.
    #[error("registering {name} with the kernel: {source}")]
    Register {
        name: &'static str,
        #[source]
        source: libbpf_rs::Error,
    },

    /// A map read or write failed.
    #[error("{what}: {source}")]
    Map {
        what: String,
        #[source]
        source: libbpf_rs::Error,
    },

    /// A file or sysctl operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// The pinned maps were written by a braid of another layout.
    #[error("the maps pinned in {path} have layout version {found}, this braid uses {expected}; run `braid cc uninstall` and `braid cc install`")]
    AbiMismatch {
        path: PathBuf,
        found: u32,
        expected: u32,
    },

    /// A setting outside its range.
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            what,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn map(what: impl Into<String>, source: libbpf_rs::Error) -> Self {
        let what = what.into();
        if source.kind() == libbpf_rs::ErrorKind::PermissionDenied {
            return Error::NotPermitted { what };
        }
        Error::Map { what, source }
    }
}
