//! The versions of the peer crates in this build, from `Cargo.lock` (see
//! `build.rs`): reports and row notes name what was actually measured.

include!(concat!(env!("OUT_DIR"), "/peer_versions.rs"));

/// The locked version of peer crate `name`, or `unknown` for a crate
/// `build.rs` does not record.
pub fn peer_version(name: &str) -> &'static str {
    PEER_VERSIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("unknown", |(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_has_a_locked_version() {
        for (name, version) in PEER_VERSIONS {
            assert!(
                version.split('.').count() == 3
                    && version.split('.').all(|p| p.parse::<u32>().is_ok()),
                "{name} {version}"
            );
        }
        assert_eq!(peer_version("no-such-crate"), "unknown");
    }
}
