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
    /// [`FLAG_RESUME`], [`FLAG_REVERSE`]; unknown bits are refused.
    pub flags: u32,
}

/// Send/get: the receiver keeps what it already holds and says so in `Ranges`.
pub const FLAG_RESUME: u32 = 1;
/// Bench: the server sends and the client receives.
pub const FLAG_REVERSE: u32 = 2;
pub(crate) const KNOWN_FLAGS: u32 = FLAG_RESUME | FLAG_REVERSE;

/// One file of a manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Relative, '/'-separated; the receiver checks it stays below its root.
    pub path: String,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Hello {
        version: u16,
        nonce: [u8; 16],
    },
    Challenge {
        version: u16,
        nonce: [u8; 16],
    },
    Proof {
        mac: [u8; 32],
    },
    Welcome {
        mac: [u8; 32],
    },
    Open(SessionParams),
    Accepted {
        session: u64,
    },
    Attach {
        session: u64,
        stream: u16,
        mac: [u8; 32],
    },
    Detach {
        stream: u16,
    },
    Manifest {
        files: Vec<FileEntry>,
    },
    /// `len` bytes of `file` at `offset` follow; `checksum` is their CRC-32C.
    Block {
        file: u32,
        offset: u64,
        len: u32,
        checksum: u32,
    },
    /// Byte ranges [start, end) of `file` the receiver holds (restart markers).
    Ranges {
        file: u32,
        ranges: Vec<(u64, u64)>,
    },
    Progress {
        bytes: u64,
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
            Message::Error { .. } => 13,
            Message::Close { .. } => 14,
            Message::Verify { .. } => 15,
        }
    }
}
