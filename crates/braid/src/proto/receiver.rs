//! The receiving end's control loop, without I/O: which messages it takes in
//! which phase, and when verified files are published. Publishing costs a
//! filesystem sync, so verified files wait a little for others to share it:
//! a batch closes when the sender has said nothing more for `QUIET`, when its
//! first file has waited `WAIT`, or when it holds `BATCH` files. Journals of
//! partial files are written every `JOURNAL`.

use std::time::{Duration, Instant};

use braid_wire::Message;

use crate::error::Error;
use crate::proto::unexpected;

pub const WAIT: Duration = Duration::from_millis(200);
pub const QUIET: Duration = Duration::from_millis(20);
pub const BATCH: usize = 4096;
pub const JOURNAL: Duration = Duration::from_secs(1);

/// What the driver does with a message from the sender.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Check this file against the sender's hash; it joins the open batch.
    Verify { file: u32, hash: [u8; 32] },
    /// Publish what is verified, check that nothing is missing, answer `Close`.
    Close,
}

pub struct ReceiverCore {
    batch_since: Option<Instant>,
    last_journal: Instant,
    closed: bool,
}

impl ReceiverCore {
    pub fn new(now: Instant) -> Self {
        ReceiverCore {
            batch_since: None,
            last_journal: now,
            closed: false,
        }
    }

    pub fn on_control(&mut self, m: Message) -> Result<Step, Error> {
        match m {
            _ if self.closed => Err(unexpected("nothing after the end", &m)),
            Message::Verify { file, hash } => Ok(Step::Verify { file, hash }),
            Message::Close { .. } => {
                self.closed = true;
                Ok(Step::Close)
            }
            m => Err(unexpected("a verification or the end", &m)),
        }
    }

    /// A file was verified; `pending` files now wait. True: publish now.
    pub fn on_verified(&mut self, now: Instant, pending: usize) -> bool {
        self.batch_since.get_or_insert(now);
        pending >= BATCH
    }

    /// The batch was published.
    pub fn published(&mut self) {
        self.batch_since = None;
    }

    /// How long to wait for the sender's next message before publishing the
    /// open batch (`None`: no batch, wait as long as it takes; zero: publish now).
    pub fn publish_in(&self, now: Instant) -> Option<Duration> {
        let since = self.batch_since?;
        Some(WAIT.saturating_sub(now - since).min(QUIET))
    }

    /// When the journals are next due.
    pub fn journal_at(&self) -> Instant {
        self.last_journal + JOURNAL
    }

    /// Whether the journals are due; if so they count as written now.
    pub fn journal_due(&mut self, now: Instant) -> bool {
        if now >= self.journal_at() {
            self.last_journal = now;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_closes_on_a_quiet_sender_on_its_age_or_on_its_size() {
        let t0 = Instant::now();
        let mut c = ReceiverCore::new(t0);
        assert_eq!(c.publish_in(t0), None, "no batch: nothing to wait for");
        assert!(!c.on_verified(t0, 1));
        assert_eq!(c.publish_in(t0), Some(QUIET));
        // More files keep the batch open, but never past WAIT from its first.
        let late = t0 + WAIT - Duration::from_millis(5);
        assert!(!c.on_verified(late, 2));
        assert_eq!(c.publish_in(late), Some(Duration::from_millis(5)));
        assert_eq!(c.publish_in(t0 + WAIT * 2), Some(Duration::ZERO));
        c.published();
        assert_eq!(c.publish_in(late), None);
        assert!(c.on_verified(late, BATCH));
    }

    #[test]
    fn journals_are_due_once_a_second() {
        let t0 = Instant::now();
        let mut c = ReceiverCore::new(t0);
        assert!(!c.journal_due(t0 + JOURNAL / 2));
        assert!(c.journal_due(t0 + JOURNAL));
        assert!(!c.journal_due(t0 + JOURNAL + JOURNAL / 2));
        assert_eq!(c.journal_at(), t0 + JOURNAL * 2);
    }

    #[test]
    fn messages_in_order_and_none_after_the_close() {
        let mut c = ReceiverCore::new(Instant::now());
        assert_eq!(
            c.on_control(Message::Verify {
                file: 3,
                hash: [1; 32]
            })
            .unwrap(),
            Step::Verify {
                file: 3,
                hash: [1; 32]
            }
        );
        let e = c.on_control(Message::Detach { stream: 0 }).unwrap_err();
        assert!(e.to_string().contains("a verification or the end"), "{e}");
        assert_eq!(
            c.on_control(Message::Close { bytes: 9 }).unwrap(),
            Step::Close
        );
        assert!(c.on_control(Message::Close { bytes: 9 }).is_err());
    }
}
