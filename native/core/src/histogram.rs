//! A fixed-size log-linear histogram of `u64` values (four buckets per power of two, so a
//! reported quantile is within 25% of the true value), readable while it is being written.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const SUB_BITS: u32 = 2;
const SUB: u64 = 1 << SUB_BITS;
/// Number of buckets: values below `SUB` get one each, then `SUB` per power of two.
pub const BUCKETS: usize = (SUB as usize) * (64 - SUB_BITS as usize + 1);

/// Index of the bucket that holds `v`.
pub fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let k = 63 - v.leading_zeros(); // k >= SUB_BITS
    let sub = (v >> (k - SUB_BITS)) & (SUB - 1);
    ((k - SUB_BITS + 1) as usize) * SUB as usize + sub as usize
}

/// Smallest value that falls into bucket `i`.
pub fn bucket_low(i: usize) -> u64 {
    if i < SUB as usize {
        return i as u64;
    }
    let k = (i / SUB as usize) as u32 + SUB_BITS - 1;
    let sub = (i % SUB as usize) as u64;
    (SUB + sub) << (k - SUB_BITS)
}

/// Largest value that falls into bucket `i`.
pub fn bucket_high(i: usize) -> u64 {
    if i + 1 >= BUCKETS {
        u64::MAX
    } else {
        bucket_low(i + 1) - 1
    }
}

/// Written by one thread at a time (the scheduler writes it under its lock, so a plain load and
/// store suffice and no read-modify-write is paid); read at any time without a lock.
pub(crate) struct AtomicHistogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum: AtomicU64,
    max: AtomicU64,
}

impl AtomicHistogram {
    pub fn new() -> Self {
        AtomicHistogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }

    /// Caller must be the only writer at this moment (it holds the scheduler lock).
    pub fn record_exclusive(&self, v: u64) {
        let b = &self.buckets[bucket_of(v)];
        b.store(b.load(Relaxed) + 1, Relaxed);
        self.count.store(self.count.load(Relaxed) + 1, Relaxed);
        self.sum
            .store(self.sum.load(Relaxed).saturating_add(v), Relaxed);
        if v > self.max.load(Relaxed) {
            self.max.store(v, Relaxed);
        }
    }

    /// Adds `delta` (which may be negative as a wrapping value) to bucket `i`; exclusive writer.
    pub fn adjust_exclusive(&self, i: usize, delta: i64) {
        let b = &self.buckets[i];
        b.store(b.load(Relaxed).wrapping_add(delta as u64), Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            buckets: self.buckets.iter().map(|b| b.load(Relaxed)).collect(),
            count: self.count.load(Relaxed),
            sum: self.sum.load(Relaxed),
            max: self.max.load(Relaxed),
        }
    }
}

/// A copy of a histogram. `count` and the buckets are read one by one while writers go on, so
/// they may disagree by the few records recorded during the copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum: u64,
    pub max: u64,
}

impl HistogramSnapshot {
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// An upper bound of the `q`-quantile (`q` within 0..=1), capped at the largest value seen.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(bucket_high(i).min(self.max.max(bucket_low(i))));
            }
        }
        Some(self.max)
    }

    /// Non-empty buckets as `(low, high, count)`.
    pub fn nonzero(&self) -> Vec<(u64, u64, u64)> {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (bucket_low(i), bucket_high(i), n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_value_range() {
        assert_eq!(bucket_low(0), 0);
        for i in 0..BUCKETS - 1 {
            assert_eq!(bucket_high(i) + 1, bucket_low(i + 1), "bucket {i}");
            assert_eq!(bucket_of(bucket_low(i)), i);
            assert_eq!(bucket_of(bucket_high(i)), i);
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_within_a_quarter() {
        let h = AtomicHistogram::new();
        for v in 1..=10_000u64 {
            h.record_exclusive(v);
        }
        let s = h.snapshot();
        assert_eq!(s.count, 10_000);
        assert_eq!(s.max, 10_000);
        for (q, exact) in [(0.5, 5_000.0), (0.99, 9_900.0), (1.0, 10_000.0)] {
            let got = s.quantile(q).unwrap() as f64;
            assert!(got >= exact && got <= exact * 1.25, "q{q}: {got}");
        }
        assert_eq!(s.mean(), Some(5_000.5));
    }
}
