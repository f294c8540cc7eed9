//! Summaries of RTT samples.

/// The q-quantile (0 <= q <= 1) of sorted samples, by linear interpolation
/// between closest ranks; None when there are none.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, frac) = (pos.floor() as usize, pos.fract());
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// Replies that arrived after a reply to a later probe.
pub fn reordered(seqs_in_arrival_order: &[u64]) -> u64 {
    let mut highest = None;
    let mut n = 0;
    for &s in seqs_in_arrival_order {
        match highest {
            Some(h) if s < h => n += 1,
            _ => highest = Some(s),
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_hand() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), Some(3.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 1.0), Some(5.0));
        assert_eq!(quantile(&v, 0.99), Some(4.96));
        assert_eq!(quantile(&[2.0, 4.0], 0.5), Some(3.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn reordering_counts_late_arrivals() {
        assert_eq!(reordered(&[0, 1, 2, 3]), 0);
        assert_eq!(reordered(&[0, 2, 1, 3]), 1);
        assert_eq!(reordered(&[3, 0, 1, 2]), 3);
        assert_eq!(reordered(&[]), 0);
    }
}
