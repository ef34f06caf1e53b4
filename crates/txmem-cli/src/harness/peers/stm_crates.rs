//! The `fast-stm` and `stm` crates as [`Backend`]s: one `TVar<u64>` per
//! word. Both crates have the same API (fast-stm is a fork of stm), so one
//! macro writes both adapters.
//!
//! Neither crate exposes abort counts without a feature flag, so the
//! adapter counts closure invocations: aborts = attempts - commits. Neither
//! guarantees opacity, so the workload bodies check their own invariants
//! (e.g. strictly increasing links) and restart on an inconsistent read.

use std::cell::Cell;

use crate::harness::mem::{Backend, Body, Conflict, Layout, Mem, Word};
use crate::harness::spec::{AbortCounting, Tally};

macro_rules! stm_backend {
    ($name:ident, $krate:ident, $system:literal) => {
        #[doc = concat!("The `", $system, "` crate over one `TVar<u64>` per word.")]
        pub struct $name {
            vars: Vec<$krate::TVar<Word>>,
        }

        impl $name {
            /// One variable per word of `layout`, with its initial value.
            pub fn new(layout: &Layout) -> Self {
                $name {
                    vars: layout.init.iter().map(|&w| $krate::TVar::new(w)).collect(),
                }
            }
        }

        impl Backend for $name {
            #[inline]
            fn atomic<B: Body>(&self, tally: &mut Tally, body: &B) -> B::Out {
                struct M<'a> {
                    tx: &'a mut $krate::Transaction,
                    vars: &'a [$krate::TVar<Word>],
                    err: Option<$krate::StmError>,
                }
                impl Mem for M<'_> {
                    #[inline]
                    fn read(&mut self, i: usize) -> Result<Word, Conflict> {
                        self.vars[i].read(self.tx).map_err(|e| {
                            self.err = Some(e);
                            Conflict
                        })
                    }
                    #[inline]
                    fn write(&mut self, i: usize, v: Word) -> Result<(), Conflict> {
                        self.vars[i].write(self.tx, v).map_err(|e| {
                            self.err = Some(e);
                            Conflict
                        })
                    }
                }
                let attempts = Cell::new(0u64);
                let out = $krate::atomically(|tx| {
                    attempts.set(attempts.get() + 1);
                    let mut m = M {
                        tx,
                        vars: &self.vars,
                        err: None,
                    };
                    body.run(&mut m)
                        .map_err(|Conflict| m.err.unwrap_or($krate::StmError::Failure))
                });
                tally.attempts += attempts.get();
                out
            }
            fn load(&self, i: usize) -> Word {
                self.vars[i].read_atomic()
            }
            fn abort_counting(&self) -> AbortCounting {
                AbortCounting::Attempts
            }
        }
    };
}

stm_backend!(FastStm, fast_stm, "fast-stm");
stm_backend!(StmCrate, stm, "stm");
