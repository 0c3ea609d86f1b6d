//! A disk's recent device-time distribution, kept by the agent from the kernel's
//! interval histograms: it sets the disk's outlier threshold and tells when the disk's
//! latency shape shifts (which starts a flight recording of every I/O).

use crate::iotrace::MAX_SLOTS;

/// Weight an interval keeps per following interval: with 1 s intervals, the distribution
/// has a half-life of about 34 s.
const DECAY: f64 = 0.98;
/// I/Os (decayed) a distribution needs before it sets a threshold or judges a shift.
const MIN_HISTORY: f64 = 1000.0;
/// I/Os an interval needs before its shape is compared.
const MIN_INTERVAL: u64 = 32;
/// A shift of the median or the 90th percentile by this many log2 buckets (4x).
const SHIFT_BUCKETS: usize = 2;

#[derive(Debug, Clone)]
pub struct RecentLatency {
    weights: [f64; MAX_SLOTS],
    total: f64,
}

impl Default for RecentLatency {
    fn default() -> Self {
        RecentLatency { weights: [0.0; MAX_SLOTS], total: 0.0 }
    }
}

impl RecentLatency {
    /// Adds one interval's device-time buckets; true if its shape shifted from the
    /// recent distribution before it.
    pub fn add_interval(&mut self, buckets: &[u64]) -> bool {
        let count: u64 = buckets.iter().sum();
        let shifted = self.total >= MIN_HISTORY && count >= MIN_INTERVAL && {
            let interval: Vec<f64> = buckets.iter().map(|&n| n as f64).collect();
            [0.5, 0.9].iter().any(|&q| {
                let before = quantile_bucket(&self.weights, self.total, q);
                let now = quantile_bucket(&interval, count as f64, q);
                before.abs_diff(now) >= SHIFT_BUCKETS
            })
        };
        for weight in &mut self.weights {
            *weight *= DECAY;
        }
        for (weight, &n) in self.weights.iter_mut().zip(buckets) {
            *weight += n as f64;
        }
        self.total = self.total * DECAY + count as f64;
        shifted
    }

    /// Device time above which an I/O is an outlier: the upper edge of the bucket that
    /// holds the `quantile` of the recent distribution. None until there is history.
    pub fn outlier_threshold_ns(&self, quantile: f64) -> Option<u64> {
        if self.total < MIN_HISTORY {
            return None;
        }
        let bucket = quantile_bucket(&self.weights, self.total, quantile);
        Some((1u64 << (bucket + 1)) * 1000)
    }
}

/// The log2 bucket that holds the `q` quantile of `weights` (summing to `total`).
fn quantile_bucket(weights: &[f64], total: f64, q: f64) -> usize {
    let wanted = total * q;
    let mut seen = 0.0;
    for (bucket, weight) in weights.iter().enumerate() {
        seen += weight;
        if seen >= wanted && *weight > 0.0 {
            return bucket;
        }
    }
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(bucket: usize, count: u64) -> Vec<u64> {
        let mut buckets = vec![0; bucket + 1];
        buckets[bucket] = count;
        buckets
    }

    #[test]
    fn no_threshold_without_history() {
        let mut recent = RecentLatency::default();
        recent.add_interval(&interval(8, 500));
        assert_eq!(recent.outlier_threshold_ns(0.999), None);
    }

    #[test]
    fn threshold_is_the_upper_edge_of_the_quantile_bucket() {
        let mut recent = RecentLatency::default();
        let mut buckets = interval(8, 9_990); // 256-511 us
        buckets.resize(12, 0);
        buckets[11] = 10; // 2-4 ms: 0.1%
        recent.add_interval(&buckets);
        assert_eq!(recent.outlier_threshold_ns(0.99), Some(512_000));
        assert_eq!(recent.outlier_threshold_ns(0.9995), Some(4_096_000));
    }

    #[test]
    fn a_steady_disk_does_not_shift() {
        let mut recent = RecentLatency::default();
        for _ in 0..20 {
            assert!(!recent.add_interval(&interval(8, 2000)));
        }
        assert!(!recent.add_interval(&interval(9, 2000)), "one bucket is within noise");
    }

    #[test]
    fn a_fourfold_slowdown_or_a_new_slow_mode_is_a_shift() {
        let mut recent = RecentLatency::default();
        for _ in 0..20 {
            recent.add_interval(&interval(8, 2000));
        }
        assert!(recent.clone().add_interval(&interval(10, 2000)));
        let mut bimodal = interval(13, 300); // 15% of I/Os now 8-16 ms: moves the p90
        bimodal[8] = 1700;
        assert!(recent.clone().add_interval(&bimodal));
        assert!(!recent.add_interval(&interval(10, 10)), "too few I/Os to judge");
    }
}
