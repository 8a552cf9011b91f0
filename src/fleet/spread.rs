//! How far apart the pods of a fleet are, window by window: the lowest, median and highest hit rate among the
//! pods that had lookups in each of the fleet's timeline windows (a replicated fleet's pods agree; a sharded
//! one's pods differ by how popular their entities are). Memory: one pair of counters per pod, three numbers
//! per window.
//!
//! A fleet that runs only some of its pods cannot say the fleet's median: it keeps every window's pairs of
//! counters of its pods instead (`recording`; memory: 16 bytes per pod and window), and the parts' pairs
//! together give the whole fleet's spread, by the same `summary` (`window_spread`, for the bindings).

#[derive(Default)]
pub struct Spread {
    /// Each pod's (hits, lookups) in the open window.
    open: Vec<(u64, u64)>,
    windows: Vec<[f32; 3]>,
    /// With `recording`: each closed window's pairs of counters.
    history: Option<Vec<Vec<(u64, u64)>>>,
}

impl Spread {
    pub fn lookups(&mut self, pod: usize, n: u64) {
        self.pod(pod).1 += n;
    }

    pub fn hits(&mut self, pod: usize, n: u64) {
        self.pod(pod).0 += n;
    }

    fn pod(&mut self, pod: usize) -> &mut (u64, u64) {
        if self.open.len() <= pod {
            self.open.resize(pod + 1, (0, 0));
        }
        &mut self.open[pod]
    }

    pub fn recording() -> Spread {
        Spread { history: Some(Vec::new()), ..Spread::default() }
    }

    pub fn close_window(&mut self) {
        let w = Self::summary(&self.open);
        self.windows.push(w);
        if let Some(history) = self.history.as_mut() {
            history.push(self.open.clone());
        }
        self.open.iter_mut().for_each(|p| *p = (0, 0));
    }

    /// [min, median, max] per window, the open window's included if a pod had lookups in it.
    pub fn windows(&self) -> Vec<[f32; 3]> {
        let mut w = self.windows.clone();
        if self.open.iter().any(|p| p.1 > 0) {
            w.push(Self::summary(&self.open));
        }
        w
    }

    /// With `recording`: each closed window's (hits, lookups) of every pod, then the open window's (all
    /// zeros if none), `pods` pairs a window.
    pub fn pod_windows(&self, pods: usize) -> Option<Vec<Vec<(u64, u64)>>> {
        let history = self.history.as_ref()?;
        let rows = history.iter().chain(std::iter::once(&self.open));
        Some(rows.map(|w| (0..pods).map(|p| w.get(p).copied().unwrap_or((0, 0))).collect()).collect())
    }

    /// [min, median, max] of the hit rates of the pods (hits, lookups) that had lookups; NaN when none had.
    pub fn summary(pods: &[(u64, u64)]) -> [f32; 3] {
        let mut rates: Vec<f64> = pods.iter().filter(|p| p.1 > 0).map(|&(h, l)| h as f64 / l as f64).collect();
        if rates.is_empty() {
            return [f32::NAN; 3];
        }
        rates.sort_by(f64::total_cmp);
        let n = rates.len();
        let median = if n % 2 == 1 { rates[n / 2] } else { (rates[n / 2 - 1] + rates[n / 2]) / 2.0 };
        [rates[0] as f32, median as f32, rates[n - 1] as f32]
    }
}

#[cfg(test)]
mod tests {
    use super::Spread;

    #[test]
    fn pods_without_lookups_are_left_out() {
        let mut s = Spread::default();
        s.lookups(0, 4);
        s.hits(0, 1);
        s.lookups(2, 2);
        s.hits(2, 2);
        s.lookups(3, 4);
        s.hits(3, 2);
        s.close_window();
        s.lookups(1, 1);
        assert_eq!(s.windows(), vec![[0.25, 0.5, 1.0], [0.0, 0.0, 0.0]]);
    }
}
