//! A socket's TCP_INFO: what the congestion control is doing to it.

use std::io;
use std::os::fd::BorrowedFd;

use serde::Serialize;

/// struct tcp_info of include/uapi/linux/tcp.h, up to tcpi_snd_wnd (Linux 5.19+).
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    app_limited_flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
}

/// The congestion-relevant part of TCP_INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TcpInfo {
    /// Congestion-avoidance state (0 open, 1 disorder, 2 cwr, 3 recovery, 4 loss).
    pub ca_state: u8,
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Slow-start threshold, packets (2^31-1 before the first loss).
    pub ssthresh: u32,
    /// Smoothed RTT, microseconds.
    pub srtt_us: u32,
    /// RTT variance, microseconds.
    pub rttvar_us: u32,
    /// Minimum RTT seen, microseconds.
    pub min_rtt_us: u32,
    /// Sender's maximum segment size, bytes.
    pub mss: u32,
    /// Segments sent and not yet acknowledged (the kernel's packets_out,
    /// those marked lost or selectively acknowledged among them). Read by
    /// a steer, not put on the record.
    #[serde(skip)]
    pub unacked: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Segments now considered lost.
    pub lost: u32,
    /// Data segments sent, retransmissions included.
    pub data_segs_out: u32,
    /// Payload bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// Bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Bytes retransmitted.
    pub bytes_retrans: u64,
    /// Most recent delivery-rate sample, bytes per second.
    pub delivery_rate: u64,
    /// Packets delivered (the ACK clock's count).
    pub delivered: u32,
    /// Time with data in flight over the connection's life, µs (the three
    /// chronographs of tcp_chrono_stat together).
    pub busy_us: u64,
    /// Of that, time the receiver's advertised window held the sender, µs.
    pub rwnd_limited_us: u64,
    /// Of that, time the sending socket's buffer held it, µs: all it held was
    /// in flight, the congestion window allowed more, and the application
    /// waited for room (tcp_cwnd_validate).
    pub sndbuf_limited_us: u64,
}

/// Reads TCP_INFO of a connected TCP socket.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    // SAFETY: RawTcpInfo is repr(C) integers only: any bytes are one.
    let raw: RawTcpInfo =
        unsafe { crate::settings::socket_option(fd, libc::IPPROTO_TCP, libc::TCP_INFO)? };
    Ok(TcpInfo {
        ca_state: raw.ca_state,
        cwnd: raw.snd_cwnd,
        ssthresh: raw.snd_ssthresh,
        srtt_us: raw.rtt,
        rttvar_us: raw.rttvar,
        min_rtt_us: raw.min_rtt,
        mss: raw.snd_mss,
        unacked: raw.unacked,
        total_retrans: raw.total_retrans,
        lost: raw.lost,
        data_segs_out: raw.data_segs_out,
        // The kernel counts the SYN's sequence number as one acknowledged byte.
        bytes_acked: raw.bytes_acked.saturating_sub(1),
        bytes_sent: raw.bytes_sent,
        bytes_retrans: raw.bytes_retrans,
        delivery_rate: raw.delivery_rate,
        delivered: raw.delivered,
        busy_us: raw.busy_time,
        rwnd_limited_us: raw.rwnd_limited,
        sndbuf_limited_us: raw.sndbuf_limited,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::mem::size_of;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    #[test]
    fn layout_matches_the_kernel_header() {
        // tcp_info up to tcpi_snd_wnd is 232 bytes on every 64-bit Linux ABI.
        assert_eq!(size_of::<RawTcpInfo>(), 232);
    }

    #[test]
    fn reads_a_loopback_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, _) = l.accept().unwrap();
        c.write_all(&[7u8; 10_000]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let info = tcp_info(c.as_fd()).unwrap();
        assert!(info.cwnd >= 2, "{info:?}");
        assert!(info.mss > 0);
        assert_eq!(info.bytes_acked, 10_000, "{info:?}");
    }

    #[test]
    fn a_receiver_that_does_not_read_holds_the_sender_by_its_window() {
        use std::io::ErrorKind;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, _) = l.accept().unwrap();
        c.set_nonblocking(true).unwrap();
        let block = [7u8; 65536];
        // Until the receiver's window and the sender's buffer are full.
        for _ in 0..100_000 {
            match c.write(&block) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        let info = tcp_info(c.as_fd()).unwrap();
        assert!(info.rwnd_limited_us > 0, "{info:?}");
        assert!(
            info.busy_us >= info.rwnd_limited_us + info.sndbuf_limited_us,
            "{info:?}"
        );
    }
}
