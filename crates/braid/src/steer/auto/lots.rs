//! Lots drawn for auto's waits: a keyed hash (BLAKE3) of the draw's count,
//! keyed by the system's random source, or by a seed where a run must repeat.

pub struct Lots {
    key: [u8; 32],
    count: u64,
}

impl Lots {
    /// Lots that follow from `seed`: the same seed, the same draws.
    pub fn new(seed: u64) -> Lots {
        Lots {
            key: *blake3::hash(&seed.to_le_bytes()).as_bytes(),
            count: 0,
        }
    }

    /// Lots keyed by the system's random source (a seed of the clock's
    /// nanoseconds if it fails: two groups must draw apart, not securely).
    pub fn from_system() -> Lots {
        let mut key = [0u8; 32];
        if getrandom::getrandom(&mut key).is_err() {
            let ns = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            return Lots::new(ns ^ u64::from(std::process::id()));
        }
        Lots { key, count: 0 }
    }

    /// The next lot, uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        let h = blake3::keyed_hash(&self.key, &self.count.to_le_bytes());
        self.count += 1;
        let mut b = [0u8; 8];
        b.copy_from_slice(&h.as_bytes()[..8]);
        (u64::from_le_bytes(b) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_repeats_its_draws_and_another_seed_draws_others() {
        let draws = |seed| {
            let mut l = Lots::new(seed);
            (0..8).map(|_| l.unit()).collect::<Vec<f64>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
        assert!(draws(3).iter().all(|u| (0.0..1.0).contains(u)));
    }

    #[test]
    fn draws_spread_over_the_unit_interval() {
        let mut l = Lots::new(1);
        let n = 20_000;
        let mut bins = [0u32; 10];
        for _ in 0..n {
            bins[(l.unit() * 10.0) as usize] += 1;
        }
        // Each tenth within 10 % of its expected count (some 7 standard deviations).
        assert!(
            bins.iter().all(|&b| (b as f64 - 2000.0).abs() < 200.0),
            "{bins:?}"
        );
    }

    #[test]
    fn two_groups_from_the_system_draw_apart() {
        let (mut a, mut b) = (Lots::from_system(), Lots::from_system());
        assert_ne!(a.unit(), b.unit());
    }
}
