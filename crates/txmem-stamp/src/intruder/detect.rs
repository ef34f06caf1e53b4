//! The detector: does a reassembled flow contain a known attack signature?

/// The attack dictionary. Each signature holds at least one byte that
/// random flow data never contains (upper-case letters, `<`, `%`, ...).
pub const SIGNATURES: &[&[u8]] = &[
    b"ROOTKIT",
    b"%n%n%n%n",
    b"DROP TABLE",
    b"..%2F..%2F",
    b"<SCRIPT>",
    b"EXEC(SHELL)",
    b"BACKD00R",
    b"\x90\x90\x90\x90",
];

/// A matcher over [`SIGNATURES`]: positions are filtered by a table of the
/// signatures' first bytes, so most bytes of a flow cost one lookup.
pub struct Detector {
    first: [bool; 256],
}

impl Detector {
    /// A detector for [`SIGNATURES`].
    pub fn new() -> Detector {
        let mut first = [false; 256];
        for s in SIGNATURES {
            first[usize::from(s[0])] = true;
        }
        Detector { first }
    }

    /// True if `flow` contains any signature.
    pub fn is_attack(&self, flow: &[u8]) -> bool {
        flow.iter().enumerate().any(|(i, &b)| {
            self.first[usize::from(b)] && SIGNATURES.iter().any(|s| flow[i..].starts_with(s))
        })
    }
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_signatures_anywhere_and_nothing_else() {
        let d = Detector::new();
        assert!(d.is_attack(b"ROOTKIT"));
        assert!(d.is_attack(b"abc<SCRIPT>"));
        assert!(d.is_attack(b"x..%2F..%2Fy"));
        assert!(!d.is_attack(b"rootkit drop table"));
        assert!(!d.is_attack(b"ROOTKI"));
        assert!(!d.is_attack(b""));
    }
}
