//! Whether this machine can run hardware transactions, as `txmem-elide`
//! detected it: named in row notes, the machine line and `--list`.

/// `txmem-elide`'s verdict on RTM, in a word or two.
pub fn rtm_verdict() -> String {
    use txmem_elide::htm::{Rtm, RtmVerdict};
    let d = Rtm::detection();
    match d.verdict {
        RtmVerdict::Usable => "usable".into(),
        RtmVerdict::DisabledByEnvironment => "disabled by TXMEM_ELIDE_HTM".into(),
        RtmVerdict::NotX86 => "not x86-64".into(),
        RtmVerdict::NoRtmBit => "no-rtm-bit".into(),
        RtmVerdict::AlwaysAbortBit => "always-abort-bit".into(),
        RtmVerdict::ProbeFailed => format!(
            "probe-failed ({}/{} committed)",
            d.probe_commits, d.probe_attempts
        ),
    }
}
