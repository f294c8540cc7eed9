//! One receiving stream: blocks off the connection, written in place piece
//! by piece as their records open (each record's tag vouches for its bytes),
//! acknowledged with a running count; its reads are stamped, and it tells
//! the sender the bottleneck they show (`session::stamp`).

use braid_wire::Message;

use super::RecvShared;
use crate::error::Error;
use crate::session::conn::Conn;
use crate::session::stamp::Teller;

/// A receiving stream acknowledges at least this often while blocks stream in.
const ACK_EVERY: u64 = 4 << 20;

/// How a receiving stream ended.
pub enum Ended {
    /// The sender said Detach: this stream is finished.
    Detached,
    /// The connection died; the sender will send its blocks again.
    Lost(Error),
    /// The data or the disk failed: the session must stop.
    Fatal(Error),
}

/// Receives blocks on one stream and acknowledges them with a running count.
pub fn worker(stream: usize, conn: Conn, shared: &RecvShared) -> Ended {
    shared.tel.set_socket(stream, conn.stream());
    let Conn { mut r, mut w } = conn;
    // A socket that refuses stamps only leaves the bottleneck unseen.
    let _ = r.stamp(std::sync::Arc::clone(&shared.tel.arrivals));
    let mut teller = Teller::new();
    let (mut total, mut acked) = (0u64, 0u64);
    loop {
        let m = match r.recv_opt() {
            Ok(Some(m)) => m,
            Ok(None) => {
                return Ended::Lost(Error::Protocol(format!(
                    "stream {stream} closed without detaching"
                )))
            }
            Err(e) => return ended(e),
        };
        match m {
            Message::Block { file, offset, len } => {
                if len > shared.block_size {
                    return Ended::Fatal(Error::Protocol(format!(
                        "a block of {len} bytes; the session's blocks are {}",
                        shared.block_size
                    )));
                }
                let mut landing = match shared.begin(file, offset, len) {
                    Ok(l) => l,
                    Err(e) => return Ended::Fatal(e),
                };
                let mut left = len as usize;
                while left > 0 {
                    let piece = match r.data(left) {
                        Ok(p) => p,
                        Err(e) => return ended(e),
                    };
                    left -= piece.len();
                    if let Err(e) = shared.piece(&mut landing, piece) {
                        return Ended::Fatal(e);
                    }
                }
                if let Err(e) = shared.land(landing) {
                    return Ended::Fatal(e);
                }
                total += len as u64;
                shared.tel.add(stream, len as u64);
                // One acknowledgement for the blocks read in one go (many small
                // files' blocks arrive together), and at least every few MiB.
                if r.buffered() == 0 || total - acked >= ACK_EVERY {
                    if let Err(e) = w.send(&Message::Progress { bytes: total }) {
                        return Ended::Lost(e);
                    }
                    acked = total;
                }
                if let Some(m) = teller.due(&shared.tel) {
                    if let Err(e) = w.send(&m) {
                        return Ended::Lost(e);
                    }
                }
            }
            Message::Detach { .. } => return Ended::Detached,
            Message::Error { code, message } => {
                return Ended::Fatal(Error::Remote { code, message })
            }
            m => return Ended::Fatal(crate::proto::unexpected("a block", &m)),
        }
    }
}

/// A connection that failed: one that dropped is lost (the sender sends its
/// blocks again on another), anything else, tampering above all, ends the
/// session.
fn ended(e: Error) -> Ended {
    match e {
        Error::Connect { .. } => Ended::Lost(e),
        e => Ended::Fatal(e),
    }
}
