//! Loss models, with netem's parameter names (tc-netem(8), "LOSS").
//!
//! - `random P`: each packet lost with probability P (Bernoulli);
//! - `gemodel p r 1-h 1-k`: Gilbert-Elliott; p = P(good -> bad), r = P(bad -> good),
//!   1-h = loss probability in the bad state, 1-k = in the good state;
//! - `state p13 p31 p32 p23 p14`: the 4-state Markov model of Salsano et al. that
//!   netem implements (1 gap/received, 2 burst/received, 3 gap/lost, 4 isolated loss);
//! - `periodic N`: every N-th packet.

use crate::rng::Rng;

/// A loss model and its state.
#[derive(Clone, Debug, PartialEq)]
pub enum Loss {
    /// Nothing lost.
    None,
    /// Independent losses with probability `p`.
    Random { p: f64 },
    /// Gilbert-Elliott: two states, each with its own loss probability.
    GilbertElliott {
        p: f64,
        r: f64,
        bad_loss: f64,
        good_loss: f64,
        bad: bool,
    },
    /// netem's 4-state model.
    FourState {
        p13: f64,
        p31: f64,
        p32: f64,
        p23: f64,
        p14: f64,
        state: u8,
    },
    /// Every `every`-th packet, counting from the first.
    Periodic { every: u64, seen: u64 },
}

impl Loss {
    /// netem's `gemodel p [r [1-h [1-k]]]` with its defaults: r = 1 - p, 1-h = 1, 1-k = 0.
    pub fn gemodel(p: f64, r: Option<f64>, bad_loss: Option<f64>, good_loss: Option<f64>) -> Self {
        Loss::GilbertElliott {
            p,
            r: r.unwrap_or(1.0 - p),
            bad_loss: bad_loss.unwrap_or(1.0),
            good_loss: good_loss.unwrap_or(0.0),
            bad: false,
        }
    }

    /// netem's `state p13 [p31 [p32 [p23 [p14]]]]`, defaults as netem's: p31 = 1 - p13, the rest 0.
    pub fn four_state(
        p13: f64,
        p31: Option<f64>,
        p32: Option<f64>,
        p23: Option<f64>,
        p14: Option<f64>,
    ) -> Self {
        Loss::FourState {
            p13,
            p31: p31.unwrap_or(1.0 - p13),
            p32: p32.unwrap_or(0.0),
            p23: p23.unwrap_or(0.0),
            p14: p14.unwrap_or(0.0),
            state: 1,
        }
    }

    /// Decides the fate of one packet: true = lost.
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        match self {
            Loss::None => false,
            Loss::Random { p } => rng.chance(*p),
            Loss::GilbertElliott {
                p,
                r,
                bad_loss,
                good_loss,
                bad,
            } => {
                // The loss follows the state the packet finds; then the chain moves.
                let lost = rng.chance(if *bad { *bad_loss } else { *good_loss });
                let switch = rng.chance(if *bad { *r } else { *p });
                if switch {
                    *bad = !*bad;
                }
                lost
            }
            Loss::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
                state,
            } => {
                let u = rng.unit();
                let (next, lost) = match *state {
                    1 if u < *p14 => (4, true),
                    1 if u < *p14 + *p13 => (3, true),
                    1 => (1, false),
                    2 if u < *p23 => (3, true),
                    2 => (2, false),
                    3 if u < *p32 => (2, false),
                    3 if u < *p32 + *p31 => (1, false),
                    3 => (3, true),
                    _ => (1, false),
                };
                *state = next;
                lost
            }
            Loss::Periodic { every, seen } => {
                *seen += 1;
                *every > 0 && *seen % *every == 0
            }
        }
    }

    /// The long-run loss rate the model is built for.
    pub fn expected_rate(&self) -> f64 {
        match self {
            Loss::None => 0.0,
            Loss::Random { p } => *p,
            Loss::GilbertElliott {
                p,
                r,
                bad_loss,
                good_loss,
                ..
            } => {
                if p + r == 0.0 {
                    return *good_loss;
                }
                let pi_bad = p / (p + r);
                pi_bad * bad_loss + (1.0 - pi_bad) * good_loss
            }
            Loss::FourState { .. } => f64::NAN,
            Loss::Periodic { every, .. } => {
                if *every == 0 {
                    0.0
                } else {
                    1.0 / *every as f64
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mut m: Loss, n: usize, seed: u64) -> Vec<bool> {
        let mut rng = Rng::new(seed);
        (0..n).map(|_| m.lose(&mut rng)).collect()
    }

    fn mean_burst(v: &[bool]) -> f64 {
        let (mut bursts, mut lost, mut prev) = (0, 0, false);
        for &x in v {
            if x {
                lost += 1;
                if !prev {
                    bursts += 1;
                }
            }
            prev = x;
        }
        lost as f64 / bursts as f64
    }

    #[test]
    fn random_loss_rate_within_its_99_percent_interval() {
        let n = 200_000;
        let lost = run(Loss::Random { p: 0.01 }, n, 3)
            .iter()
            .filter(|&&x| x)
            .count() as f64;
        let sd = (n as f64 * 0.01 * 0.99).sqrt();
        assert!((lost - n as f64 * 0.01).abs() < 2.576 * sd, "{lost}");
    }

    #[test]
    fn gilbert_elliott_rate_and_burst_length_follow_the_formulas() {
        // p = 1 %, r = 25 %: pi_bad = 0.01/0.26, mean burst 1/r = 4 packets.
        let m = Loss::gemodel(0.01, Some(0.25), None, None);
        let want = m.expected_rate();
        let v = run(m, 1_000_000, 5);
        let rate = v.iter().filter(|&&x| x).count() as f64 / v.len() as f64;
        assert!((rate - want).abs() / want < 0.05, "{rate} vs {want}");
        assert!((mean_burst(&v) - 4.0).abs() < 0.2, "{}", mean_burst(&v));
    }

    #[test]
    fn four_state_with_only_p13_is_bernoulli() {
        let v = run(Loss::four_state(0.02, None, None, None, None), 500_000, 9);
        let rate = v.iter().filter(|&&x| x).count() as f64 / v.len() as f64;
        assert!((rate - 0.02).abs() < 0.002, "{rate}");
    }

    #[test]
    fn four_state_bursts_lengthen_with_p23() {
        // From the burst state (2) a loss is followed by the lost state (3); staying
        // there with 1 - p31 - p32 makes runs of losses.
        let v = run(
            Loss::four_state(0.01, Some(0.3), Some(0.2), Some(0.5), None),
            500_000,
            11,
        );
        assert!(mean_burst(&v) > 1.5, "{}", mean_burst(&v));
    }

    #[test]
    fn periodic_loses_every_nth() {
        let v = run(Loss::Periodic { every: 4, seen: 0 }, 12, 0);
        assert_eq!(
            v.iter()
                .enumerate()
                .filter(|(_, &x)| x)
                .map(|(i, _)| i)
                .collect::<Vec<_>>(),
            vec![3, 7, 11]
        );
    }
}
