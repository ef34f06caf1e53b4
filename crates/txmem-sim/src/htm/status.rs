//! Abort statuses: why a transaction aborted and whether retrying may help.

use serde::{Deserialize, Serialize};

/// Why a transaction aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbortCause {
    /// `xabort(code)` was executed.
    Explicit(u32),
    /// Lost a conflict with another transaction or with a non-transactional access.
    Conflict,
    /// A transactional line left the L1 (bounded capacity).
    Capacity,
    /// Flat nesting or the suspended-transaction stack went too deep.
    Nesting,
    /// An interrupt arrived while it ran (interrupt mode `abort`).
    Interrupt,
}

/// The status a failed transaction reports, like RTM's `EAX` after an abort.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AbortStatus {
    /// Why.
    pub cause: AbortCause,
    /// Hint: retrying the same transaction is expected to fail again (capacity, nesting).
    /// When false the abort is transient and a retry may succeed.
    pub persistent: bool,
}

impl AbortStatus {
    /// Status for `cause` with its natural hint: capacity and nesting are persistent, the
    /// rest transient.
    pub fn new(cause: AbortCause) -> Self {
        let persistent = matches!(cause, AbortCause::Capacity | AbortCause::Nesting);
        AbortStatus { cause, persistent }
    }

    /// Whether the hint says a retry may succeed.
    pub fn is_transient(&self) -> bool {
        !self.persistent
    }

    /// The `xabort` code, for explicit aborts.
    pub fn code(&self) -> Option<u32> {
        match self.cause {
            AbortCause::Explicit(c) => Some(c),
            _ => None,
        }
    }
}

impl std::fmt::Display for AbortStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hint = if self.persistent {
            "persistent"
        } else {
            "transient"
        };
        match self.cause {
            AbortCause::Explicit(c) => write!(f, "explicit abort (code {c}, {hint})"),
            AbortCause::Conflict => write!(f, "conflict ({hint})"),
            AbortCause::Capacity => write!(f, "capacity ({hint})"),
            AbortCause::Nesting => write!(f, "nesting ({hint})"),
            AbortCause::Interrupt => write!(f, "interrupt ({hint})"),
        }
    }
}
