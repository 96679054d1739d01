//! Latency percentiles from an HdrHistogram.

use hdrhistogram::Histogram;
use std::time::Duration;

/// Per-commit latency percentiles, in microseconds (HdrHistogram with 3 significant digits:
/// each percentile is within 0.1% of an observed latency; `max_us` is exact).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Number of commits.
    pub count: u64,
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// The largest latency.
    pub max_us: u64,
    /// The mean.
    pub mean_us: u64,
}

impl Summary {
    /// The percentiles of `latencies` (each counted as at least 1 µs).
    pub fn of(latencies: &[Duration]) -> Summary {
        let mut h = Histogram::<u64>::new(3).expect("3 significant digits are supported");
        let micros = |l: &Duration| u64::try_from(l.as_micros()).unwrap_or(u64::MAX).max(1);
        for l in latencies {
            // `new` auto-resizes; only a value past what a usize can index is clamped.
            if h.record(micros(l)).is_err() {
                h.saturating_record(micros(l));
            }
        }
        if latencies.is_empty() {
            return Summary::default();
        }
        let max_us = latencies.iter().map(micros).max().unwrap_or(0);
        // A bucket's highest equivalent value can pass the exact maximum by < 0.1%.
        let at = |q: f64| h.value_at_quantile(q).min(max_us);
        Summary {
            count: h.len(),
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us,
            mean_us: h.mean().round() as u64,
        }
    }

    /// `(label, value)` of p50, p90, p99 and p99.9, the percentiles the plots show.
    pub fn percentiles(&self) -> [(&'static str, u64); 4] {
        [
            ("p50", self.p50_us),
            ("p90", self.p90_us),
            ("p99", self.p99_us),
            ("p99.9", self.p999_us),
        ]
    }
}
