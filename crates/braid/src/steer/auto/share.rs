//! How the group's cap is shared among its streams: the cap bounds what the
//! group moves together, and no stream's part of it should lie idle while
//! another could carry it.
//!
//! An equal part each would leave room unused wherever a stream moves less
//! than its part: one whose random loss has just halved its window, or one
//! with nothing left to send at a transfer's end (its blocks are done, the
//! last ones in flight on others). So, as max-min fair sharing does: the
//! streams with data in flight share the cap equally, and what those below
//! their part leave goes to the ones that reach it. A stream below keeps its
//! whole part, so that it may grow back into it; if it does, the group moves
//! a little more than its cap for a tick, and the next tick shares again.
//!
//! Below means below by more than the rate's noise (`noise`, a fraction of
//! the part): a stream's rate over one tick scatters around its part, and
//! were every stream that fell a little short counted below, the ones a
//! little over would be given that shortfall while the short ones kept their
//! part, and the group would move its cap plus the noise's mean shortfall,
//! tick after tick: a cap that leaks holds a queue it was set to keep off.

/// Each stream's cap, bytes a second, of the group's `cap`, from what each
/// moved over the last tick (`None`: none of its data was acknowledged, so
/// none is in flight; it is given an equal part, should it send again).
/// A stream within `noise` (a fraction) of its part has reached it.
pub fn parts(cap: f64, moved: &[Option<f64>], noise: f64) -> Vec<f64> {
    let busy: Vec<f64> = moved.iter().flatten().copied().collect();
    if busy.is_empty() {
        return vec![cap / moved.len().max(1) as f64; moved.len()];
    }
    let part = cap / busy.len() as f64;
    let reached = |r: f64| r >= part * (1.0 - noise);
    let slack: f64 = busy
        .iter()
        .filter(|r| !reached(**r))
        .map(|r| part - r)
        .sum();
    let reaching = busy.iter().filter(|r| reached(**r)).count();
    let more = if reaching == 0 {
        0.0
    } else {
        slack / reaching as f64
    };
    moved
        .iter()
        .map(|r| match r {
            Some(r) if reached(*r) => part + more,
            _ => part,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_that_all_reach_their_part_share_the_cap_equally() {
        assert_eq!(
            parts(90.0, &[Some(40.0), Some(30.0), Some(30.0)], 0.0),
            vec![30.0; 3]
        );
    }

    #[test]
    fn what_a_stream_below_its_part_leaves_goes_to_those_that_reach_theirs() {
        // 100 among 4: parts of 25; one moves 5, so 20 is left to the two at 25.
        let p = parts(100.0, &[Some(25.0), Some(5.0), Some(30.0), Some(20.0)], 0.0);
        assert_eq!(p, vec![25.0 + 12.5, 25.0, 25.0 + 12.5, 25.0]);
        // Those that carry it move the cap together.
        let moved = 37.5 + 5.0 + 37.5 + 20.0;
        assert!((moved - 100.0_f64).abs() < 1e-9);
    }

    #[test]
    fn streams_with_nothing_in_flight_leave_the_cap_to_the_others() {
        // A transfer's end: the last blocks on one stream of four.
        let p = parts(100.0, &[None, Some(25.0), None, None], 0.05);
        assert_eq!(p, vec![100.0; 4]);
    }

    #[test]
    fn with_none_in_flight_or_all_below_each_gets_an_equal_part() {
        assert_eq!(parts(100.0, &[None, None], 0.05), vec![50.0, 50.0]);
        assert_eq!(
            parts(100.0, &[Some(10.0), Some(20.0)], 0.05),
            vec![50.0, 50.0]
        );
        assert!(parts(100.0, &[], 0.05).is_empty());
    }

    #[test]
    fn streams_within_the_noise_of_their_part_share_the_cap_and_no_more() {
        // 100 among 4, each 25 give or take the tick's noise (5 %).
        let moved = [Some(24.0), Some(26.0), Some(24.5), Some(25.5)];
        let p = parts(100.0, &moved, 0.05);
        assert_eq!(p, vec![25.0; 4]);
        // Counted below, the two short ones' shortfall would be given to the
        // others while they kept their part: the cap would leak.
        let leaky: f64 = parts(100.0, &moved, 0.0).iter().sum();
        assert!(leaky > 100.0);
    }
}
