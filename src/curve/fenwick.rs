//! A Fenwick (binary indexed) tree of sums over positions: point updates and prefix sums in O(log n), built
//! from a column of values in O(n). Positions are 0-based.

pub struct Fenwick {
    tree: Vec<u64>,
    total: u64,
}

impl Fenwick {
    /// The tree over `values` (its length is the tree's size).
    pub fn from_values(values: impl IntoIterator<Item = u64>) -> Fenwick {
        let mut tree: Vec<u64> = std::iter::once(0).chain(values).collect();
        let n = tree.len();
        for i in 1..n {
            let j = i + (i & i.wrapping_neg());
            if j < n {
                tree[j] += tree[i];
            }
        }
        let mut f = Fenwick { tree, total: 0 };
        if f.len() > 0 {
            f.total = f.prefix(f.len() - 1);
        }
        f
    }

    pub fn len(&self) -> usize {
        self.tree.len() - 1
    }

    pub fn add(&mut self, pos: usize, value: u64) {
        self.total += value;
        let mut i = pos + 1;
        while i < self.tree.len() {
            self.tree[i] += value;
            i += i & i.wrapping_neg();
        }
    }

    pub fn sub(&mut self, pos: usize, value: u64) {
        self.total -= value;
        let mut i = pos + 1;
        while i < self.tree.len() {
            self.tree[i] -= value;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum of positions `0..=pos`.
    pub fn prefix(&self, pos: usize) -> u64 {
        let mut sum = 0;
        let mut i = pos + 1;
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }

    /// Sum of the positions after `pos`.
    pub fn after(&self, pos: usize) -> u64 {
        self.total - self.prefix(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_sums_match_a_plain_sum() {
        let values: Vec<u64> = (0..1000u64).map(|i| crate::hash::mix64(i) % 7).collect();
        let mut f = Fenwick::from_values(values.iter().copied());
        let mut plain = values.clone();
        for step in 0..2000u64 {
            let pos = (crate::hash::mix64(step + 7) % 1000) as usize;
            if step % 3 == 0 && plain[pos] > 0 {
                f.sub(pos, 1);
                plain[pos] -= 1;
            } else {
                f.add(pos, 2);
                plain[pos] += 2;
            }
            let q = (crate::hash::mix64(step + 99) % 1000) as usize;
            assert_eq!(f.prefix(q), plain[..=q].iter().sum::<u64>());
            assert_eq!(f.after(q), plain[q + 1..].iter().sum::<u64>());
        }
        assert_eq!(f.prefix(999), plain.iter().sum::<u64>());
    }
}
