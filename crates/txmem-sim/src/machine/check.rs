//! Invariant checks (with `check_invariants`): coherence, committed values, and the
//! transactional single-writer rule.

use super::*;

/// Checks that `core` loaded from word `w` the last committed value `c[w]`.
pub(super) fn committed_value(c: &[u64], core: usize, w: usize, v: u64) {
    assert_eq!(
        v,
        c[w],
        "invariant violated: core {core} loaded {v} from {:#x} but the last committed store wrote {}",
        w * 8,
        c[w]
    );
}

impl Machine {
    pub(super) fn check_committed(&self, core: usize, w: usize, v: u64) {
        if let Some(c) = &self.committed {
            committed_value(c, core, w, v);
        }
    }

    pub(super) fn check_after_access(&self, core: usize, line: u64) {
        if let Err(e) = self.hier.check_line(line) {
            panic!("coherence invariant violated after an access by core {core}: {e}");
        }
    }

    /// Coherence checks after an access to `line` that evicted `r.evicted`.
    #[inline(never)]
    pub(super) fn check_access(&self, core: usize, line: u64, r: &AccessResult) {
        self.check_after_access(core, line);
        for k in 0..r.n_evicted {
            self.check_after_access(core, r.evicted[k]);
        }
        if r.recalled {
            for &(v, _) in &self.hier.recalls {
                self.check_after_access(core, v);
            }
        }
    }

    /// Transactional single-writer invariant for one word (eager detection): at most one
    /// live frame writes it, and then no other live frame reads it.
    pub(super) fn check_tx_word(&self, word: u64, line: u64) {
        let wg = self.cfg.htm.granularity == crate::config::Granularity::Word;
        let (mut writers, mut readers) = (0, 0);
        for s in &self.htm.stacks {
            for f in s.iter().filter(|f| !f.marker && f.doomed.is_none()) {
                let flags = if wg {
                    f.word_flags(word)
                } else {
                    f.line_flags(line)
                };
                let (wr, rd) = (flags & WRITE != 0, flags & READ != 0);
                if wr {
                    writers += 1;
                } else if rd {
                    readers += 1;
                }
            }
        }
        assert!(
            writers <= 1 && (writers == 0 || readers == 0),
            "transactional invariant violated at word {:#x}: {writers} writers and {readers} other readers",
            word * 8
        );
    }

    /// Full invariant check (every line in a private cache).
    pub fn check_all(&self) -> Result<(), String> {
        for line in self.hier.private_lines() {
            self.hier.check_line(line)?;
        }
        Ok(())
    }
}
