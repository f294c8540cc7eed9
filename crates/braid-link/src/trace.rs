//! A varying link rate from a Mahimahi delivery trace.
//!
//! The format (mahimahi's mm-link): one integer per line, a millisecond
//! timestamp at which the link can deliver one 1500-byte opportunity; lines
//! are non-decreasing, several may share a millisecond, and the trace repeats
//! with a period equal to its last timestamp. A frame takes its bytes from
//! successive opportunities and leaves at the one that completes it; an
//! opportunity nobody used is lost, as on a real cellular link.

use std::sync::Arc;

/// Bytes one delivery opportunity carries.
pub const OPPORTUNITY_BYTES: u64 = 1500;
const MS: u64 = 1_000_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryTrace {
    opportunities_ms: Vec<u64>,
    period_ms: u64,
}

impl DeliveryTrace {
    /// Parses a trace's text; the message names the offending line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut v = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let t: u64 = line.parse().map_err(|_| {
                format!("trace line {}: {line:?} is not a millisecond count", i + 1)
            })?;
            if v.last().is_some_and(|&last| t < last) {
                return Err(format!("trace line {}: {t} ms goes back in time", i + 1));
            }
            v.push(t);
        }
        let period_ms = *v.last().ok_or("trace has no delivery opportunities")?;
        if period_ms == 0 {
            return Err("trace's last timestamp must be positive: it is the trace's period".into());
        }
        Ok(DeliveryTrace {
            opportunities_ms: v,
            period_ms,
        })
    }

    pub fn load(path: &str) -> Result<Self, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("reading trace {path:?}: {e}"))?;
        Self::parse(&text).map_err(|e| format!("{path}: {e}"))
    }

    /// The long-run rate, bit/s.
    pub fn mean_rate_bps(&self) -> f64 {
        self.opportunities_ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0
            / (self.period_ms as f64 / 1000.0)
    }

    /// (cycle, index) of the first opportunity at or after `at_ns`.
    fn locate(&self, at_ns: u64) -> (u64, usize) {
        let at_ms = at_ns.div_ceil(MS);
        let (mut cycle, within) = (at_ms / self.period_ms, at_ms % self.period_ms);
        let mut idx = self.opportunities_ms.partition_point(|&t| t < within);
        if idx == self.opportunities_ms.len() {
            idx = 0;
            cycle += 1;
        }
        (cycle, idx)
    }

    fn time_ns(&self, cycle: u64, idx: usize) -> u64 {
        (cycle * self.period_ms + self.opportunities_ms[idx]) * MS
    }
}

/// Where a direction is in its trace.
#[derive(Clone, Debug)]
pub struct Cursor {
    trace: Arc<DeliveryTrace>,
    cycle: u64,
    idx: usize,
    left: u64,
}

impl Cursor {
    pub fn new(trace: Arc<DeliveryTrace>) -> Self {
        Cursor {
            trace,
            cycle: 0,
            idx: 0,
            left: OPPORTUNITY_BYTES,
        }
    }

    fn now_ns(&self) -> u64 {
        self.trace.time_ns(self.cycle, self.idx)
    }

    fn advance(&mut self) {
        self.idx += 1;
        if self.idx == self.trace.opportunities_ms.len() {
            self.idx = 0;
            self.cycle += 1;
        }
        self.left = OPPORTUNITY_BYTES;
    }

    /// When the first opportunity at or after `at_ns` comes (without moving).
    pub fn peek(&self, at_ns: u64) -> u64 {
        if self.now_ns() >= at_ns {
            return self.now_ns();
        }
        let (c, i) = self.trace.locate(at_ns);
        self.trace.time_ns(c, i)
    }

    /// Moves to the first opportunity at or after `at_ns`, passing over the
    /// unused ones; its time.
    pub fn seek(&mut self, at_ns: u64) -> u64 {
        if self.now_ns() < at_ns {
            (self.cycle, self.idx) = self.trace.locate(at_ns);
            self.left = OPPORTUNITY_BYTES;
        }
        self.now_ns()
    }

    /// Sends `len` bytes from the current opportunity on; the time the last one leaves.
    pub fn consume(&mut self, len: u64) -> u64 {
        let mut rem = len.max(1);
        loop {
            let take = rem.min(self.left);
            self.left -= take;
            rem -= take;
            let t = self.now_ns();
            if self.left == 0 {
                self.advance();
            }
            if rem == 0 {
                return t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(text: &str) -> Cursor {
        Cursor::new(Arc::new(DeliveryTrace::parse(text).unwrap()))
    }

    #[test]
    fn parse_and_mean_rate() {
        // 12 Mb/s: one 1500-byte opportunity every millisecond.
        let t = DeliveryTrace::parse("1\n2\n3\n4\n").unwrap();
        assert_eq!(t.mean_rate_bps(), 12e6);
        // Two per millisecond, with blank lines: 24 Mb/s.
        assert_eq!(
            DeliveryTrace::parse("1\n1\n\n2\n2\n")
                .unwrap()
                .mean_rate_bps(),
            24e6
        );
    }

    #[test]
    fn bad_traces_are_named() {
        assert!(DeliveryTrace::parse("")
            .unwrap_err()
            .contains("no delivery"));
        assert!(DeliveryTrace::parse("3\n2\n")
            .unwrap_err()
            .contains("line 2"));
        assert!(DeliveryTrace::parse("1\nx\n")
            .unwrap_err()
            .contains("line 2"));
        assert!(DeliveryTrace::parse("0\n0\n")
            .unwrap_err()
            .contains("period"));
    }

    #[test]
    fn frames_take_bytes_from_successive_opportunities() {
        let mut c = cursor("1\n2\n3\n4\n");
        assert_eq!(c.seek(0), MS);
        // 1000 + 1000 bytes: the second spills into the 2 ms opportunity.
        assert_eq!(c.consume(1000), MS);
        assert_eq!(c.seek(MS), MS);
        assert_eq!(c.consume(1000), 2 * MS);
        // 3000 bytes: the rest of 2 ms (1000), all of 3 ms, 500 of 4 ms.
        assert_eq!(c.consume(3000), 4 * MS);
    }

    #[test]
    fn unused_opportunities_are_lost_and_the_trace_repeats() {
        let mut c = cursor("1\n2\n3\n4\n");
        // Idle until 2.5 ms: opportunities 1 and 2 are gone.
        assert_eq!(c.peek(2_500_000), 3 * MS);
        assert_eq!(c.seek(2_500_000), 3 * MS);
        // Past the end: the second cycle starts at 4 ms with its 1 ms offset.
        assert_eq!(c.seek(4 * MS + 1), 5 * MS);
        assert_eq!(c.seek(1000 * MS), 1001 * MS);
        c.consume(1500);
        assert_eq!(c.seek(0), 1002 * MS);
    }
}
