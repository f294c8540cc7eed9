//! Sealed records: what every connection carries once its handshake is over.
//!
//! After the handshake a connection is a stream of records, each sealed with
//! an AEAD under a key of its own connection and direction:
//!
//! ```text
//!  0        4      5                       5 + n
//!  | length | kind | data (n bytes)  ...   | tag (16 bytes) |
//!           '------ sealed: ciphertext ----'
//! ```
//! `length` (big-endian u32, in the clear and authenticated as the AAD)
//! counts what follows it. The plaintext a connection carries, frames and
//! block data alike, is the concatenation of the records' data; a record's
//! boundaries mean nothing to the frames inside. `kind` is [`DATA`] or
//! [`END`]: an END record, with no data, is the authenticated end of the
//! stream, so a connection cut short is not mistaken for one that ended.
//!
//! The nonce is the record's number on its connection and direction (96 bits:
//! four zero bytes and the u64), so a record dropped, repeated, moved or taken
//! from another connection or session fails to open. One key seals at most
//! [`EPOCH_RECORDS`] records of at most [`MAX_DATA`] bytes (2^38 bytes, below
//! the 2^38.5 that RFC 8446 section 5.5 allows one AES-GCM key); the next
//! records use the next key, derived from the same material and the epoch's
//! number, so both ends change keys at the same record without a message.
//!
//! Keys come from the session key (see [`crate::auth`]), the suite, which
//! connection (the control connection, or a data connection's stream and
//! attach counter: new for every attach) and the direction. [`Suite::Plain`]
//! keeps the record format without encryption or tag, for a trusted link
//! where both ends consented (see [`Offer`]).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};

/// The most data one record carries: large enough that a record's header,
/// tag and syscall are a small part of its cost, small enough that a
/// connection's buffers stay a fraction of a MiB whatever a peer sends.
pub const MAX_DATA: usize = 256 << 10;
/// Records sealed under one key before the next epoch's key takes over.
pub const EPOCH_RECORDS: u64 = 1 << 20;
/// Bytes before a record's data: its length and its kind.
pub const DATA_AT: usize = 5;
/// The AEAD tag after a sealed record's data.
pub const TAG: usize = 16;
/// The largest record on the wire, header included.
pub const MAX_RECORD: usize = DATA_AT + MAX_DATA + TAG;

/// A record of data.
pub const DATA: u8 = 0;
/// The sender's authenticated end of its direction of the connection.
pub const END: u8 = 1;

const CONTEXT_RECORD: &str = "braid 2026 record key v1";

/// How a session's records are sealed, as the handshake chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Suite {
    /// Not sealed: both ends asked for it on a link they trust.
    Plain = 0,
    Aes256Gcm = 1,
    ChaCha20Poly1305 = 2,
}

impl Suite {
    pub fn from_u8(v: u8) -> Option<Suite> {
        [Suite::Plain, Suite::Aes256Gcm, Suite::ChaCha20Poly1305]
            .into_iter()
            .find(|s| *s as u8 == v)
    }

    /// The name reports and records give it.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Plain => "plain",
            Suite::Aes256Gcm => "aes-256-gcm",
            Suite::ChaCha20Poly1305 => "chacha20-poly1305",
        }
    }

    fn tag(self) -> usize {
        if self == Suite::Plain {
            0
        } else {
            TAG
        }
    }
}

/// What an end can seal with, as bits: the client's offer (in its `Proof`:
/// the suites it can run, and whether it asks for an unsealed session) and
/// the server's announcement (in its `Challenge`: the suites it can run, and
/// whether it consents to an unsealed session). Both ends choose the suite
/// from the two with the same rule ([`Offer::choose`]), so the client seals
/// right behind its proof without waiting for the server's word; each end's
/// proof covers both, so a relay that changes either makes the proofs fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer(pub u8);

impl Offer {
    /// AES-256-GCM runs on this end's AES instructions.
    pub const AES_FAST: u8 = 1;
    /// ChaCha20-Poly1305: every build can.
    pub const CHACHA: u8 = 2;
    /// The client: the user asked for an unsealed session (a trusted link);
    /// the server: it allows one (`braid serve --allow-plain`).
    pub const PLAIN: u8 = 4;
    pub const KNOWN: u8 = Self::AES_FAST | Self::CHACHA | Self::PLAIN;

    /// This end's suites: AES-GCM where the CPU has AES instructions, and the
    /// plain session only where the user asked for it (a client) or allows
    /// it (a server).
    pub fn here(plain: bool) -> Offer {
        let aes = if aes_is_fast() { Self::AES_FAST } else { 0 };
        Offer(aes | Self::CHACHA | if plain { Self::PLAIN } else { 0 })
    }

    pub fn asks_plain(self) -> bool {
        self.0 & Self::PLAIN != 0
    }

    /// The suite for a client's offer (`self`) and a server's announcement.
    /// Plain needs both ends' consent: a client that asks for it from a
    /// server that does not allow it is refused (`None`), so a benchmark
    /// never measures another thing than it meant to. Otherwise AES-256-GCM
    /// where both ends have AES instructions (it is several times faster
    /// there), else ChaCha20-Poly1305 (fast in software everywhere).
    pub fn choose(self, server: Offer) -> Option<Suite> {
        let both = self.0 & server.0;
        if self.asks_plain() {
            return server.asks_plain().then_some(Suite::Plain);
        }
        if both & Self::AES_FAST != 0 {
            Some(Suite::Aes256Gcm)
        } else if both & Self::CHACHA != 0 {
            Some(Suite::ChaCha20Poly1305)
        } else {
            None
        }
    }
}

/// Whether this CPU has AES instructions (and carry-less multiplication for
/// GCM's hash), so AES-GCM is fast and constant-time here.
pub fn aes_is_fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// Which connection of a session a key is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Control,
    /// A data connection: its stream and the attach's counter, which the
    /// server accepts once, so no two data connections share keys.
    Data {
        stream: u16,
        counter: u64,
    },
}

/// Which way a key seals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Direction {
    ClientToServer = 0,
    ServerToClient = 1,
}

/// Why a record did not open.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("a record of {0} bytes, outside 1..={max}", max = MAX_RECORD - 4)]
    Length(u32),
    #[error(
        "record {0} does not open: it was changed, dropped, repeated, moved, or forged by \
         someone without the session's keys"
    )]
    Forged(u64),
    #[error("a record of unknown kind {0}")]
    Kind(u8),
    #[error("an END record carries {0} bytes of data")]
    EndWithData(usize),
    #[error("a record after the end of the stream")]
    AfterEnd,
    #[error("the record counter is exhausted")]
    Exhausted,
}

/// The key material of one connection and direction: each epoch's key is
/// derived from it with the epoch's number.
#[derive(Clone)]
struct Material([u8; 32 + 1 + 1 + 2 + 8 + 1]);

impl Material {
    fn new(session_key: &[u8; 32], suite: Suite, channel: Channel, dir: Direction) -> Self {
        let mut m = [0u8; 45];
        m[..32].copy_from_slice(session_key);
        m[32] = suite as u8;
        let (kind, stream, counter) = match channel {
            Channel::Control => (0u8, 0u16, 0u64),
            Channel::Data { stream, counter } => (1, stream, counter),
        };
        m[33] = kind;
        m[34..36].copy_from_slice(&stream.to_be_bytes());
        m[36..44].copy_from_slice(&counter.to_be_bytes());
        m[44] = dir as u8;
        Material(m)
    }

    fn key(&self, suite: Suite, epoch: u64) -> Option<LessSafeKey> {
        let alg = match suite {
            Suite::Plain => return None,
            Suite::Aes256Gcm => &AES_256_GCM,
            Suite::ChaCha20Poly1305 => &CHACHA20_POLY1305,
        };
        let mut input = self.0.to_vec();
        input.extend_from_slice(&epoch.to_be_bytes());
        let bytes = blake3::derive_key(CONTEXT_RECORD, &input);
        let key = UnboundKey::new(alg, &bytes).expect("a 32-byte key fits both suites");
        Some(LessSafeKey::new(key))
    }
}

/// One direction's key schedule and record counter.
struct Keyed {
    suite: Suite,
    material: Material,
    key: Option<LessSafeKey>,
    /// The number of the next record.
    seq: u64,
}

impl Keyed {
    fn new(session_key: &[u8; 32], suite: Suite, channel: Channel, dir: Direction) -> Self {
        let material = Material::new(session_key, suite, channel, dir);
        Keyed {
            key: material.key(suite, 0),
            suite,
            material,
            seq: 0,
        }
    }

    /// The nonce of the next record, turning to the next epoch's key first
    /// where one ends.
    fn next(&mut self) -> Result<(u64, Nonce), SealError> {
        let seq = self.seq;
        if seq == u64::MAX {
            return Err(SealError::Exhausted);
        }
        if seq > 0 && seq % EPOCH_RECORDS == 0 {
            self.key = self.material.key(self.suite, seq / EPOCH_RECORDS);
        }
        self.seq += 1;
        let mut n = [0u8; 12];
        n[4..].copy_from_slice(&seq.to_be_bytes());
        Ok((seq, Nonce::assume_unique_for_key(n)))
    }
}

/// Seals the records one end sends on one connection.
pub struct Sealer(Keyed);

impl Sealer {
    pub fn new(session_key: &[u8; 32], suite: Suite, channel: Channel, dir: Direction) -> Self {
        Sealer(Keyed::new(session_key, suite, channel, dir))
    }

    pub fn suite(&self) -> Suite {
        self.0.suite
    }

    /// Bytes a record with `n` bytes of data takes on the wire.
    pub fn record_len(&self, n: usize) -> usize {
        DATA_AT + n + self.0.suite.tag()
    }

    /// Seals the record in `buf` whose `n` bytes of data the caller wrote at
    /// `buf[DATA_AT..DATA_AT + n]`: writes its length, its kind and its tag.
    /// Returns the record's length on the wire, `buf[..len]`. `buf` must hold
    /// [`Sealer::record_len`] bytes and `n` be at most [`MAX_DATA`].
    pub fn seal(&mut self, buf: &mut [u8], kind: u8, n: usize) -> Result<usize, SealError> {
        assert!(n <= MAX_DATA, "a record of {n} bytes of data");
        let len = self.record_len(n);
        let header = ((len - 4) as u32).to_be_bytes();
        buf[..4].copy_from_slice(&header);
        buf[4] = kind;
        let (_, nonce) = self.0.next()?;
        if let Some(key) = &self.0.key {
            let (body, tag) = buf[4..len].split_at_mut(1 + n);
            let t = key
                .seal_in_place_separate_tag(nonce, Aad::from(header), body)
                .expect("sealing in place does not fail for a record within the limits");
            tag.copy_from_slice(t.as_ref());
        }
        Ok(len)
    }
}

/// Opens the records one end receives on one connection.
pub struct Opener {
    keyed: Keyed,
    ended: bool,
}

/// What one record held.
#[derive(Debug, PartialEq, Eq)]
pub enum Opened {
    /// Data at `body[range]`.
    Data(std::ops::Range<usize>),
    /// The authenticated end of the stream.
    End,
}

impl Opener {
    pub fn new(session_key: &[u8; 32], suite: Suite, channel: Channel, dir: Direction) -> Self {
        Opener {
            keyed: Keyed::new(session_key, suite, channel, dir),
            ended: false,
        }
    }

    pub fn suite(&self) -> Suite {
        self.keyed.suite
    }

    /// The length of the body a record's header announces, checked before
    /// anything is read or allocated for it.
    pub fn body_len(&self, header: [u8; 4]) -> Result<usize, SealError> {
        let len = u32::from_be_bytes(header);
        let min = 1 + self.keyed.suite.tag();
        if (len as usize) < min || len as usize > MAX_RECORD - 4 {
            return Err(SealError::Length(len));
        }
        Ok(len as usize)
    }

    /// Opens a record's body (everything after its header) in place.
    pub fn open(&mut self, header: [u8; 4], body: &mut [u8]) -> Result<Opened, SealError> {
        if self.ended {
            return Err(SealError::AfterEnd);
        }
        let len = self.body_len(header)?;
        assert_eq!(body.len(), len, "the body the header announced");
        let (seq, nonce) = self.keyed.next()?;
        let plain = match &self.keyed.key {
            Some(key) => key
                .open_in_place(nonce, Aad::from(header), body)
                .map_err(|_| SealError::Forged(seq))?
                .len(),
            None => body.len(),
        };
        match body[0] {
            DATA => Ok(Opened::Data(1..plain)),
            END if plain == 1 => {
                self.ended = true;
                Ok(Opened::End)
            }
            END => Err(SealError::EndWithData(plain - 1)),
            k => Err(SealError::Kind(k)),
        }
    }
}

/// The two directions of one connection's records, as one end holds them.
pub struct Keys {
    pub send: Sealer,
    pub recv: Opener,
}

impl Keys {
    /// The keys of `channel` at the client (`client` true) or the server.
    pub fn new(session_key: &[u8; 32], suite: Suite, channel: Channel, client: bool) -> Keys {
        let (out, back) = if client {
            (Direction::ClientToServer, Direction::ServerToClient)
        } else {
            (Direction::ServerToClient, Direction::ClientToServer)
        };
        Keys {
            send: Sealer::new(session_key, suite, channel, out),
            recv: Opener::new(session_key, suite, channel, back),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: [u8; 32] = [7; 32];

    fn record(s: &mut Sealer, kind: u8, data: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; s.record_len(data.len())];
        buf[DATA_AT..DATA_AT + data.len()].copy_from_slice(data);
        let n = s.seal(&mut buf, kind, data.len()).unwrap();
        buf.truncate(n);
        buf
    }

    /// Opens `rec` as a reader would: as much body as its header announces.
    fn open(o: &mut Opener, rec: &[u8]) -> Result<Option<Vec<u8>>, SealError> {
        let header: [u8; 4] = rec[..4].try_into().unwrap();
        let len = o.body_len(header)?;
        let Some(body) = rec.get(4..4 + len) else {
            // The stream would end inside the record: not a record at all.
            return Err(SealError::Length(len as u32));
        };
        let mut body = body.to_vec();
        match o.open(header, &mut body)? {
            Opened::Data(r) => Ok(Some(body[r].to_vec())),
            Opened::End => Ok(None),
        }
    }

    fn pair(suite: Suite) -> (Sealer, Opener) {
        let ch = Channel::Data {
            stream: 3,
            counter: 9,
        };
        let keys_c = Keys::new(&K, suite, ch, true);
        let keys_s = Keys::new(&K, suite, ch, false);
        (keys_c.send, keys_s.recv)
    }

    #[test]
    fn records_round_trip_in_every_suite_and_the_end_is_authenticated() {
        for suite in [Suite::Aes256Gcm, Suite::ChaCha20Poly1305, Suite::Plain] {
            let (mut s, mut o) = pair(suite);
            let a = record(&mut s, DATA, b"hello");
            let b = record(&mut s, DATA, &vec![0xab; MAX_DATA]);
            let end = record(&mut s, END, b"");
            assert_eq!(a.len(), DATA_AT + 5 + suite.tag());
            assert_eq!(open(&mut o, &a), Ok(Some(b"hello".to_vec())));
            assert_eq!(open(&mut o, &b), Ok(Some(vec![0xab; MAX_DATA])));
            assert_eq!(open(&mut o, &end), Ok(None));
            assert_eq!(open(&mut o, &a), Err(SealError::AfterEnd));
            if suite != Suite::Plain {
                assert!(
                    !a.windows(5).any(|w| w == b"hello"),
                    "{suite:?} shows the plaintext"
                );
            }
        }
    }

    #[test]
    fn a_changed_dropped_repeated_or_reordered_record_does_not_open() {
        for suite in [Suite::Aes256Gcm, Suite::ChaCha20Poly1305] {
            let (mut s, _) = pair(suite);
            let recs: Vec<Vec<u8>> = (0..3u8).map(|i| record(&mut s, DATA, &[i; 40])).collect();
            // A bit flipped anywhere: in the length, the kind, the data, the tag.
            for at in [3, 4, 10, recs[0].len() - 1] {
                let (_, mut o) = pair(suite);
                let mut bad = recs[0].clone();
                bad[at] ^= 0x10;
                assert!(
                    open(&mut o, &bad).is_err(),
                    "{suite:?}: flip at {at} opened"
                );
            }
            // Dropped: record 1 where record 0 belongs.
            let (_, mut o) = pair(suite);
            assert_eq!(open(&mut o, &recs[1]), Err(SealError::Forged(0)));
            // Repeated.
            let (_, mut o) = pair(suite);
            assert!(open(&mut o, &recs[0]).unwrap().is_some());
            assert_eq!(open(&mut o, &recs[0]), Err(SealError::Forged(1)));
            // Another connection's, the other direction's, another session's record.
            let ch = Channel::Data {
                stream: 3,
                counter: 10,
            };
            let mut other = Keys::new(&K, suite, ch, false).recv;
            assert_eq!(open(&mut other, &recs[0]), Err(SealError::Forged(0)));
            let ch = Channel::Data {
                stream: 3,
                counter: 9,
            };
            let mut reflected = Keys::new(&K, suite, ch, true).recv;
            assert_eq!(open(&mut reflected, &recs[0]), Err(SealError::Forged(0)));
            let mut session = Keys::new(&[8; 32], suite, ch, false).recv;
            assert_eq!(open(&mut session, &recs[0]), Err(SealError::Forged(0)));
        }
    }

    #[test]
    fn an_end_with_data_a_strange_kind_or_length_is_refused() {
        let (mut s, mut o) = pair(Suite::ChaCha20Poly1305);
        let bad_end = record(&mut s, END, b"x");
        assert_eq!(open(&mut o, &bad_end), Err(SealError::EndWithData(1)));
        let (mut s, mut o) = pair(Suite::ChaCha20Poly1305);
        let bad_kind = record(&mut s, 9, b"x");
        assert_eq!(open(&mut o, &bad_kind), Err(SealError::Kind(9)));
        assert_eq!(
            o.body_len(((MAX_RECORD - 3) as u32).to_be_bytes()),
            Err(SealError::Length((MAX_RECORD - 3) as u32))
        );
        assert!(o.body_len((TAG as u32).to_be_bytes()).is_err());
        assert_eq!(
            o.body_len(((MAX_RECORD - 4) as u32).to_be_bytes()),
            Ok(MAX_RECORD - 4)
        );
    }

    #[test]
    fn keys_turn_at_each_epoch_on_both_ends_alike() {
        let (mut s, mut o) = pair(Suite::Aes256Gcm);
        let first_key_record = {
            let (mut s2, _) = pair(Suite::Aes256Gcm);
            record(&mut s2, DATA, b"x")
        };
        // Jump both ends to the last record of epoch 0.
        s.0.seq = EPOCH_RECORDS - 1;
        o.keyed.seq = EPOCH_RECORDS - 1;
        let last = record(&mut s, DATA, b"x");
        let next = record(&mut s, DATA, b"x");
        assert_eq!(open(&mut o, &last), Ok(Some(b"x".to_vec())));
        assert_eq!(open(&mut o, &next), Ok(Some(b"x".to_vec())));
        // Epoch 1's key is not epoch 0's: the same nonce under the old key differs.
        assert_ne!(next[DATA_AT..], first_key_record[DATA_AT..]);
    }

    #[test]
    fn plain_only_with_both_ends_consent_and_aes_only_where_both_run_it_fast() {
        let aes = Offer(Offer::AES_FAST | Offer::CHACHA);
        let chacha = Offer(Offer::CHACHA);
        let plain = Offer(Offer::AES_FAST | Offer::CHACHA | Offer::PLAIN);
        let allows = Offer(Offer::AES_FAST | Offer::CHACHA | Offer::PLAIN);
        assert_eq!(aes.choose(aes), Some(Suite::Aes256Gcm));
        assert_eq!(
            aes.choose(allows),
            Some(Suite::Aes256Gcm),
            "a server's consent to plain is not a client's ask"
        );
        assert_eq!(plain.choose(allows), Some(Suite::Plain));
        assert_eq!(
            plain.choose(aes),
            None,
            "plain refused, never sealed instead"
        );
        assert_eq!(
            chacha.choose(aes),
            Some(Suite::ChaCha20Poly1305),
            "a client without AES instructions gets ChaCha20"
        );
        assert_eq!(
            aes.choose(chacha),
            Some(Suite::ChaCha20Poly1305),
            "nor a server without"
        );
        assert_eq!(Offer(0).choose(aes), None);
        assert_eq!(aes.choose(Offer(Offer::PLAIN)), None);
        assert!(!Offer::here(false).asks_plain());
        assert!(Offer::here(true).asks_plain());
    }

    #[test]
    fn known_answer() {
        // Pinned so that two builds of braid always agree on the key schedule.
        let (mut s, _) = pair(Suite::ChaCha20Poly1305);
        let r = record(&mut s, DATA, b"braid");
        assert_eq!(&r[..5], &[0, 0, 0, 22, 47][..], "{:?}", &r[..8]);
    }
}
