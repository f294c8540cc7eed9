//! The header of a braid traffic datagram.
//!
//! ```text
//!  0      4  5  6    8         16          24         32     36
//!  | BRTF |v |k | 0  |   seq   |  start_ns |  sent_ns |  flow |  payload...
//! ```
//! All fields big-endian. `start_ns` and `sent_ns` are readings of the
//! sender's monotonic clock: their difference places a packet on the
//! sender's timeline, so a sink can bin by send time without synchronised
//! clocks. A `Fin` packet's `seq` is the number of data packets sent.

pub const MAGIC: [u8; 4] = *b"BRTF";
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 36;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Data = 0,
    /// The source has finished; sent several times so that one arrives.
    Fin = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub seq: u64,
    pub start_ns: u64,
    pub sent_ns: u64,
    pub flow: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("datagram of {0} bytes is shorter than the {HEADER_LEN}-byte header")]
    Short(usize),
    #[error("not a braid traffic datagram (magic {0:02x?})")]
    Magic([u8; 4]),
    #[error("traffic header version {0}, this build speaks {VERSION}")]
    Version(u8),
    #[error("unknown datagram kind {0}")]
    Kind(u8),
    #[error("sent_ns {sent} precedes start_ns {start}")]
    Clock { start: u64, sent: u64 },
}

impl Header {
    /// Writes the header into the front of `buf`, which must hold it.
    pub fn encode(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4] = VERSION;
        buf[5] = self.kind as u8;
        buf[6..8].fill(0);
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.start_ns.to_be_bytes());
        buf[24..32].copy_from_slice(&self.sent_ns.to_be_bytes());
        buf[32..36].copy_from_slice(&self.flow.to_be_bytes());
    }

    pub fn decode(buf: &[u8]) -> Result<Header, DecodeError> {
        if buf.len() < HEADER_LEN {
            return Err(DecodeError::Short(buf.len()));
        }
        let u64_at = |i: usize| u64::from_be_bytes(buf[i..i + 8].try_into().unwrap());
        let magic: [u8; 4] = buf[0..4].try_into().unwrap();
        if magic != MAGIC {
            return Err(DecodeError::Magic(magic));
        }
        if buf[4] != VERSION {
            return Err(DecodeError::Version(buf[4]));
        }
        let kind = match buf[5] {
            0 => Kind::Data,
            1 => Kind::Fin,
            k => return Err(DecodeError::Kind(k)),
        };
        let (start_ns, sent_ns) = (u64_at(16), u64_at(24));
        if sent_ns < start_ns {
            return Err(DecodeError::Clock {
                start: start_ns,
                sent: sent_ns,
            });
        }
        Ok(Header {
            kind,
            seq: u64_at(8),
            start_ns,
            sent_ns,
            flow: u32::from_be_bytes(buf[32..36].try_into().unwrap()),
        })
    }

    /// Nanoseconds since the source started.
    pub fn offset_ns(&self) -> u64 {
        self.sent_ns - self.start_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_on_the_wire() {
        let h = Header {
            kind: Kind::Data,
            seq: 0x0102,
            start_ns: 10,
            sent_ns: 0x0a0b,
            flow: 7,
        };
        let mut buf = [0xffu8; 40];
        h.encode(&mut buf);
        let expect: [u8; 36] = [
            b'B', b'R', b'T', b'F', 1, 0, 0, 0, //
            0, 0, 0, 0, 0, 0, 1, 2, //
            0, 0, 0, 0, 0, 0, 0, 10, //
            0, 0, 0, 0, 0, 0, 0x0a, 0x0b, //
            0, 0, 0, 7,
        ];
        assert_eq!(&buf[..36], &expect);
        assert_eq!(buf[36], 0xff, "the payload after the header is untouched");
        assert_eq!(Header::decode(&buf).unwrap(), h);
        assert_eq!(h.offset_ns(), 0x0a0b - 10);
    }

    #[test]
    fn round_trip_both_kinds() {
        for kind in [Kind::Data, Kind::Fin] {
            let h = Header {
                kind,
                seq: u64::MAX,
                start_ns: 1,
                sent_ns: u64::MAX,
                flow: u32::MAX,
            };
            let mut buf = [0u8; HEADER_LEN];
            h.encode(&mut buf);
            assert_eq!(Header::decode(&buf), Ok(h));
        }
    }

    #[test]
    fn malformed_datagrams_are_named() {
        let mut buf = [0u8; HEADER_LEN];
        Header {
            kind: Kind::Data,
            seq: 1,
            start_ns: 5,
            sent_ns: 6,
            flow: 0,
        }
        .encode(&mut buf);
        assert_eq!(Header::decode(&buf[..35]), Err(DecodeError::Short(35)));
        let mut b = buf;
        b[0] = b'X';
        assert!(matches!(Header::decode(&b), Err(DecodeError::Magic(_))));
        let mut b = buf;
        b[4] = 9;
        assert_eq!(Header::decode(&b), Err(DecodeError::Version(9)));
        let mut b = buf;
        b[5] = 4;
        assert_eq!(Header::decode(&b), Err(DecodeError::Kind(4)));
        let mut b = buf;
        b[16..24].copy_from_slice(&100u64.to_be_bytes());
        assert_eq!(
            Header::decode(&b),
            Err(DecodeError::Clock {
                start: 100,
                sent: 6
            })
        );
    }
}
