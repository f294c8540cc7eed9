//! The messages of a session.

/// What a session moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Memory to memory for a time, like iperf3.
    Bench = 0,
    /// The client sends files.
    Send = 1,
    /// The client fetches files; the server sends.
    Get = 2,
}

/// How the sending end sets its streams' congestion controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// One stream, the system's default control.
    Single = 0,
    /// N streams, all with `cc`.
    Parallel = 1,
    /// Stream 0 Reno, streams 1..N braid_frac with `frac_cwnd` (Hacker 2004).
    Combined = 2,
    /// N braid_tcpp streams of one group with strength `strength_milli`/1000 (Cho & Bettati).
    Tcpp = 3,
    /// N braid_tcpp streams whose strength the sending end steers while it runs:
    /// up while the path shows no queue, down to `strength_milli`/1000 (the
    /// fair share) while it does.
    Auto = 4,
    /// Parallel streams of `cc` whose number the sending end searches for
    /// (Falcon's gradient over n), from 1 up to `streams`.
    Falcon = 5,
}

/// What the client asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionParams {
    pub kind: Kind,
    pub mode: Mode,
    pub streams: u16,
    /// Parallel mode's control ("" = the system default).
    pub cc: String,
    /// Combined mode: frac_cwnd of streams 1..N (1000/m).
    pub frac_cwnd: u16,
    /// TCP-P mode: k x 1000.
    pub strength_milli: u32,
    /// Bench: how long to send, ms.
    pub duration_ms: u32,
    /// Bytes per block.
    pub block_size: u32,
    /// [`FLAG_RESUME`], [`FLAG_REVERSE`], [`FLAG_NAME_AS_DEST`]; unknown bits are refused.
    pub flags: u32,
    /// The client's rate limit for the whole session in bits per second (0: none); a
    /// sending server keeps to the lower of this and its own.
    pub limit_bps: u64,
}

/// Send/get: the receiver keeps what it already holds and says so in `Ranges`.
pub const FLAG_RESUME: u32 = 1;
/// Bench: the server sends and the client receives.
pub const FLAG_REVERSE: u32 = 2;
/// Send of one file: its destination path names the file itself (as `scp f
/// host:new.txt`), unless that path is a directory at the receiver, which
/// then holds it under its own name. The manifest's one entry is
/// `DEST/NAME`; the receiver decides, since only it sees its tree.
pub const FLAG_NAME_AS_DEST: u32 = 4;
/// Send/get: the receiver keeps a file that is newer there than the
/// sender's (rsync's --update), and says so with `Keep`.
pub const FLAG_UPDATE: u32 = 8;
/// Send/get: the sender's `Sums` follow its manifest; the receiver skips a
/// file whose content it holds already (same size and BLAKE3), whatever its
/// time, and sends the rest whole.
pub const FLAG_CHECKSUM: u32 = 16;
/// Send/get: the receiver answers what it holds and would keep (and, with
/// [`FLAG_DELETE`], would remove), and the session ends there: nothing is
/// written, moved or removed.
pub const FLAG_DRY_RUN: u32 = 32;
/// Send/get: once every file is published, the receiver removes what lies in
/// the manifest's directories and is not in the manifest (rsync's --delete;
/// what the filter excludes is kept), and tells the sender with `Removed`.
pub const FLAG_DELETE: u32 = 64;
/// Send/get: a `Filter` follows `Open`.
pub const FLAG_FILTER: u32 = 128;
/// Send/get: the manifest may hold symbolic links (entries of [`MODE_LINK`]),
/// each one's target in a `Link` after the manifest; a get's server lists
/// links as links only for a client that says so.
pub const FLAG_LINKS: u32 = 256;
/// Send/get: the sender's `Owners` follow its manifest (after its `Sums` and
/// `Link`s); the receiver gives each entry its owner (user id), and keeps the
/// setuid bit with it. A receiver that is not root, or a server not started
/// to keep owners, refuses the session.
pub const FLAG_OWNER: u32 = 512;
/// As [`FLAG_OWNER`], for the group id and the setgid bit.
pub const FLAG_GROUP: u32 = 1024;
/// Send/get: the manifest may hold further names of a file it lists earlier
/// (entries of [`MODE_HARD_LINK`]), each one's first name in a `HardLink`
/// after the manifest (and its `Link`s and `Owners`); a get's server lists
/// them so only for a client that says so.
pub const FLAG_HARD_LINKS: u32 = 2048;
pub(crate) const KNOWN_FLAGS: u32 = FLAG_RESUME
    | FLAG_REVERSE
    | FLAG_NAME_AS_DEST
    | FLAG_UPDATE
    | FLAG_CHECKSUM
    | FLAG_DRY_RUN
    | FLAG_DELETE
    | FLAG_FILTER
    | FLAG_LINKS
    | FLAG_OWNER
    | FLAG_GROUP
    | FLAG_HARD_LINKS;

/// The file-type bits of [`FileEntry::mode`] that mark a directory (S_IFDIR):
/// a directory travels as an entry of size 0, so an empty one arrives too.
pub const MODE_DIR: u32 = 0o040000;

/// One file (or directory, see [`MODE_DIR`]) of a manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Relative, '/'-separated; the receiver checks it stays below its root.
    pub path: String,
    pub size: u64,
    /// Permission bits, and [`MODE_DIR`] for a directory.
    pub mode: u32,
    pub mtime_ns: i64,
}

/// The file-type bits of [`FileEntry::mode`] that mark a symbolic link
/// (S_IFLNK): it travels as an entry of size 0, its target in a `Link`.
pub const MODE_LINK: u32 = 0o120000;
/// The file-type bits of [`FileEntry::mode`] that mark a further name of a
/// file listed earlier (a hard link, S_IFREG: a plain file's entry carries
/// no type bits): it travels as an entry of size 0, the file it names in a
/// `HardLink`.
pub const MODE_HARD_LINK: u32 = 0o100000;
const MODE_TYPE: u32 = 0o170000;

impl FileEntry {
    pub fn is_dir(&self) -> bool {
        self.mode & MODE_TYPE == MODE_DIR
    }

    pub fn is_link(&self) -> bool {
        self.mode & MODE_TYPE == MODE_LINK
    }

    pub fn is_hard_link(&self) -> bool {
        self.mode & MODE_TYPE == MODE_HARD_LINK
    }

    /// A file with content: neither a directory nor a link of either kind.
    pub fn is_file(&self) -> bool {
        !self.is_dir() && !self.is_link() && !self.is_hard_link()
    }
}

/// The codes an `Error` frame carries, HTTP's numbers where one fits. A
/// code this build does not know still reaches the user with its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Code {
    /// A request the protocol or the receiver's checks do not allow.
    BadRequest = 400,
    /// The token or a data connection's proof is wrong, or an attach was replayed.
    Auth = 401,
    /// A path that leaves the root, goes through a link, or is braid's own.
    ForbiddenPath = 403,
    NotFound = 404,
    /// The peer said nothing for too long.
    Timeout = 408,
    /// Another session is writing the same file.
    Busy = 409,
    /// Over one of the server's limits (files, blocks, manifest size).
    TooLarge = 413,
    /// The peer speaks another protocol version.
    Version = 426,
    /// A local I/O error at the peer.
    Io = 500,
    /// A whole-file hash did not match.
    Verify = 502,
    /// The server is full (connections) or stopping (Ctrl-C, SIGTERM).
    Unavailable = 503,
    /// No space left for the files.
    NoSpace = 507,
}

impl Code {
    pub fn from_u16(v: u16) -> Option<Code> {
        use Code::*;
        [
            BadRequest,
            Auth,
            ForbiddenPath,
            NotFound,
            Timeout,
            Busy,
            TooLarge,
            Version,
            Io,
            Verify,
            Unavailable,
            NoSpace,
        ]
        .into_iter()
        .find(|c| *c as u16 == v)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Hello {
        version: u16,
        nonce: [u8; 16],
    },
    /// The server's nonce, and the suites it can run as a
    /// [`crate::seal::Offer`] (its `PLAIN` bit: it allows unsealed sessions).
    Challenge {
        version: u16,
        nonce: [u8; 16],
        suites: u8,
    },
    /// The client's proof of the token, and its [`crate::seal::Offer`]; every
    /// frame the client sends after this one is sealed with the suite both
    /// ends choose from the offer and the challenge's suites.
    Proof {
        mac: [u8; 32],
        offer: u8,
    },
    /// The server's proof, and the [`crate::seal::Suite`] chosen; every
    /// frame after this one, on this connection and on every data
    /// connection of the session, is sealed.
    Welcome {
        mac: [u8; 32],
        suite: u8,
    },
    Open(SessionParams),
    Accepted {
        session: u64,
    },
    /// A data connection joins `session` as `stream`. `counter` is new for
    /// every attach of the session (the client counts up), and the server
    /// refuses one it has seen: captured bytes cannot be replayed.
    Attach {
        session: u64,
        stream: u16,
        counter: u64,
        mac: [u8; 32],
    },
    Detach {
        stream: u16,
    },
    /// Part of the files; `more` says another `Manifest` follows, so a list
    /// larger than one frame crosses in pieces.
    Manifest {
        files: Vec<FileEntry>,
        more: bool,
    },
    /// `len` bytes of `file` at `offset` follow (sealed like every byte of
    /// the connection: their records' tags protect them).
    Block {
        file: u32,
        offset: u64,
        len: u32,
    },
    /// Byte ranges [start, end) of `file` the receiver holds (restart markers).
    Ranges {
        file: u32,
        ranges: Vec<(u64, u64)>,
    },
    Progress {
        bytes: u64,
    },
    /// The receiving end's estimate of the path's bottleneck rate, from when
    /// its streams' bytes arrive (payload bytes a second): for the sender's
    /// steer, on a data connection, about once a second.
    Bottleneck {
        bytes_per_sec: u64,
    },
    Error {
        code: u16,
        message: String,
    },
    /// The end: the sender's count of payload bytes sent.
    Close {
        bytes: u64,
    },
    /// `file`'s whole-content BLAKE3: the sender's once every block is
    /// acknowledged, the receiver's answer once it has checked and published.
    Verify {
        file: u32,
        hash: [u8; 32],
    },
    /// On the control connection, from an end with nothing else to say for a
    /// while (hashing, waiting for the other's hash): it is still there. An
    /// end that hears nothing on any of a session's connections for long
    /// gives the session up.
    Keepalive,
    /// The client's `--exclude`/`--include` rules, in order, each `+ PATTERN`
    /// or `- PATTERN` (after `Open`, with [`FLAG_FILTER`]).
    Filter {
        rules: Vec<String>,
    },
    /// In place of `Ranges`: the receiver keeps its own `file` as it is (it is
    /// newer there, [`FLAG_UPDATE`]); it is neither sent nor verified.
    Keep {
        file: u32,
    },
    /// The BLAKE3 of files `first..first + hashes.len()` of the manifest
    /// (a directory's: zeros), after the manifest, with [`FLAG_CHECKSUM`].
    Sums {
        first: u32,
        hashes: Vec<[u8; 32]>,
    },
    /// The target of `file`, a symbolic link of the manifest ([`FLAG_LINKS`]):
    /// one per link, in order, after the manifest (and its `Sums`).
    Link {
        file: u32,
        target: String,
    },
    /// `file`, a further name of a file of the manifest ([`FLAG_HARD_LINKS`]),
    /// names the same file as the earlier entry `to`: one per such entry,
    /// in order, after the manifest (and its `Sums`, `Link`s and `Owners`).
    HardLink {
        file: u32,
        to: u32,
    },
    /// The owner and group ids of the manifest's entries from `first` on, in
    /// order ([`FLAG_OWNER`], [`FLAG_GROUP`]): numbers, not names, as tar's
    /// --numeric-owner and rsync's --numeric-ids keep them.
    Owners {
        first: u32,
        ids: Vec<(u32, u32)>,
    },
    /// What the receiver removed (or, with [`FLAG_DRY_RUN`], would remove)
    /// for [`FLAG_DELETE`], before its `Close`; `more`: another follows.
    Removed {
        paths: Vec<String>,
        more: bool,
    },
}

impl Message {
    pub(crate) fn type_byte(&self) -> u8 {
        match self {
            Message::Hello { .. } => 1,
            Message::Challenge { .. } => 2,
            Message::Proof { .. } => 3,
            Message::Welcome { .. } => 4,
            Message::Open(_) => 5,
            Message::Accepted { .. } => 6,
            Message::Attach { .. } => 7,
            Message::Detach { .. } => 8,
            Message::Manifest { .. } => 9,
            Message::Block { .. } => 10,
            Message::Ranges { .. } => 11,
            Message::Progress { .. } => 12,
            Message::Bottleneck { .. } => 25,
            Message::Error { .. } => 13,
            Message::Close { .. } => 14,
            Message::Verify { .. } => 15,
            Message::Keepalive => 17,
            Message::Filter { .. } => 18,
            Message::Keep { .. } => 19,
            Message::Sums { .. } => 20,
            Message::Removed { .. } => 21,
            Message::Link { .. } => 22,
            Message::Owners { .. } => 23,
            Message::HardLink { .. } => 24,
        }
    }
}
