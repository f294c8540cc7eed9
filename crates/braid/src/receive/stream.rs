//! One receiving stream: blocks off the connection, each checked against its
//! CRC-32C and written in place, acknowledged with a running count.

use braid_wire::Message;

use super::RecvShared;
use crate::conn::Conn;
use crate::error::Error;

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
    let mut buf = vec![0u8; shared.block_size as usize];
    let (mut total, mut acked) = (0u64, 0u64);
    loop {
        let m = match r.recv_opt() {
            Ok(Some(m)) => m,
            Ok(None) => {
                return Ended::Lost(Error::Protocol(format!(
                    "stream {stream} closed without detaching"
                )))
            }
            Err(e @ Error::Connect { .. }) => return Ended::Lost(e),
            Err(e) => return Ended::Fatal(e),
        };
        match m {
            Message::Block {
                file,
                offset,
                len,
                checksum,
            } => {
                if len > shared.block_size {
                    return Ended::Fatal(Error::Protocol(format!(
                        "a block of {len} bytes; the session's blocks are {}",
                        shared.block_size
                    )));
                }
                let data = &mut buf[..len as usize];
                if let Err(e) = r.read_data(data) {
                    return Ended::Lost(e);
                }
                let crc = crc32c::crc32c(data);
                if crc != checksum {
                    return Ended::Fatal(Error::Verify(format!(
                        "block of file {file} at {offset}: CRC-32C {crc:08x}, the sender said {checksum:08x}"
                    )));
                }
                if let Err(e) = shared.write(file, offset, data) {
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
            }
            Message::Detach { .. } => return Ended::Detached,
            Message::Error { code, message } => {
                return Ended::Fatal(Error::Remote { code, message })
            }
            m => return Ended::Fatal(crate::session::unexpected("a block", &m)),
        }
    }
}
