//! The cell holding the machine that the executor and the [`crate::cpu::Cpu`] handles share,
//! and [`Shared`], the state both hold.
//!
//! Simulated code reaches the machine many times per simulated operation (to issue it, to
//! collect its result, to take an abort), always for one short simulator step that calls no
//! simulated code. A `RefCell` would check and update its borrow flag at every one of those
//! steps; [`MachineCell`] leaves the exclusion to its two users (the executor and `Cpu`,
//! whose accesses are confined to their own modules) and checks it in debug builds only.
//!
//! [`Shared`] lives here rather than with either user so that both depend on this module and
//! neither on the other's: the executor creates `Cpu` handles, and a `Cpu` only needs the
//! shared state.

use super::Machine;
use crate::engine::per_core::PerCore;
use std::cell::{Cell, UnsafeCell};
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

/// State shared between the executor and the [`crate::cpu::Cpu`] handles of simulated code.
#[derive(Debug)]
pub struct Shared {
    /// The machine. Taken only for the duration of one simulator step, never across an
    /// await or a call into simulated code.
    pub machine: MachineCell,
    /// [`Machine::abort_counts`]: per core, how many aborts wait to be taken.
    pub abort_counts: Rc<PerCore<Cell<u32>>>,
}

/// The machine of one simulation, with unchecked (in release builds) exclusive access.
pub struct MachineCell {
    machine: UnsafeCell<Machine>,
    /// Whether an access is live (debug builds: a second one panics).
    #[cfg(debug_assertions)]
    busy: std::cell::Cell<bool>,
}

impl std::fmt::Debug for MachineCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MachineCell").finish_non_exhaustive()
    }
}

/// Exclusive access to the machine of a [`MachineCell`], for one simulator step.
pub struct MachineRef<'a> {
    machine: &'a mut Machine,
    #[cfg(debug_assertions)]
    busy: &'a std::cell::Cell<bool>,
}

impl MachineCell {
    /// A cell holding `machine`.
    pub fn new(machine: Machine) -> Self {
        MachineCell {
            machine: UnsafeCell::new(machine),
            #[cfg(debug_assertions)]
            busy: std::cell::Cell::new(false),
        }
    }

    /// Exclusive access to the machine.
    ///
    /// # Safety
    ///
    /// No other [`MachineRef`] of this cell may exist while the returned one does: the caller
    /// must drop it before it awaits, calls simulated code (which may use a `Cpu`), or takes
    /// the machine again. Debug builds panic when this is violated.
    #[inline(always)]
    pub unsafe fn access(&self) -> MachineRef<'_> {
        #[cfg(debug_assertions)]
        {
            assert!(
                !self.busy.replace(true),
                "the machine was taken twice at once (simulator bug)"
            );
        }
        MachineRef {
            // SAFETY: the caller guarantees that no other reference to the machine is live
            // while this one is (the cell is !Sync, so all accesses are on one thread).
            machine: unsafe { &mut *self.machine.get() },
            #[cfg(debug_assertions)]
            busy: &self.busy,
        }
    }
}

impl Deref for MachineRef<'_> {
    type Target = Machine;

    #[inline(always)]
    fn deref(&self) -> &Machine {
        self.machine
    }
}

impl DerefMut for MachineRef<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Machine {
        self.machine
    }
}

#[cfg(debug_assertions)]
impl Drop for MachineRef<'_> {
    fn drop(&mut self) {
        self.busy.set(false);
    }
}
