//! bayes: STAMP's Bayesian network structure learning.
//!
//! A generator builds a random Bayesian network over binary variables and
//! samples records from it ([`Dataset::generate`]). The learner starts from
//! the empty network and climbs: every variable has a task in a shared
//! queue; a thread takes the task for `v`, finds (outside transactions)
//! the parent whose insertion raises `v`'s local score most, and applies
//! it in a transaction that re-checks that the edge closes no cycle in the
//! current graph. The [`learn`] module's docs give the rule: a task ends
//! when no insertion gains more than [`EPSILON`] or `v` has the limit's
//! parents, `min(-n, -e)`.
//!
//! The score ([`Dataset::local_score`]) is the records' log-likelihood,
//! from counts over the records (no ADtree), minus `-i` times BIC's
//! complexity penalty.
//!
//! Variants: `seq` keeps bitmask sets in `Vec`s and tasks in a
//! `VecDeque`; `typed` keeps the sets and scores in `TArray`s and tasks in
//! a `TQueue` (the [`typed`] module says why); `words` keeps sorted
//! adjacency lists, scores and a ring-buffer queue in one `TWords` arena.
//! Tasks are served first in, first out, where STAMP orders them by gain,
//! so the networks learned may differ between variants and runs.
//!
//! Verification ([`verify`]): the network is acyclic, within the parent
//! limit, its child sets are its parent sets transposed, its recorded
//! score is the score recomputed from its structure, and that score is at
//! least the empty network's.

pub mod learn;
pub mod net;
pub mod typed;
pub mod words;

use crate::{timed, App, Input, Measured, Variant};
pub use learn::{best_insertion, learn_parallel, learn_seq, Shared, EPSILON};
pub use net::{descendants, gather, verify, Dataset, Learned, MAX_GENERATED_PARENTS, MAX_VARS};

/// The parameters of a bayes input, as STAMP's arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Number of variables (`-v`, at most [`MAX_VARS`]).
    pub vars: usize,
    /// Number of records (`-r`).
    pub records: usize,
    /// Most parents a variable has, generated or learned (`-n`).
    pub max_parents: usize,
    /// Percent chance that an earlier variable is a generated parent (`-p`).
    pub percent: u32,
    /// Multiplier of the score's complexity penalty (`-i`).
    pub insert_penalty: f64,
    /// Most edges learned into one variable (`-e`).
    pub max_learned: usize,
    /// Seed of the generator (`-s`).
    pub seed: u64,
}

impl Params {
    /// The inputs: `paper` is the STO thesis' `-v32 -r4096 -n10 -p40 -i2
    /// -e9 -s1`; `dev` is `-v12 -r512 -n4 -p40 -i2 -e4 -s1`.
    pub fn of(input: Input) -> Params {
        let (vars, records, max_parents, max_learned) = match input {
            Input::Paper => (32, 4096, 10, 9),
            Input::Dev => (12, 512, 4, 4),
        };
        Params {
            vars,
            records,
            max_parents,
            percent: 40,
            insert_penalty: 2.0,
            max_learned,
            seed: 1,
        }
    }

    /// The most parents a learned variable may have: both `-n` and `-e`
    /// bound it, since learning starts from no edges.
    pub fn limit(&self) -> usize {
        self.max_parents.min(self.max_learned)
    }
}

/// bayes with its records generated.
pub struct Bayes {
    params: Params,
    data: Dataset,
    /// The empty network's local scores (every run's starting point).
    empty: Vec<f64>,
}

impl Bayes {
    /// Generates the network and records of `params`.
    pub fn new(params: Params) -> Bayes {
        let data = Dataset::generate(
            params.vars,
            params.records,
            params.max_parents,
            params.percent,
            params.insert_penalty,
            params.seed,
        );
        let empty = (0..params.vars).map(|v| data.local_score(v, 0)).collect();
        Bayes {
            params,
            data,
            empty,
        }
    }

    /// The generated input.
    pub fn data(&self) -> &Dataset {
        &self.data
    }

    /// The empty network's score.
    pub fn empty_score(&self) -> f64 {
        self.empty.iter().sum()
    }

    /// Learns a network with `variant` on `threads` threads: the network
    /// and the measurement of the learning phase (unverified).
    pub fn learn(&self, variant: Variant, threads: usize) -> Result<(Learned, Measured), String> {
        let limit = self.params.limit();
        // Shared state is built (and the tasks queued) before measuring.
        Ok(match variant {
            Variant::Seq => timed(|| learn_seq(&self.data, &self.empty, limit)),
            Variant::Typed => {
                let shared = typed::Typed::new(&self.empty);
                let ((), m) = timed(|| learn_parallel(&shared, &self.data, limit, threads));
                (shared.learned(), m)
            }
            Variant::Words => {
                let shared = words::Words::new(&self.empty, limit, threads);
                let ((), m) = timed(|| learn_parallel(&shared, &self.data, limit, threads));
                (shared.learned(), m)
            }
            Variant::TypedPlus => return Err("bayes has no typed-plus variant".into()),
        })
    }
}

impl App for Bayes {
    fn name(&self) -> &'static str {
        "bayes"
    }

    fn variants(&self) -> &'static [Variant] {
        &[Variant::Seq, Variant::Typed, Variant::Words]
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let edges: u32 = self.data.parents.iter().map(|s| s.count_ones()).sum();
        format!(
            "-v{} -r{} -n{} -p{} -i{} -e{} -s{} (generating network: {edges} edges, score {:.1}; empty network {:.1})",
            p.vars,
            p.records,
            p.max_parents,
            p.percent,
            p.insert_penalty,
            p.max_learned,
            p.seed,
            self.data.score(&self.data.parents),
            self.empty_score()
        )
    }

    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String> {
        let (learned, measured) = self.learn(variant, threads)?;
        verify(
            &self.data,
            &learned,
            self.params.limit(),
            self.empty_score(),
        )?;
        Ok(measured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learning_improves_on_the_empty_network() {
        let app = Bayes::new(Params::of(Input::Dev));
        let (seq, _) = app.learn(Variant::Seq, 1).unwrap();
        assert!(seq.parents.iter().any(|&p| p != 0), "no edge learned");
        assert!(seq.score > app.empty_score() + 1.0);
        // One thread serves tasks in the same order as seq.
        for variant in [Variant::Typed, Variant::Words] {
            let (one, _) = app.learn(variant, 1).unwrap();
            assert_eq!(one.parents, seq.parents, "{variant}");
            assert_eq!(one.children, seq.children, "{variant}");
        }
    }

    /// Drives a fresh shared state by hand: edges 0 -> 1 -> 2 go in, and
    /// 2 -> 0, which closes a cycle, is refused with the task queued again.
    fn refuses_a_cycle<S: Shared>(app: &Bayes, shared: &S) {
        let data = app.data();
        let popped: Vec<usize> = std::iter::from_fn(|| shared.pop()).collect();
        assert_eq!(popped, (0..data.vars).collect::<Vec<_>>());
        let (s1, s2) = (data.local_score(1, 1), data.local_score(2, 2));
        assert!(shared.insert(0, 1, s1, false));
        assert!(shared.insert(1, 2, s2, true));
        assert_eq!(shared.pop(), Some(2));
        assert_eq!(shared.descendants(0), 0b110);
        assert!(!shared.insert(2, 0, 0.0, false), "2 -> 0 closes a cycle");
        assert_eq!(shared.pop(), Some(0), "the refused task is queued again");
        assert_eq!(shared.pop(), None);
        assert_eq!((shared.parents_now(2), shared.score_now(2)), (0b10, s2));
        assert_eq!(shared.score_now(0), app.empty[0]);
        let learned = shared.learned();
        assert_eq!(&learned.parents[..3], &[0, 0b1, 0b10]);
        assert_eq!(&learned.children[..3], &[0b10, 0b100, 0]);
        assert_eq!(verify(data, &learned, 2, f64::NEG_INFINITY), Ok(()));
    }

    #[test]
    fn transactional_insertions_refuse_cycles() {
        let app = Bayes::new(Params::of(Input::Dev));
        refuses_a_cycle(&app, &typed::Typed::new(&app.empty));
        refuses_a_cycle(&app, &words::Words::new(&app.empty, 2, 1));
    }

    #[test]
    fn a_larger_input_verifies_at_four_threads() {
        let app = Bayes::new(Params {
            vars: 40,
            records: 256,
            max_parents: 6,
            percent: 20,
            insert_penalty: 1.0,
            max_learned: 5,
            seed: 3,
        });
        for variant in [Variant::Typed, Variant::Words] {
            for _ in 0..3 {
                app.run(variant, 4)
                    .unwrap_or_else(|e| panic!("{variant} x4: {e}"));
            }
        }
    }

    #[test]
    fn verification_catches_a_broken_network() {
        let app = Bayes::new(Params::of(Input::Dev));
        let (data, limit, empty) = (app.data(), app.params.limit(), app.empty_score());
        let (good, _) = app.learn(Variant::Seq, 1).unwrap();
        assert_eq!(verify(data, &good, limit, empty), Ok(()));
        let with = |parents: Vec<u64>| {
            let children = (0..parents.len())
                .map(|u| {
                    (0..parents.len())
                        .filter(|&c| parents[c] & (1 << u) != 0)
                        .fold(0u64, |m, c| m | 1 << c)
                })
                .collect();
            Learned {
                score: data.score(&parents),
                parents,
                children,
            }
        };
        // A cycle 0 -> 1 -> 2 -> 0.
        let mut cyclic = vec![0u64; data.vars];
        (cyclic[1], cyclic[2], cyclic[0]) = (1 << 0, 1 << 1, 1 << 2);
        let err = verify(data, &with(cyclic), limit, f64::NEG_INFINITY).unwrap_err();
        assert!(err.contains("cycle"), "{err}");
        // Too many parents.
        let mut crowded = vec![0u64; data.vars];
        crowded[data.vars - 1] = (1 << (limit + 1)) - 1;
        let err = verify(data, &with(crowded), limit, f64::NEG_INFINITY).unwrap_err();
        assert!(err.contains("parents"), "{err}");
        // A wrong recorded score.
        let mut wrong = good.clone();
        wrong.score += 1.0;
        assert!(verify(data, &wrong, limit, empty).is_err());
        // Child sets that are not the parent sets' transpose.
        let mut untransposed = good.clone();
        untransposed.children[0] ^= 1 << 1;
        assert!(verify(data, &untransposed, limit, empty).is_err());
        // A self-loop.
        let mut looped = good.clone();
        looped.parents[3] |= 1 << 3;
        assert!(verify(data, &looped, limit, empty).is_err());
        // A network scoring below the empty one.
        let empty_net = with(vec![0; data.vars]);
        assert!(verify(data, &empty_net, limit, good.score).is_err());
    }

    #[test]
    fn the_generator_is_deterministic_and_acyclic() {
        let a = Dataset::generate(20, 300, 5, 40, 2.0, 7);
        assert_eq!(a, Dataset::generate(20, 300, 5, 40, 2.0, 7));
        assert_ne!(a.records, Dataset::generate(20, 300, 5, 40, 2.0, 8).records);
        assert_eq!(a.records.len(), 300);
        assert!(a.records.iter().all(|&r| r < 1 << 20));
        for (v, &p) in a.parents.iter().enumerate() {
            assert!(p < 1 << v, "variable {v} has a later parent");
            assert!(p.count_ones() <= 5);
            assert_eq!(a.tables[v].len(), 1 << p.count_ones());
        }
        assert!(a.parents.iter().any(|&p| p != 0));
    }

    #[test]
    fn gather_packs_selected_bits_in_order() {
        assert_eq!(gather(0b1011_0110, 0b1111_0000), 0b1011);
        assert_eq!(gather(0b1011_0110, 0b0100_0101), 0b010);
        assert_eq!(gather(u64::MAX, 0), 0);
    }
}
