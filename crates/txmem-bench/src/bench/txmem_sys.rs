//! txmem as a [`Backend`]: words in a `TArray<u64>`, each body one
//! transaction run with the row's `TxOptions` (opacity mode, contention
//! policy). Rows: `txmem` (default TL2 opacity) and `txmem-<variant>`.

use txmem::{Abort, ContentionPolicy, Opacity, TArray, Transaction, TxOptions};

use crate::bench::mem::{Backend, Body, Conflict, Layout, Mem, Word};
use crate::bench::spec::{AbortCounting, Tally};

/// A txmem configuration that a row runs with.
#[derive(Clone, Debug)]
pub struct Variant {
    /// System name: `txmem` or `txmem-<variant>`.
    pub system: &'static str,
    pub opacity: Opacity,
}

/// The opacity variants every array-based suite runs.
pub const OPACITY_VARIANTS: [Variant; 3] = [
    Variant {
        system: "txmem",
        opacity: Opacity::Tl2,
    },
    Variant {
        system: "txmem-revalidate",
        opacity: Opacity::Revalidate,
    },
    Variant {
        system: "txmem-no-opacity",
        opacity: Opacity::None,
    },
];

/// The options of a variant under the run's contention policy.
pub fn options(variant: &Variant, policy: &ContentionPolicy) -> TxOptions {
    TxOptions::new()
        .opacity(variant.opacity)
        .contention(policy.clone())
}

pub struct TxmemWords {
    words: TArray<Word>,
    options: TxOptions,
}

impl TxmemWords {
    pub fn new(layout: &Layout, options: TxOptions) -> Self {
        let init = &layout.init;
        TxmemWords {
            words: TArray::from_fn(init.len(), |i| init[i]),
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
    #[inline]
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
}

impl Backend for TxmemWords {
    #[inline]
    fn atomic<B: Body>(&self, _tally: &mut Tally, body: &B) -> B::Out {
        let words = &self.words;
        self.options.run(|tx| {
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
