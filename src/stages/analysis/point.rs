//! One point of a table: a parameter value and every variant's boots.

/// The measured (non-warm-up) values of one point, per variant, grouped by boot.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub param: u64,
    pub unit: String,
    pub higher_is_better: bool,
    /// One entry per variant of the run, baseline first; each a list of
    /// boots, each boot its values in iteration order.
    pub sides: Vec<Vec<Vec<f64>>>,
}

impl Point {
    /// Every value of variant `side`, boot after boot.
    pub fn values(&self, side: usize) -> impl Iterator<Item = f64> + '_ {
        self.sides
            .get(side)
            .into_iter()
            .flatten()
            .flatten()
            .copied()
    }
    pub fn n(&self, side: usize) -> usize {
        self.values(side).count()
    }
    pub fn mean(&self, side: usize) -> f64 {
        let n = self.n(side);
        if n == 0 {
            f64::NAN
        } else {
            self.values(side).sum::<f64>() / n as f64
        }
    }
    /// Sample standard deviation over all values of a side (NaN below two).
    pub fn sd(&self, side: usize) -> f64 {
        let n = self.n(side);
        if n < 2 {
            return f64::NAN;
        }
        let m = self.mean(side);
        (self.values(side).map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
    /// The mean of each non-empty boot of a side.
    pub fn boot_means(&self, side: usize) -> Vec<f64> {
        self.sides
            .get(side)
            .into_iter()
            .flatten()
            .filter(|b| !b.is_empty())
            .map(|b| b.iter().sum::<f64>() / b.len() as f64)
            .collect()
    }
}
