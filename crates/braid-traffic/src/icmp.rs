//! ICMP echo framing for the RTT prober (RFC 792), as fping sends it.
//!
//! The request's data starts with the probe's full 64-bit sequence number
//! and its send time, so a reply carries everything needed to compute the
//! RTT and to see reordering, with no table of outstanding probes.

pub const ECHO_REQUEST: u8 = 8;
pub const ECHO_REPLY: u8 = 0;
/// ICMP header plus our sequence number and timestamp.
pub const MIN_DATA: usize = 16;

/// The Internet checksum (RFC 1071): one's complement of the one's
/// complement sum of 16-bit words.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for w in &mut chunks {
        sum += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Writes an echo request with `data_len` bytes of data (>= MIN_DATA) into
/// `buf` and returns its length.
pub fn echo_request(buf: &mut [u8], ident: u16, seq: u64, sent_ns: u64, data_len: usize) -> usize {
    let data_len = data_len.max(MIN_DATA);
    let len = 8 + data_len;
    let pkt = &mut buf[..len];
    pkt[0] = ECHO_REQUEST;
    pkt[1] = 0;
    pkt[2..4].fill(0);
    pkt[4..6].copy_from_slice(&ident.to_be_bytes());
    pkt[6..8].copy_from_slice(&(seq as u16).to_be_bytes());
    pkt[8..16].copy_from_slice(&seq.to_be_bytes());
    pkt[16..24].copy_from_slice(&sent_ns.to_be_bytes());
    for (i, b) in pkt[24..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let sum = checksum(pkt);
    pkt[2..4].copy_from_slice(&sum.to_be_bytes());
    len
}

/// What an echo reply of ours says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub seq: u64,
    pub sent_ns: u64,
}

/// Parses what a raw IPv4 ICMP socket delivers (IP header included): our
/// echo reply, or None for anything else (other programs' pings, errors,
/// corrupted packets).
pub fn parse_reply(ip_packet: &[u8], ident: u16) -> Option<Reply> {
    let first = *ip_packet.first()?;
    if first >> 4 != 4 {
        return None;
    }
    let ihl = (first & 0x0f) as usize * 4;
    let icmp = ip_packet.get(ihl..)?;
    if icmp.len() < 8 + MIN_DATA || icmp[0] != ECHO_REPLY || icmp[1] != 0 {
        return None;
    }
    if u16::from_be_bytes([icmp[4], icmp[5]]) != ident || checksum(icmp) != 0 {
        return None;
    }
    let seq = u64::from_be_bytes(icmp[8..16].try_into().unwrap());
    if seq as u16 != u16::from_be_bytes([icmp[6], icmp[7]]) {
        return None;
    }
    Some(Reply {
        seq,
        sent_ns: u64::from_be_bytes(icmp[16..24].try_into().unwrap()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        // An odd length pads with a zero byte.
        assert_eq!(checksum(&[0x12]), !0x1200);
    }

    /// What the kernel sends back: the request with type 0, checksum redone,
    /// behind a 20-byte IP header.
    fn as_reply(req: &[u8]) -> Vec<u8> {
        let mut icmp = req.to_vec();
        icmp[0] = ECHO_REPLY;
        icmp[2..4].fill(0);
        let sum = checksum(&icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let mut ip = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0, 10, 9, 0, 2, 10, 9, 0, 1,
        ];
        ip.extend(icmp);
        ip
    }

    #[test]
    fn request_then_reply_round_trip() {
        let mut buf = [0u8; 2000];
        let len = echo_request(&mut buf, 0xbeef, 70_000, 123_456_789, 1440);
        assert_eq!(len, 1448);
        assert_eq!(checksum(&buf[..len]), 0, "a valid packet sums to zero");
        assert_eq!(&buf[..2], &[8, 0]);
        assert_eq!(u16::from_be_bytes([buf[6], buf[7]]), 70_000u64 as u16);
        let reply = as_reply(&buf[..len]);
        assert_eq!(
            parse_reply(&reply, 0xbeef),
            Some(Reply {
                seq: 70_000,
                sent_ns: 123_456_789
            })
        );
    }

    #[test]
    fn foreign_and_damaged_packets_are_ignored() {
        let mut buf = [0u8; 100];
        let len = echo_request(&mut buf, 7, 1, 2, 16);
        let good = as_reply(&buf[..len]);
        assert!(parse_reply(&good, 8).is_none(), "another program's ident");
        let mut bad = good.clone();
        bad[40] ^= 1;
        assert!(parse_reply(&bad, 7).is_none(), "checksum");
        let req = {
            let mut r = good.clone();
            r[20] = ECHO_REQUEST;
            r
        };
        assert!(parse_reply(&req, 7).is_none(), "a request is no reply");
        assert!(parse_reply(&good[..30], 7).is_none(), "truncated");
        assert!(parse_reply(&[], 7).is_none());
    }
}
