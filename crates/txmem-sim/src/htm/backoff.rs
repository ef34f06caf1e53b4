//! Backoff before a restarted transaction runs again (MetaTM §2.4).

use crate::config::{BackoffKind, HtmConfig};
use crate::engine::rng::SplitMix64;

/// Cycles to wait before restart number `n` (1 for the first restart).
///
/// - exponential: `seed * 2^n`, seed uniform in 1..=10 (the exponent is capped by
///   `max_backoff_exponent`);
/// - linear: `seed * n`;
/// - random: uniform in 1..=`random_backoff_max`;
/// - none: 0.
///
/// `seed_override` replaces the random seed (Polka uses the gap between the two
/// transactions' priorities).
///
/// ```
/// use txmem_sim::config::{BackoffKind, HtmConfig};
/// use txmem_sim::engine::rng::SplitMix64;
/// use txmem_sim::htm::backoff::backoff_cycles;
/// let cfg = HtmConfig::default();
/// let mut rng = SplitMix64::new(1);
/// assert_eq!(backoff_cycles(BackoffKind::Linear, &cfg, 3, Some(5), &mut rng), 15);
/// assert_eq!(backoff_cycles(BackoffKind::Exponential, &cfg, 3, Some(5), &mut rng), 40);
/// assert_eq!(backoff_cycles(BackoffKind::None, &cfg, 3, Some(5), &mut rng), 0);
/// ```
#[inline]
pub fn backoff_cycles(
    kind: BackoffKind,
    cfg: &HtmConfig,
    n: u32,
    seed_override: Option<u64>,
    rng: &mut SplitMix64,
) -> u64 {
    let mut seed = || seed_override.unwrap_or_else(|| rng.range_inclusive(1, 10));
    match kind {
        BackoffKind::Exponential => {
            seed().saturating_mul(1u64 << n.min(cfg.max_backoff_exponent).min(62))
        }
        BackoffKind::Linear => seed().saturating_mul(u64::from(n)),
        BackoffKind::Random => rng.range_inclusive(1, cfg.random_backoff_max),
        BackoffKind::None => 0,
    }
}
