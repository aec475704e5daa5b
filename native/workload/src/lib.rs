//! Deterministic key distributions for tests, benchmarks and load generators.
//!
//! Everything here is seeded and reproducible: the same seed gives the same key sequence on every
//! machine, so a benchmark or a failing stress test can be re-run exactly.

/// A small, fast, seeded pseudo-random generator (SplitMix64). Not for cryptography.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in [0, n); `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// How keys are drawn from `0..keys`.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform { keys: u64 },
    /// Key `i` (0-based) has weight `1 / (i + 1)^s`.
    Zipf { keys: u64, s: f64 },
    /// Key 0 gets `share` of all records; the rest are uniform over the other keys.
    HotKey { keys: u64, share: f64 },
    /// Key 0 gets `share` of all records; the rest are Zipf with exponent `s` over the other keys
    /// (key 1 the most frequent of them).
    ZipfHot { keys: u64, s: f64, share: f64 },
}

impl KeyDist {
    pub fn keys(&self) -> u64 {
        match *self {
            KeyDist::Uniform { keys }
            | KeyDist::Zipf { keys, .. }
            | KeyDist::HotKey { keys, .. }
            | KeyDist::ZipfHot { keys, .. } => keys,
        }
    }

    /// Checks the parameters and builds a sampler.
    pub fn sampler(&self, seed: u64) -> Result<KeySampler, String> {
        let keys = self.keys();
        if keys == 0 {
            return Err("a key distribution needs at least one key".into());
        }
        let table = match *self {
            KeyDist::Uniform { .. } => Table::Uniform,
            KeyDist::Zipf { s, .. } => Table::Cdf(zipf_cdf(keys, s)?),
            KeyDist::HotKey { share, .. } => Table::Hot(check_share(share)?),
            KeyDist::ZipfHot { s, share, .. } => {
                let share = check_share(share)?;
                if keys == 1 {
                    Table::Hot(share)
                } else {
                    Table::HotCdf(share, zipf_cdf(keys - 1, s)?)
                }
            }
        };
        Ok(KeySampler {
            rng: Rng::new(seed),
            keys,
            table,
        })
    }
}

fn check_share(share: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&share) {
        Ok(share)
    } else {
        Err(format!("hot-key share must be within [0, 1], got {share}"))
    }
}

/// The cumulative Zipf(s) weights of `keys` keys, normalised to end at 1.
fn zipf_cdf(keys: u64, s: f64) -> Result<Vec<f64>, String> {
    if !(s.is_finite() && s > 0.0) {
        return Err(format!("Zipf exponent must be a positive number, got {s}"));
    }
    if keys > 50_000_000 {
        return Err(format!("Zipf supports at most 50,000,000 keys, got {keys}"));
    }
    let mut cdf = Vec::with_capacity(keys as usize);
    let mut total = 0.0f64;
    for i in 0..keys {
        total += 1.0 / ((i + 1) as f64).powf(s);
        cdf.push(total);
    }
    for c in &mut cdf {
        *c /= total;
    }
    Ok(cdf)
}

fn draw(cdf: &[f64], u: f64) -> u64 {
    (cdf.partition_point(|&c| c <= u) as u64).min(cdf.len() as u64 - 1)
}

#[derive(Clone, Debug)]
enum Table {
    Uniform,
    Cdf(Vec<f64>),
    Hot(f64),
    /// Key 0 with the share, else 1 + a Zipf draw over the other keys.
    HotCdf(f64, Vec<f64>),
}

/// Draws keys from a [`KeyDist`]; O(1) for uniform and hot key, O(log keys) for Zipf.
#[derive(Clone, Debug)]
pub struct KeySampler {
    rng: Rng,
    keys: u64,
    table: Table,
}

impl KeySampler {
    pub fn next_key(&mut self) -> u64 {
        match &self.table {
            Table::Uniform => self.rng.below(self.keys),
            Table::Cdf(cdf) => draw(cdf, self.rng.next_f64()),
            Table::HotCdf(share, cdf) => {
                if self.rng.next_f64() < *share {
                    0
                } else {
                    1 + draw(cdf, self.rng.next_f64())
                }
            }
            Table::Hot(share) => {
                if self.keys == 1 || self.rng.next_f64() < *share {
                    0
                } else {
                    1 + self.rng.below(self.keys - 1)
                }
            }
        }
    }
}

/// The 64-bit key hash streamshard uses for a key id in tests and tools (a fixed bijective mix, so
/// distinct ids never collide).
pub fn key_hash(id: u64) -> u64 {
    let mut z = id.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(dist: KeyDist, n: usize) -> Vec<u64> {
        let mut s = dist.sampler(7).unwrap();
        let mut h = vec![0u64; dist.keys() as usize];
        for _ in 0..n {
            h[s.next_key() as usize] += 1;
        }
        h
    }

    #[test]
    fn zipf_head_matches_its_weight() {
        // Key i carries (i + 1)^-s / H(keys, s) of the mass; H(10000, 1.1) is about 6.60.
        let harmonic: f64 = (1..=10_000).map(|i| (i as f64).powf(-1.1)).sum();
        let h = histogram(
            KeyDist::Zipf {
                keys: 10_000,
                s: 1.1,
            },
            400_000,
        );
        for k in [0usize, 1, 9] {
            let expect = ((k + 1) as f64).powf(-1.1) / harmonic;
            let share = h[k] as f64 / 400_000.0;
            assert!(
                (share - expect).abs() < 0.1 * expect,
                "key {k}: {share} vs {expect}"
            );
        }
        assert!(h[0] > h[1] && h[1] > h[10] && h[10] > h[1000]);
    }

    #[test]
    fn hot_key_share_is_respected() {
        let h = histogram(
            KeyDist::HotKey {
                keys: 100,
                share: 0.5,
            },
            200_000,
        );
        let share = h[0] as f64 / 200_000.0;
        assert!((share - 0.5).abs() < 0.01, "share = {share}");
    }

    #[test]
    fn zipf_plus_hot_key() {
        let h = histogram(
            KeyDist::ZipfHot {
                keys: 1000,
                s: 1.0,
                share: 0.2,
            },
            200_000,
        );
        let share = h[0] as f64 / 200_000.0;
        assert!((share - 0.2).abs() < 0.01, "share = {share}");
        // The rest is Zipf from key 1 on, every key reachable.
        assert!(
            h[1] > h[2] && h[2] > h[10] && h[10] > h[500],
            "{:?}",
            &h[..12]
        );
        assert!(h[999] > 0);
        assert!(KeyDist::ZipfHot {
            keys: 5,
            s: 1.0,
            share: -0.1
        }
        .sampler(1)
        .is_err());
        assert!(KeyDist::ZipfHot {
            keys: 5,
            s: 0.0,
            share: 0.1
        }
        .sampler(1)
        .is_err());
    }

    #[test]
    fn uniform_covers_all_keys() {
        let h = histogram(KeyDist::Uniform { keys: 10 }, 100_000);
        assert!(h.iter().all(|&c| (9_000..11_000).contains(&c)), "{h:?}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(KeyDist::Uniform { keys: 0 }.sampler(1).is_err());
        assert!(KeyDist::Zipf { keys: 5, s: -1.0 }.sampler(1).is_err());
        assert!(KeyDist::HotKey {
            keys: 5,
            share: 1.5
        }
        .sampler(1)
        .is_err());
    }

    #[test]
    fn same_seed_same_sequence() {
        let d = KeyDist::Zipf { keys: 1000, s: 1.1 };
        let a: Vec<u64> = {
            let mut s = d.sampler(42).unwrap();
            (0..100).map(|_| s.next_key()).collect()
        };
        let b: Vec<u64> = {
            let mut s = d.sampler(42).unwrap();
            (0..100).map(|_| s.next_key()).collect()
        };
        assert_eq!(a, b);
    }
}
