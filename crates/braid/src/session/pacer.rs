//! A session-wide rate limit (`--limit`): every stream reserves its bytes on
//! one clock, so N streams together stay under the rate.

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Pacer {
    bytes_per_sec: f64,
    /// When the link is free again on the limit's clock.
    next: Mutex<Option<Instant>>,
}

/// How far ahead of the clock a burst may run: one burst's worth of time.
const BURST: Duration = Duration::from_millis(10);

impl Pacer {
    pub fn new(bits_per_sec: u64) -> Self {
        Pacer {
            bytes_per_sec: bits_per_sec as f64 / 8.0,
            next: Mutex::new(None),
        }
    }

    /// Reserves `n` bytes at `now`; returns how long to wait before sending them.
    pub fn reserve(&self, n: usize, now: Instant) -> Duration {
        let mut next = self.next.lock().unwrap();
        // An idle limit does not bank credit beyond one burst.
        let start = match *next {
            Some(t) if t + BURST > now => t,
            _ => now.checked_sub(BURST).unwrap_or(now),
        };
        let end = start + Duration::from_secs_f64(n as f64 / self.bytes_per_sec);
        *next = Some(end);
        end.saturating_duration_since(now + BURST)
    }

    pub fn wait(&self, n: usize) {
        let d = self.reserve(n, Instant::now());
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_takes_bytes_over_rate() {
        let p = Pacer::new(8_000_000); // 1 MB/s
        let t0 = Instant::now();
        let mut last = Duration::ZERO;
        for _ in 0..100 {
            last = p.reserve(100_000, t0); // 10 MB reserved at one instant
        }
        // 10 s of sending, less the burst allowance.
        let want = Duration::from_secs(10) - 2 * BURST;
        assert!(
            last.abs_diff(want) < Duration::from_millis(1),
            "{last:?} vs {want:?}"
        );
    }

    #[test]
    fn idle_time_does_not_bank_credit() {
        let p = Pacer::new(8_000_000);
        let t0 = Instant::now();
        p.reserve(1_000_000, t0);
        // Ten seconds idle, then a 1 MB burst still waits about a second.
        let d = p.reserve(1_000_000, t0 + Duration::from_secs(20));
        assert!(d > Duration::from_millis(950), "{d:?}");
    }
}
