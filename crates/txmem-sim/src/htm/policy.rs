//! Contention management: which of two conflicting transactions survives (MetaTM Table 2).

use super::LogicalTx;
use crate::config::{HtmConfig, PolicyKind};

/// One side of a conflict, as a policy sees it.
#[derive(Debug)]
pub struct Side<'a> {
    /// State kept across restarts (timestamp, karma, deferrals); policies may update it.
    pub logical: &'a mut LogicalTx,
    /// Unique bytes of the current attempt's working set (SizeMatters).
    pub size_bytes: u64,
    /// Whether this side's part in the conflict is a write (only Polka looks at it; the
    /// simulator fills in the holder's side for Polka only).
    pub writes: bool,
    /// Core it runs on (final tie-breaker).
    pub core: usize,
}

/// Older first start wins; ties broken by core number.
fn older(a: &Side<'_>, b: &Side<'_>) -> bool {
    (a.logical.start, a.core) < (b.logical.start, b.core)
}

/// Higher karma wins; ties by age.
fn karma_wins(a: &Side<'_>, b: &Side<'_>) -> bool {
    if a.logical.karma != b.logical.karma {
        a.logical.karma > b.logical.karma
    } else {
        older(a, b)
    }
}

/// Decides a conflict between a requester (whose access found the conflict) and a holder
/// (whose footprint it hit). Returns true when the requester wins (the holder must abort).
///
/// - requester-wins: the requester.
/// - timestamp: the older first start.
/// - karma: more unique references over all attempts; ties by age.
/// - eruption: as karma, and the winner's karma is added to the loser's.
/// - kindergarten: a side that has not yet deferred to the other does so (and remembers);
///   when both have deferred once, timestamp.
/// - polka: if exactly one side writes, the writer wins; otherwise karma. The loser's next
///   backoff seed is the karma gap.
/// - polite: the requester defers while it has restarted fewer than `polite_threshold`
///   times, then wins.
/// - size-matters: the larger working set in bytes wins (ties by age); once either side has
///   restarted `size_matters_threshold` times, timestamp.
#[inline]
pub fn requester_wins(cfg: &HtmConfig, req: &mut Side<'_>, holder: &mut Side<'_>) -> bool {
    match cfg.policy {
        PolicyKind::RequesterWins => true,
        PolicyKind::Timestamp => older(req, holder),
        PolicyKind::Karma => karma_wins(req, holder),
        PolicyKind::Eruption => {
            let wins = karma_wins(req, holder);
            if wins {
                holder.logical.karma = holder.logical.karma.saturating_add(req.logical.karma);
            } else {
                req.logical.karma = req.logical.karma.saturating_add(holder.logical.karma);
            }
            wins
        }
        PolicyKind::Kindergarten => {
            let hl = holder.logical.lid;
            let rl = req.logical.lid;
            if !req.logical.deferred_to.contains(&hl) {
                req.logical.deferred_to.push(hl);
                false
            } else if !holder.logical.deferred_to.contains(&rl) {
                holder.logical.deferred_to.push(rl);
                true
            } else {
                older(req, holder)
            }
        }
        PolicyKind::Polka => {
            let wins = if req.writes != holder.writes {
                req.writes
            } else {
                karma_wins(req, holder)
            };
            let gap = req.logical.karma.abs_diff(holder.logical.karma).max(1);
            if wins {
                holder.logical.seed_override = Some(gap);
            } else {
                req.logical.seed_override = Some(gap);
            }
            wins
        }
        PolicyKind::Polite => req.logical.restarts >= cfg.polite_threshold,
        PolicyKind::SizeMatters => {
            let t = cfg.size_matters_threshold;
            if req.logical.restarts >= t
                || holder.logical.restarts >= t
                || req.size_bytes == holder.size_bytes
            {
                older(req, holder)
            } else {
                req.size_bytes > holder.size_bytes
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lt(lid: u64, start: u64, karma: u64, restarts: u32) -> LogicalTx {
        LogicalTx {
            lid,
            start,
            karma,
            restarts,
            ..LogicalTx::default()
        }
    }

    fn decide(
        policy: PolicyKind,
        a: &mut LogicalTx,
        a_size: u64,
        a_w: bool,
        b: &mut LogicalTx,
        b_size: u64,
        b_w: bool,
    ) -> bool {
        let cfg = HtmConfig {
            policy,
            ..HtmConfig::default()
        };
        let mut r = Side {
            logical: a,
            size_bytes: a_size,
            writes: a_w,
            core: 0,
        };
        let mut h = Side {
            logical: b,
            size_bytes: b_size,
            writes: b_w,
            core: 1,
        };
        requester_wins(&cfg, &mut r, &mut h)
    }

    #[test]
    fn table2_semantics() {
        // Timestamp: older wins regardless of role.
        assert!(!decide(
            PolicyKind::Timestamp,
            &mut lt(1, 10, 0, 0),
            8,
            true,
            &mut lt(2, 5, 0, 0),
            8,
            false
        ));
        assert!(decide(
            PolicyKind::Timestamp,
            &mut lt(1, 1, 0, 0),
            8,
            true,
            &mut lt(2, 5, 0, 0),
            8,
            false
        ));
        // Karma: more work wins.
        assert!(decide(
            PolicyKind::Karma,
            &mut lt(1, 10, 9, 0),
            8,
            false,
            &mut lt(2, 5, 3, 0),
            8,
            true
        ));
        // Eruption: the loser inherits the winner's karma.
        let (mut a, mut b) = (lt(1, 10, 2, 0), lt(2, 5, 7, 0));
        assert!(!decide(
            PolicyKind::Eruption,
            &mut a,
            8,
            false,
            &mut b,
            8,
            true
        ));
        assert_eq!(a.karma, 9);
        // Kindergarten: defer once each, then timestamp.
        let (mut a, mut b) = (lt(1, 10, 0, 0), lt(2, 5, 0, 0));
        assert!(!decide(
            PolicyKind::Kindergarten,
            &mut a,
            8,
            true,
            &mut b,
            8,
            true
        ));
        assert!(decide(
            PolicyKind::Kindergarten,
            &mut a,
            8,
            true,
            &mut b,
            8,
            true
        ));
        assert!(!decide(
            PolicyKind::Kindergarten,
            &mut a,
            8,
            true,
            &mut b,
            8,
            true
        ));
        // Polka: the writer wins a read/write conflict; write/write by karma; seed = gap.
        let (mut a, mut b) = (lt(1, 10, 1, 0), lt(2, 5, 6, 0));
        assert!(decide(PolicyKind::Polka, &mut a, 8, true, &mut b, 8, false));
        assert_eq!(b.seed_override, Some(5));
        assert!(!decide(PolicyKind::Polka, &mut a, 8, true, &mut b, 8, true));
        assert_eq!(a.seed_override, Some(5));
        // Polite: defer until the threshold.
        assert!(!decide(
            PolicyKind::Polite,
            &mut lt(1, 0, 0, 9),
            8,
            true,
            &mut lt(2, 5, 0, 0),
            8,
            true
        ));
        assert!(decide(
            PolicyKind::Polite,
            &mut lt(1, 9, 0, 10),
            8,
            true,
            &mut lt(2, 5, 0, 0),
            8,
            true
        ));
        // SizeMatters: larger wins, reverting to timestamp after the threshold.
        assert!(decide(
            PolicyKind::SizeMatters,
            &mut lt(1, 9, 0, 0),
            64,
            true,
            &mut lt(2, 5, 0, 0),
            8,
            true
        ));
        assert!(!decide(
            PolicyKind::SizeMatters,
            &mut lt(1, 9, 0, 10),
            64,
            true,
            &mut lt(2, 5, 0, 0),
            8,
            true
        ));
        // Requester wins.
        assert!(decide(
            PolicyKind::RequesterWins,
            &mut lt(1, 9, 0, 0),
            8,
            false,
            &mut lt(2, 5, 9, 0),
            80,
            true
        ));
    }
}
