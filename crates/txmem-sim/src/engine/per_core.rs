//! [`PerCore`]: one value per simulated core, indexed without bounds checks.

use crate::config::MAX_CPUS;
use std::ops::{Index, IndexMut};

/// One value per simulated core (`len` of them), in an array sized for the largest machine
/// ([`MAX_CPUS`]) so that indexing by a core number needs no bounds check: the index is
/// masked to the array instead. Core numbers are validated where they enter the simulator,
/// and debug builds check them again here. Iteration covers the machine's cores only.
#[derive(Clone, Debug)]
pub struct PerCore<T> {
    items: Box<[T; MAX_CPUS]>,
    len: usize,
}

impl<T> PerCore<T> {
    /// Values for `len` cores (1..=[`MAX_CPUS`]): `make(c)` for core `c`. The array's
    /// spare slots (never used) are filled with `spare()`, which should be cheap.
    pub fn new(len: usize, mut make: impl FnMut(usize) -> T, spare: impl Fn() -> T) -> Self {
        assert!(
            (1..=MAX_CPUS).contains(&len),
            "CPUs must be in 1..={MAX_CPUS} (got {len})"
        );
        let items: Box<[T]> = (0..MAX_CPUS)
            .map(|c| if c < len { make(c) } else { spare() })
            .collect();
        let Ok(items) = items.try_into() else {
            unreachable!("MAX_CPUS items were collected")
        };
        PerCore { items, len }
    }

    /// Number of cores.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no cores (never: a machine has at least one).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values of the machine's cores, core 0 first.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items[..self.len].iter()
    }

    /// The values of the machine's cores, mutably.
    #[inline]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items[..self.len].iter_mut()
    }

    /// The values of cores `a` and `b` (different), mutably.
    #[inline]
    pub fn pair_mut(&mut self, a: usize, b: usize) -> (&mut T, &mut T) {
        debug_assert!(a < self.len && b < self.len);
        let [x, y] = self
            .items
            .get_disjoint_mut([a % MAX_CPUS, b % MAX_CPUS])
            .expect("two different cores");
        (x, y)
    }
}

impl<T> Index<usize> for PerCore<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, core: usize) -> &T {
        debug_assert!(core < self.len, "core {core} of {}", self.len);
        &self.items[core % MAX_CPUS]
    }
}

impl<T> IndexMut<usize> for PerCore<T> {
    #[inline(always)]
    fn index_mut(&mut self, core: usize) -> &mut T {
        debug_assert!(core < self.len, "core {core} of {}", self.len);
        &mut self.items[core % MAX_CPUS]
    }
}

impl<'a, T> IntoIterator for &'a PerCore<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
