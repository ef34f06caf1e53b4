//! Suspended transactions: MetaTM `xpush`/`xpop` (independent transactions managed as a LIFO
//! stack per core) and POWER8 `tsuspend`/`tresume`.

use super::{AbortStatus, Htm, SuspendKind};

/// What `xpush` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// The active transaction (frame index) is suspended.
    Suspended(usize),
    /// No transaction was active; a marker was pushed for the matching `xpop`.
    Marker,
}

/// What resuming (`xpop` or `tresume`) found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resumed {
    /// Nothing to resume (a marker was popped, or `tresume` with nothing suspended).
    Nothing,
    /// Frame `idx` runs again.
    Running(usize),
    /// Frame `idx` lost a conflict while suspended and must now abort with this status.
    Doomed(usize, AbortStatus),
}

impl Htm {
    /// Number of suspended frames and markers on `core`.
    pub fn suspended_count(&self, core: usize) -> usize {
        self.stacks[core]
            .iter()
            .filter(|f| f.marker || f.suspended.is_some())
            .count()
    }

    /// `xpush`: suspends the active transaction or pushes a marker.
    pub fn xpush(&mut self, core: usize) -> Pushed {
        match self.active(core) {
            Some(idx) => {
                self.stacks[core][idx].suspended = Some(SuspendKind::Xpush);
                Pushed::Suspended(idx)
            }
            None => {
                let idx = self.push_frame(core);
                self.stacks[core][idx].marker = true;
                Pushed::Marker
            }
        }
    }

    /// `xpop`: resumes the most recently pushed entry. Errors when the top of the stack is
    /// not an `xpush` entry (unbalanced `xpush`/`xpop`, or a transaction still running).
    pub fn xpop(&mut self, core: usize) -> Result<Resumed, String> {
        let Some(top) = self.stacks[core].last() else {
            return Err(format!("xpop on core {core} without a matching xpush"));
        };
        let idx = self.stacks[core].len() - 1;
        if top.marker {
            self.pop_frame(core, idx);
            return Ok(Resumed::Nothing);
        }
        if top.suspended != Some(SuspendKind::Xpush) {
            return Err(format!(
                "xpop on core {core} while a transaction started after the xpush is still running \
                 (xpush/xpop must be balanced around whole transactions)"
            ));
        }
        let f = &mut self.stacks[core][idx];
        f.suspended = None;
        Ok(match f.doomed {
            Some(st) => Resumed::Doomed(idx, st),
            None => Resumed::Running(idx),
        })
    }

    /// POWER8 `tsuspend`: the active transaction stops tracking; later accesses are
    /// non-transactional. Returns the suspended frame, or `None` outside a transaction.
    pub fn tsuspend(&mut self, core: usize) -> Option<usize> {
        let idx = self.active(core)?;
        self.stacks[core][idx].suspended = Some(SuspendKind::Tsuspend);
        Some(idx)
    }

    /// POWER8 `tresume`: resumes a `tsuspend`ed transaction, reporting whether it was doomed
    /// meanwhile.
    pub fn tresume(&mut self, core: usize) -> Resumed {
        let Some(f) = self.stacks[core].last_mut() else {
            return Resumed::Nothing;
        };
        if f.suspended != Some(SuspendKind::Tsuspend) {
            return Resumed::Nothing;
        }
        f.suspended = None;
        let idx = self.stacks[core].len() - 1;
        match self.stacks[core][idx].doomed {
            Some(st) => Resumed::Doomed(idx, st),
            None => Resumed::Running(idx),
        }
    }
}
