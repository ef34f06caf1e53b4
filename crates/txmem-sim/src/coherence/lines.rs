//! The MESI state of every line across the cores, shared by the protocols: which cores hold
//! it, which one owns it (E or M), and whether that copy is dirty. A protocol decides what a
//! request costs and which copies go; this table applies the resulting transition.

use super::LineState;

/// No core owns the line.
const NO_OWNER: u8 = u8::MAX;

/// Coherence state of one line across all cores.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line {
    /// Cores holding a valid copy.
    pub holders: u64,
    /// The core holding it in E or M, or `NO_OWNER`.
    owner: u8,
    /// Whether the owner's copy is Modified.
    pub dirty: bool,
}

impl Line {
    /// The owning core (E or M) other than `core`, if any.
    pub fn owner_other_than(&self, core: usize) -> Option<usize> {
        (self.owner != NO_OWNER && self.owner as usize != core).then_some(self.owner as usize)
    }
}

/// What dropping a copy found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// The core held no copy.
    Absent,
    /// A clean copy (S or E).
    Clean,
    /// The Modified copy: its data must be written back.
    Dirty,
}

/// The state of every line.
#[derive(Debug)]
pub(crate) struct LineTable {
    cores: usize,
    lines: Vec<Line>,
}

impl LineTable {
    /// Every one of `lines` lines invalid in all of `cores` cores.
    pub fn new(cores: usize, lines: usize) -> Self {
        let free = Line {
            holders: 0,
            owner: NO_OWNER,
            dirty: false,
        };
        LineTable {
            cores,
            lines: vec![free; lines],
        }
    }

    /// The line's state.
    #[inline]
    pub fn get(&self, line: u64) -> Line {
        self.lines[line as usize]
    }

    /// `core`'s state of `line`.
    #[inline]
    pub fn state(&self, core: usize, line: u64) -> LineState {
        let l = &self.lines[line as usize];
        if l.holders & (1 << core) == 0 {
            LineState::Invalid
        } else if l.owner as usize == core {
            if l.dirty {
                LineState::Modified
            } else {
                LineState::Exclusive
            }
        } else {
            LineState::Shared
        }
    }

    /// `core` gets a readable copy: Exclusive if no other core holds one, else Shared (and
    /// any owner drops to Shared). Returns the state granted.
    pub fn grant_read(&mut self, core: usize, line: u64) -> LineState {
        let l = &mut self.lines[line as usize];
        let me = 1u64 << core;
        let granted = if l.holders & !me == 0 {
            l.owner = core as u8;
            LineState::Exclusive
        } else {
            l.owner = NO_OWNER;
            LineState::Shared
        };
        l.dirty = false;
        l.holders |= me;
        granted
    }

    /// `core` gets the only copy, Modified.
    pub fn grant_write(&mut self, core: usize, line: u64) {
        let l = &mut self.lines[line as usize];
        l.holders = 1u64 << core;
        l.owner = core as u8;
        l.dirty = true;
    }

    /// A store hit `core`'s Exclusive copy: it becomes Modified.
    pub fn silent_upgrade(&mut self, core: usize, line: u64) {
        let l = &mut self.lines[line as usize];
        debug_assert_eq!(l.owner as usize, core);
        l.dirty = true;
    }

    /// `core` drops its copy.
    pub fn drop_copy(&mut self, core: usize, line: u64) -> Dropped {
        let l = &mut self.lines[line as usize];
        let me = 1u64 << core;
        if l.holders & me == 0 {
            return Dropped::Absent;
        }
        l.holders &= !me;
        if l.owner as usize == core {
            l.owner = NO_OWNER;
            let dirty = std::mem::take(&mut l.dirty);
            if dirty {
                return Dropped::Dirty;
            }
        }
        Dropped::Clean
    }

    /// Every copy goes: returns who held one and whether the owner's was dirty.
    pub fn drop_all(&mut self, line: u64) -> (u64, bool) {
        let l = &mut self.lines[line as usize];
        let out = (l.holders, l.dirty);
        l.holders = 0;
        l.owner = NO_OWNER;
        l.dirty = false;
        out
    }

    /// At most one writer, or any number of readers; no core that does not exist.
    pub fn check(&self, line: u64) -> Result<(), String> {
        let l = &self.lines[line as usize];
        if l.owner != NO_OWNER {
            let o = l.owner as usize;
            if l.holders != 1u64 << o {
                return Err(format!(
                    "line {line}: core {o} holds it in {} but holder mask is {:#b}",
                    if l.dirty { "M" } else { "E" },
                    l.holders
                ));
            }
        } else if l.dirty {
            return Err(format!("line {line}: dirty without an owner"));
        }
        if self.cores < 64 && l.holders >> self.cores != 0 {
            return Err(format!(
                "line {line}: holder mask {:#b} names a core that does not exist",
                l.holders
            ));
        }
        Ok(())
    }
}
