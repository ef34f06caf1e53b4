//! The backend without transactions: every `begin` fails, so the fallback always runs.

use super::{AbortStatus, Htm};

/// A backend with no transactional memory. [`Htm::available`] is a constant `false`, so the
/// elided locks compile down to their fallback locks.
///
/// ```
/// use txmem_elide::htm::{HtmAbortCause, Htm, NoHtm};
///
/// assert!(!NoHtm.available());
/// let err = NoHtm.begin().unwrap_err();
/// assert_eq!(err.cause(), HtmAbortCause::Other);
/// assert!(!err.retry_hint());
/// assert!(!NoHtm.test());
/// ```
#[derive(Copy, Clone, Debug, Default)]
pub struct NoHtm;

// SAFETY: `begin` never succeeds, so there is never a section whose atomicity or isolation
// could be violated; `test` is always false, matching "no section is active"; `available` is
// false and `begin` indeed never succeeds.
unsafe impl Htm for NoHtm {
    const INIT: Self = NoHtm;

    fn name(&self) -> &'static str {
        "none"
    }

    #[inline(always)]
    fn available(&self) -> bool {
        false
    }

    #[inline]
    fn begin(&self) -> Result<(), AbortStatus> {
        Err(AbortStatus::other())
    }

    fn end(&self) {
        panic!("NoHtm::end called, but NoHtm never starts a transaction");
    }

    #[inline]
    fn abort(&self, code: u8) -> AbortStatus {
        AbortStatus::explicit(code)
    }

    #[inline(always)]
    fn test(&self) -> bool {
        false
    }
}
