//! Frames to bytes and back.

use crate::message::{FileEntry, Kind, Message, Mode, SessionParams, KNOWN_FLAGS};
use crate::seal::{Offer, Suite};

/// The largest frame (type byte and payload): a manifest of many files fits,
/// a corrupt length cannot make a reader allocate gigabytes.
pub const MAX_FRAME: u32 = 16 << 20;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("frame length {0} is outside 1..={MAX_FRAME}")]
    Length(u32),
    #[error("unknown message type {0}")]
    Type(u8),
    #[error("{what}: the frame ends early")]
    Short { what: &'static str },
    #[error("{what}: {len} bytes left over at the end of the frame")]
    Trailing { what: &'static str, len: usize },
    #[error("{what}: invalid value {value}")]
    Value { what: &'static str, value: u64 },
    #[error("{what}: not UTF-8")]
    Utf8 { what: &'static str },
}

/// Appends `m`'s frame to `out`.
pub fn encode(m: &Message, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, m.type_byte()]);
    let mut w = Writer(out);
    match m {
        Message::Hello { version, nonce } => {
            w.u16(*version);
            w.bytes(nonce);
        }
        Message::Challenge {
            version,
            nonce,
            suites,
        } => {
            w.u16(*version);
            w.bytes(nonce);
            w.u8(*suites);
        }
        Message::Proof { mac, offer } => {
            w.bytes(mac);
            w.u8(*offer);
        }
        Message::Welcome { mac, suite } => {
            w.bytes(mac);
            w.u8(*suite);
        }
        Message::Open(p) => {
            w.u8(p.kind as u8);
            w.u8(p.mode as u8);
            w.u16(p.streams);
            w.str(&p.cc);
            w.u16(p.frac_cwnd);
            w.u32(p.strength_milli);
            w.u32(p.duration_ms);
            w.u32(p.block_size);
            w.u32(p.flags);
            w.u64(p.limit_bps);
        }
        Message::Accepted { session } => w.u64(*session),
        Message::Attach {
            session,
            stream,
            counter,
            mac,
        } => {
            w.u64(*session);
            w.u16(*stream);
            w.u64(*counter);
            w.bytes(mac);
        }
        Message::Detach { stream } => w.u16(*stream),
        Message::Manifest { files, more } => {
            w.u32(files.len() as u32);
            for f in files {
                w.str(&f.path);
                w.u64(f.size);
                w.u32(f.mode);
                w.u64(f.mtime_ns as u64);
            }
            w.u8(*more as u8);
        }
        Message::Block { file, offset, len } => {
            w.u32(*file);
            w.u64(*offset);
            w.u32(*len);
        }
        Message::Ranges { file, ranges } => {
            w.u32(*file);
            w.u32(ranges.len() as u32);
            for (a, b) in ranges {
                w.u64(*a);
                w.u64(*b);
            }
        }
        Message::Progress { bytes } | Message::Close { bytes } => w.u64(*bytes),
        Message::Bottleneck { bytes_per_sec } => w.u64(*bytes_per_sec),
        Message::Error { code, message } => {
            w.u16(*code);
            w.str(message);
        }
        Message::Verify { file, hash } => {
            w.u32(*file);
            w.bytes(hash);
        }
        Message::Keepalive => {}
        Message::Filter { rules: paths } | Message::Removed { paths, .. } => {
            w.u32(paths.len() as u32);
            for p in paths {
                w.str(p);
            }
            if let Message::Removed { more, .. } = m {
                w.u8(*more as u8);
            }
        }
        Message::Keep { file } => w.u32(*file),
        Message::HardLink { file, to } => {
            w.u32(*file);
            w.u32(*to);
        }
        Message::Link { file, target } => {
            w.u32(*file);
            w.str(target);
        }
        Message::Sums { first, hashes } => {
            w.u32(*first);
            w.u32(hashes.len() as u32);
            for h in hashes {
                w.bytes(h);
            }
        }
        Message::Owners { first, ids } => {
            w.u32(*first);
            w.u32(ids.len() as u32);
            for (uid, gid) in ids {
                w.u32(*uid);
                w.u32(*gid);
            }
        }
    }
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// An [`Offer`]'s bits, none unknown.
fn suites(v: u8, what: &'static str) -> Result<u8, DecodeError> {
    if v & !Offer::KNOWN != 0 {
        return Err(DecodeError::Value {
            what,
            value: v as u64,
        });
    }
    Ok(v)
}

/// Decodes the first frame of `buf`: `Ok(None)` if more bytes are needed,
/// else the message and how many bytes it took.
pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, DecodeError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes(buf[..4].try_into().unwrap());
    if len == 0 || len > MAX_FRAME {
        return Err(DecodeError::Length(len));
    }
    let total = 4 + len as usize;
    if buf.len() < total {
        return Ok(None);
    }
    let ty = buf[4];
    let mut r = Reader {
        b: &buf[5..total],
        what: "frame",
    };
    let m = match ty {
        1 => {
            r.what = "hello";
            let version = r.u16()?;
            let nonce = r.array::<16>()?;
            Message::Hello { version, nonce }
        }
        2 => {
            r.what = "challenge";
            let version = r.u16()?;
            let nonce = r.array::<16>()?;
            let suites = suites(r.u8()?, "challenge: suites")?;
            Message::Challenge {
                version,
                nonce,
                suites,
            }
        }
        3 => {
            r.what = "proof";
            let mac = r.array()?;
            let offer = suites(r.u8()?, "proof: offer")?;
            Message::Proof { mac, offer }
        }
        4 => {
            r.what = "welcome";
            let mac = r.array()?;
            let suite = r.u8()?;
            if Suite::from_u8(suite).is_none() {
                return Err(DecodeError::Value {
                    what: "welcome: suite",
                    value: suite as u64,
                });
            }
            Message::Welcome { mac, suite }
        }
        5 => {
            r.what = "open";
            let kind = match r.u8()? {
                0 => Kind::Bench,
                1 => Kind::Send,
                2 => Kind::Get,
                v => {
                    return Err(DecodeError::Value {
                        what: "open: kind",
                        value: v as u64,
                    })
                }
            };
            let mode = match r.u8()? {
                0 => Mode::Single,
                1 => Mode::Parallel,
                2 => Mode::Combined,
                3 => Mode::Tcpp,
                4 => Mode::Auto,
                5 => Mode::Falcon,
                v => {
                    return Err(DecodeError::Value {
                        what: "open: mode",
                        value: v as u64,
                    })
                }
            };
            let p = SessionParams {
                kind,
                mode,
                streams: r.u16()?,
                cc: r.str()?,
                frac_cwnd: r.u16()?,
                strength_milli: r.u32()?,
                duration_ms: r.u32()?,
                block_size: r.u32()?,
                flags: r.u32()?,
                limit_bps: r.u64()?,
            };
            if p.flags & !KNOWN_FLAGS != 0 {
                return Err(DecodeError::Value {
                    what: "open: flags",
                    value: p.flags as u64,
                });
            }
            Message::Open(p)
        }
        6 => Message::Accepted {
            session: r.named("accepted").u64()?,
        },
        7 => {
            r.what = "attach";
            Message::Attach {
                session: r.u64()?,
                stream: r.u16()?,
                counter: r.u64()?,
                mac: r.array()?,
            }
        }
        8 => Message::Detach {
            stream: r.named("detach").u16()?,
        },
        9 => {
            r.what = "manifest";
            // Each entry takes at least 22 bytes.
            let n = r.count(22, "manifest: file count")?;
            let mut files = Vec::with_capacity(n);
            for _ in 0..n {
                files.push(FileEntry {
                    path: r.str()?,
                    size: r.u64()?,
                    mode: r.u32()?,
                    mtime_ns: r.u64()? as i64,
                });
            }
            let more = r.bool("manifest: more")?;
            Message::Manifest { files, more }
        }
        10 => {
            r.what = "block";
            Message::Block {
                file: r.u32()?,
                offset: r.u64()?,
                len: r.u32()?,
            }
        }
        11 => {
            r.what = "ranges";
            let file = r.u32()?;
            let n = r.count(16, "ranges: count")?;
            let mut ranges = Vec::with_capacity(n);
            for _ in 0..n {
                let (a, b) = (r.u64()?, r.u64()?);
                if a > b {
                    return Err(DecodeError::Value {
                        what: "ranges: a range ending before its start",
                        value: a,
                    });
                }
                ranges.push((a, b));
            }
            Message::Ranges { file, ranges }
        }
        12 => Message::Progress {
            bytes: r.named("progress").u64()?,
        },
        25 => Message::Bottleneck {
            bytes_per_sec: r.named("bottleneck").u64()?,
        },
        13 => {
            r.what = "error";
            Message::Error {
                code: r.u16()?,
                message: r.str()?,
            }
        }
        14 => Message::Close {
            bytes: r.named("close").u64()?,
        },
        15 => {
            r.what = "verify";
            Message::Verify {
                file: r.u32()?,
                hash: r.array()?,
            }
        }
        17 => {
            r.what = "keepalive";
            Message::Keepalive
        }
        18 => {
            r.what = "filter";
            Message::Filter {
                rules: r.strings()?,
            }
        }
        19 => Message::Keep {
            file: r.named("keep").u32()?,
        },
        20 => {
            r.what = "sums";
            let first = r.u32()?;
            let n = r.count(32, "sums: count")?;
            let mut hashes = Vec::with_capacity(n);
            for _ in 0..n {
                hashes.push(r.array()?);
            }
            Message::Sums { first, hashes }
        }
        22 => {
            r.what = "link";
            Message::Link {
                file: r.u32()?,
                target: r.str()?,
            }
        }
        24 => {
            r.what = "hard link";
            Message::HardLink {
                file: r.u32()?,
                to: r.u32()?,
            }
        }
        23 => {
            r.what = "owners";
            let first = r.u32()?;
            let n = r.count(8, "owners: count")?;
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push((r.u32()?, r.u32()?));
            }
            Message::Owners { first, ids }
        }
        21 => {
            r.what = "removed";
            let paths = r.strings()?;
            let more = r.bool("removed: more")?;
            Message::Removed { paths, more }
        }
        t => return Err(DecodeError::Type(t)),
    };
    if !r.b.is_empty() {
        return Err(DecodeError::Trailing {
            what: r.what,
            len: r.b.len(),
        });
    }
    Ok(Some((m, total)))
}

struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    /// Strings longer than 65535 bytes are cut at a character boundary.
    fn str(&mut self, s: &str) {
        let s = cut(s, u16::MAX as usize);
        self.u16(s.len() as u16);
        self.bytes(s.as_bytes());
    }
}

/// The first `n` bytes of `s` or fewer, cut at a character boundary.
pub fn cut(s: &str, n: usize) -> &str {
    let mut end = s.len().min(n);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

struct Reader<'a> {
    b: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn named(&mut self, what: &'static str) -> &mut Self {
        self.what = what;
        self
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.b.len() < n {
            return Err(DecodeError::Short { what: self.what });
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        Ok(self.take(N)?.try_into().unwrap())
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    fn str(&mut self) -> Result<String, DecodeError> {
        let n = self.u16()? as usize;
        let what = self.what;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| DecodeError::Utf8 { what })
    }
    /// A byte that is 0 or 1.
    fn bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(DecodeError::Value {
                what,
                value: v as u64,
            }),
        }
    }
    /// A count of items that take at least `each` bytes: one larger than
    /// the rest of the frame holds is a lie, refused before any allocation.
    fn count(&mut self, each: usize, what: &'static str) -> Result<usize, DecodeError> {
        let n = self.u32()?;
        if n as usize > self.b.len() / each {
            return Err(DecodeError::Value {
                what,
                value: n as u64,
            });
        }
        Ok(n as usize)
    }
    /// A count, then that many strings (each at least its 2-byte length).
    fn strings(&mut self) -> Result<Vec<String>, DecodeError> {
        let n = self.count(2, self.what)?;
        (0..n).map(|_| self.str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::FLAG_RESUME;
    use proptest::prelude::*;

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("abc", 10), "abc");
        assert_eq!(cut("", 1), "");
    }

    fn bytes(m: &Message) -> Vec<u8> {
        let mut v = Vec::new();
        encode(m, &mut v);
        v
    }

    #[test]
    fn vectors() {
        assert_eq!(
            bytes(&Message::Progress { bytes: 0x0102 }),
            [0, 0, 0, 9, 12, 0, 0, 0, 0, 0, 0, 1, 2]
        );
        assert_eq!(
            bytes(&Message::Bottleneck {
                bytes_per_sec: 125_000_000
            }),
            [0, 0, 0, 9, 25, 0, 0, 0, 0, 7, 0x73, 0x59, 0x40]
        );
        assert_eq!(bytes(&Message::Detach { stream: 7 }), [0, 0, 0, 3, 8, 0, 7]);
        assert_eq!(
            bytes(&Message::Error {
                code: 2,
                message: "no".into()
            }),
            [0, 0, 0, 7, 13, 0, 2, 0, 2, b'n', b'o']
        );
        assert_eq!(
            bytes(&Message::Block {
                file: 1,
                offset: 2,
                len: 3,
            }),
            [0, 0, 0, 17, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3]
        );
        assert_eq!(bytes(&Message::Keepalive), [0, 0, 0, 1, 17]);
        let mut proof = vec![0, 0, 0, 34, 3];
        proof.extend_from_slice(&[5; 32]);
        proof.push(3);
        assert_eq!(
            bytes(&Message::Proof {
                mac: [5; 32],
                offer: 3
            }),
            proof
        );
        let open = Message::Open(SessionParams {
            kind: Kind::Bench,
            mode: Mode::Combined,
            streams: 9,
            cc: "reno".into(),
            frac_cwnd: 100,
            strength_milli: 1000,
            duration_ms: 10_000,
            block_size: 1 << 20,
            flags: FLAG_RESUME,
            limit_bps: 150_000_000,
        });
        assert_eq!(
            bytes(&open),
            [
                0, 0, 0, 37, 5, 0, 2, 0, 9, 0, 4, b'r', b'e', b'n', b'o', 0, 100, 0, 0, 3, 232, 0,
                0, 39, 16, 0, 16, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x08, 0xf0, 0xd1, 0x80
            ]
        );
        assert_eq!(
            bytes(&Message::Attach {
                session: 1,
                stream: 2,
                counter: 3,
                mac: [9; 32]
            })[..23],
            [0, 0, 0, 51, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3]
        );
        assert_eq!(
            bytes(&Message::Manifest {
                files: vec![],
                more: true
            }),
            [0, 0, 0, 6, 9, 0, 0, 0, 0, 1]
        );
        let mut hash = [0u8; 32];
        hash[31] = 0xab;
        let mut v = vec![0, 0, 0, 37, 15, 0, 0, 0, 3];
        v.extend_from_slice(&hash);
        assert_eq!(bytes(&Message::Verify { file: 3, hash }), v);
    }

    #[test]
    fn partial_frames_ask_for_more() {
        let b = bytes(&Message::Close { bytes: 5 });
        for cut in 0..b.len() {
            assert_eq!(decode(&b[..cut]), Ok(None), "cut at {cut}");
        }
        assert_eq!(decode(&b), Ok(Some((Message::Close { bytes: 5 }, b.len()))));
    }

    #[test]
    fn malformed_frames_are_named() {
        assert_eq!(decode(&[0, 0, 0, 0, 1]), Err(DecodeError::Length(0)));
        assert_eq!(
            decode(&[0xff, 0, 0, 0]),
            Err(DecodeError::Length(0xff00_0000))
        );
        assert_eq!(decode(&[0, 0, 0, 1, 99]), Err(DecodeError::Type(99)));
        assert_eq!(
            decode(&[0, 0, 0, 2, 8, 0]),
            Err(DecodeError::Short { what: "detach" })
        );
        assert_eq!(
            decode(&[0, 0, 0, 4, 8, 0, 1, 9]),
            Err(DecodeError::Trailing {
                what: "detach",
                len: 1
            })
        );
        assert_eq!(
            decode(&[0, 0, 0, 5, 13, 0, 1, 0, 1]),
            Err(DecodeError::Short { what: "error" })
        );
        assert_eq!(
            decode(&[0, 0, 0, 6, 13, 0, 1, 0, 1, 0xff]),
            Err(DecodeError::Utf8 { what: "error" })
        );
        let mut welcome = vec![0, 0, 0, 34, 4];
        welcome.extend_from_slice(&[0; 32]);
        welcome.push(9);
        assert_eq!(
            decode(&welcome),
            Err(DecodeError::Value {
                what: "welcome: suite",
                value: 9
            })
        );
        let mut proof = vec![0, 0, 0, 34, 3];
        proof.extend_from_slice(&[0; 32]);
        proof.push(0x80);
        assert_eq!(
            decode(&proof),
            Err(DecodeError::Value {
                what: "proof: offer",
                value: 0x80
            })
        );
        assert_eq!(
            decode(&[0, 0, 0, 6, 9, 0, 0, 0, 0, 2]),
            Err(DecodeError::Value {
                what: "manifest: more",
                value: 2
            })
        );
        // A manifest claiming a billion files in a few bytes.
        assert!(matches!(
            decode(&[0, 0, 0, 5, 9, 0x40, 0, 0, 0]),
            Err(DecodeError::Value { .. })
        ));
        let mut bad_range = bytes(&Message::Ranges {
            file: 0,
            ranges: vec![(5, 9)],
        });
        bad_range[13] = 10; // start 10 > end 9
        assert!(matches!(decode(&bad_range), Err(DecodeError::Value { .. })));
        let mut open = bytes(&Message::Open(SessionParams {
            kind: Kind::Send,
            mode: Mode::Single,
            streams: 1,
            cc: String::new(),
            frac_cwnd: 0,
            strength_milli: 0,
            duration_ms: 0,
            block_size: 1,
            flags: 0,
            limit_bps: 0,
        }));
        // The flags' two lowest bytes: bit 15 and, below, the lowest bit this
        // build does not know, each refused.
        let flags_at = open.len() - 10;
        open[flags_at] = 0x80;
        assert_eq!(
            decode(&open),
            Err(DecodeError::Value {
                what: "open: flags",
                value: 0x8000
            })
        );
        open[flags_at] = 0x10;
        assert_eq!(
            decode(&open),
            Err(DecodeError::Value {
                what: "open: flags",
                value: 0x1000
            })
        );
    }

    fn arb_message() -> impl Strategy<Value = Message> {
        let nonce = any::<[u8; 16]>();
        let mac = any::<[u8; 32]>();
        let params = (
            (0u8..3, 0u8..6, any::<u16>(), "[a-z_]{0,16}"),
            (
                any::<u16>(),
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
                0u32..4,
                any::<u64>(),
            ),
        )
            .prop_map(
                |(
                    (k, m, streams, cc),
                    (frac_cwnd, strength_milli, duration_ms, block_size, flags, limit_bps),
                )| SessionParams {
                    kind: [Kind::Bench, Kind::Send, Kind::Get][k as usize],
                    mode: [
                        Mode::Single,
                        Mode::Parallel,
                        Mode::Combined,
                        Mode::Tcpp,
                        Mode::Auto,
                        Mode::Falcon,
                    ][m as usize],
                    streams,
                    cc,
                    frac_cwnd,
                    strength_milli,
                    duration_ms,
                    block_size,
                    flags,
                    limit_bps,
                },
            );
        let entry = ("\\PC{0,40}", any::<u64>(), any::<u32>(), any::<i64>()).prop_map(
            |(path, size, mode, mtime_ns)| FileEntry {
                path,
                size,
                mode,
                mtime_ns,
            },
        );
        prop_oneof![
            (any::<u16>(), nonce).prop_map(|(version, nonce)| Message::Hello { version, nonce }),
            (any::<u16>(), nonce, 0u8..8).prop_map(|(version, nonce, suites)| {
                Message::Challenge {
                    version,
                    nonce,
                    suites,
                }
            }),
            (mac, 0u8..8).prop_map(|(mac, offer)| Message::Proof { mac, offer }),
            (mac, 0u8..3).prop_map(|(mac, suite)| Message::Welcome { mac, suite }),
            params.prop_map(Message::Open),
            any::<u64>().prop_map(|session| Message::Accepted { session }),
            (any::<u64>(), any::<u16>(), any::<u64>(), mac).prop_map(
                |(session, stream, counter, mac)| Message::Attach {
                    session,
                    stream,
                    counter,
                    mac
                }
            ),
            any::<u16>().prop_map(|stream| Message::Detach { stream }),
            (proptest::collection::vec(entry, 0..8), any::<bool>())
                .prop_map(|(files, more)| Message::Manifest { files, more }),
            (any::<u32>(), any::<u64>(), any::<u32>())
                .prop_map(|(file, offset, len)| Message::Block { file, offset, len }),
            (
                any::<u32>(),
                proptest::collection::vec((0u64..1 << 40, 0u64..1 << 40), 0..8)
            )
                .prop_map(|(file, r)| {
                    Message::Ranges {
                        file,
                        ranges: r.into_iter().map(|(a, b)| (a.min(b), a.max(b))).collect(),
                    }
                }),
            any::<u64>().prop_map(|bytes| Message::Progress { bytes }),
            any::<u64>().prop_map(|bytes_per_sec| Message::Bottleneck { bytes_per_sec }),
            (any::<u16>(), "\\PC{0,80}")
                .prop_map(|(code, message)| Message::Error { code, message }),
            any::<u64>().prop_map(|bytes| Message::Close { bytes }),
            (any::<u32>(), any::<[u8; 32]>())
                .prop_map(|(file, hash)| Message::Verify { file, hash }),
            Just(Message::Keepalive),
            proptest::collection::vec("\\PC{0,20}", 0..6)
                .prop_map(|rules| Message::Filter { rules }),
            any::<u32>().prop_map(|file| Message::Keep { file }),
            (any::<u32>(), "\\PC{0,20}").prop_map(|(file, target)| Message::Link { file, target }),
            (
                any::<u32>(),
                proptest::collection::vec(any::<[u8; 32]>(), 0..4)
            )
                .prop_map(|(first, hashes)| Message::Sums { first, hashes }),
            (
                any::<u32>(),
                proptest::collection::vec(any::<(u32, u32)>(), 0..8)
            )
                .prop_map(|(first, ids)| Message::Owners { first, ids }),
            (any::<u32>(), any::<u32>()).prop_map(|(file, to)| Message::HardLink { file, to }),
            (proptest::collection::vec("\\PC{0,20}", 0..6), any::<bool>())
                .prop_map(|(paths, more)| Message::Removed { paths, more }),
        ]
    }

    proptest! {
        #[test]
        fn every_message_round_trips(m in arb_message(), tail in proptest::collection::vec(any::<u8>(), 0..8)) {
            let mut b = bytes(&m);
            let len = b.len();
            b.extend(tail);
            prop_assert_eq!(decode(&b), Ok(Some((m, len))));
        }

        #[test]
        fn decoding_garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&b);
        }
    }
}
