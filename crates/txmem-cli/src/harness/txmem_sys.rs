//! txmem as a [`Backend`]: words in a typed `TArray<u64>` (one subobject
//! per element) or in the untyped word STM `TWords` (versioned lock
//! stripes, as in TL2), each body one transaction run with the row's
//! `TxOptions` (opacity mode, contention policy).

use txmem::{Abort, ContentionPolicy, Opacity, TArray, TWords, Transaction, TxOptions, WordAddr};

use crate::harness::mem::{Backend, Body, Conflict, Layout, Mem, Word};
use crate::harness::spec::{AbortCounting, Tally};
use crate::harness::system::System;

/// Where a word workload keeps its words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// `TArray<u64>`: typed, one version per element.
    TArray,
    /// `TWords`: untyped words guarded by hashed lock stripes.
    TWords,
}

/// A txmem configuration that a row runs with.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The row's system.
    pub system: System,
    /// Opacity mode of its transactions.
    pub opacity: Opacity,
    /// Where a word workload keeps its words.
    pub store: Store,
}

impl Variant {
    /// The variant of `system` with TL2 opacity over `store`.
    pub fn tl2(system: System, store: Store) -> Variant {
        Variant {
            system,
            opacity: Opacity::Tl2,
            store,
        }
    }

    /// The row's note: store and opacity mode.
    pub fn note(&self) -> String {
        let store = match self.store {
            Store::TArray => "TArray<u64>",
            Store::TWords => "TWords (untyped)",
        };
        format!("txmem {store}, opacity {}", self.opacity.name())
    }
}

/// txmem's opacity variants of the family `base` (`txmem` or
/// `txmem-tarray`): TL2, revalidation (not in the quick suite) and none.
pub fn opacity_variants(base: System, store: Store, quick: bool) -> Vec<Variant> {
    let modes: &[Opacity] = if quick {
        &[Opacity::Tl2, Opacity::None]
    } else {
        &[Opacity::Tl2, Opacity::Revalidate, Opacity::None]
    };
    modes
        .iter()
        .map(|&opacity| Variant {
            system: base.with_opacity(opacity),
            opacity,
            store,
        })
        .collect()
}

/// The options of a variant under the run's contention policy.
pub fn options(variant: &Variant, policy: &ContentionPolicy) -> TxOptions {
    TxOptions::new()
        .opacity(variant.opacity)
        .contention(*policy)
}

/// The options a body runs with: the row's, declared read-only for a body
/// that only reads (as the C peers declare their read-only transactions).
#[inline]
fn options_for<B: Body>(options: &TxOptions, body: &B) -> TxOptions {
    options.read_only(body.read_only())
}

/// Words in a typed `TArray<u64>`, one subobject per word.
pub struct TxmemArray {
    words: TArray<Word>,
    options: TxOptions,
}

impl TxmemArray {
    /// The words of `layout`, each operation run with `options`.
    pub fn new(layout: &Layout, options: TxOptions) -> Self {
        let init = &layout.init;
        let words = TArray::from_fn(init.len(), |i| init[i]);
        TxmemArray {
            words: if layout.snapshot_history {
                words.with_snapshot_history()
            } else {
                words
            },
            options,
        }
    }
}

/// [`Mem`] over a running transaction; keeps the runtime's abort so it can
/// travel back out with its cause.
struct TxMem<'a, 'env> {
    tx: &'a mut Transaction<'env>,
    words: &'env TArray<Word>,
    abort: Option<Abort>,
}

impl Mem for TxMem<'_, '_> {
    #[inline(always)]
    fn read(&mut self, i: usize) -> Result<Word, Conflict> {
        self.words.get(self.tx, i).map_err(|e| {
            self.abort = Some(e);
            Conflict
        })
    }
    #[inline]
    fn write(&mut self, i: usize, v: Word) -> Result<(), Conflict> {
        self.words.set(self.tx, i, v).map_err(|e| {
            self.abort = Some(e);
            Conflict
        })
    }
    #[inline]
    fn sum(&mut self, range: std::ops::Range<usize>) -> Result<Word, Conflict> {
        self.words
            .fold(self.tx, range, 0, |s: Word, &v| s.wrapping_add(v))
            .map_err(|e| {
                self.abort = Some(e);
                Conflict
            })
    }
}

impl Backend for TxmemArray {
    #[inline]
    fn atomic<B: Body>(&self, tally: &mut Tally, body: &B) -> B::Out {
        let words = &self.words;
        options_for(&self.options, body).run(|tx| {
            // (Counted for per-kind aborts; the row's aborts come from
            // txmem's statistics.)
            tally.attempts += 1;
            let mut m = TxMem {
                tx,
                words,
                abort: None,
            };
            match body.run(&mut m) {
                Ok(v) => Ok(v),
                // The body saw an inconsistent state on its own (possible
                // without opacity): abort explicitly so the runtime retries.
                Err(Conflict) => Err(m.abort.take().unwrap_or_else(|| m.tx.abort())),
            }
        })
    }
    fn load(&self, i: usize) -> Word {
        self.words.load(i)
    }
    fn abort_counting(&self) -> AbortCounting {
        AbortCounting::TxmemStats
    }
}

/// Words in txmem's untyped `TWords` arena.
pub struct TxmemUntyped {
    words: TWords,
    base: WordAddr,
    options: TxOptions,
}

impl TxmemUntyped {
    /// The words of `layout`, each operation run with `options`.
    pub fn new(layout: &Layout, options: TxOptions) -> Self {
        let init = &layout.init;
        let words = TWords::new(init.len());
        let base = words.alloc(init.len());
        // The arena starts zeroed; write the other initial words in
        // modest transactions (setup, untimed).
        let nonzero: Vec<usize> = (0..init.len()).filter(|&i| init[i] != 0).collect();
        for chunk in nonzero.chunks(256) {
            options.run(|tx| {
                for &i in chunk {
                    words.write(tx, base.offset(i), init[i])?;
                }
                Ok(())
            });
        }
        TxmemUntyped {
            words,
            base,
            options,
        }
    }
}

struct UntypedMem<'a, 'env> {
    tx: &'a mut Transaction<'env>,
    words: &'env TWords,
    base: WordAddr,
    abort: Option<Abort>,
}

impl Mem for UntypedMem<'_, '_> {
    #[inline]
    fn read(&mut self, i: usize) -> Result<Word, Conflict> {
        self.words.read(self.tx, self.base.offset(i)).map_err(|e| {
            self.abort = Some(e);
            Conflict
        })
    }
    #[inline]
    fn write(&mut self, i: usize, v: Word) -> Result<(), Conflict> {
        self.words
            .write(self.tx, self.base.offset(i), v)
            .map_err(|e| {
                self.abort = Some(e);
                Conflict
            })
    }
}

impl Backend for TxmemUntyped {
    #[inline]
    fn atomic<B: Body>(&self, tally: &mut Tally, body: &B) -> B::Out {
        let (words, base) = (&self.words, self.base);
        options_for(&self.options, body).run(|tx| {
            tally.attempts += 1;
            let mut m = UntypedMem {
                tx,
                words,
                base,
                abort: None,
            };
            match body.run(&mut m) {
                Ok(v) => Ok(v),
                Err(Conflict) => Err(m.abort.take().unwrap_or_else(|| m.tx.abort())),
            }
        })
    }
    fn load(&self, i: usize) -> Word {
        self.words.load(self.base.offset(i))
    }
    fn abort_counting(&self) -> AbortCounting {
        AbortCounting::TxmemStats
    }
}
