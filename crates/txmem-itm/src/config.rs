//! Run-time configuration, read once from the environment when the library is loaded.

use std::sync::OnceLock;

/// Which algorithm new transactions use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MethodKind {
    /// Every transaction serial, writing in place with an undo log.
    Serial,
    /// Lazy write-back with commit-time locking over the orec table.
    Lazy,
    /// Eager write-through with encounter-time locking and an undo log.
    Eager,
    /// NOrec: one global sequence lock, value-based validation, write-back at commit.
    NOrec,
}

/// What a transaction does after an abort, before it runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ContentionPolicy {
    /// Run again at once.
    None,
    /// Spin for a time that doubles with each consecutive abort (up to a limit).
    Backoff,
    /// Back off, and after `hourglass_after` consecutive aborts close the hourglass: no new
    /// transaction starts until this one commits.
    Hourglass,
}

#[derive(Debug)]
pub(crate) struct Config {
    pub method: MethodKind,
    pub stats: bool,
    pub contention: ContentionPolicy,
    /// Consecutive aborts after which a transaction restarts serial (`u32::MAX`: never).
    pub serialize_after: u32,
    /// Consecutive aborts after which a transaction closes the hourglass.
    pub hourglass_after: u32,
}

fn positive(var: &str, value: Option<String>, default: u32) -> Result<u32, String> {
    match value {
        None => Ok(default),
        Some(s) => s
            .parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("{var} must be a positive integer, not '{s}'")),
    }
}

static CONFIG: OnceLock<Config> = OnceLock::new();

fn parse() -> Result<Config, String> {
    parse_from(|name| std::env::var(name).ok())
}

/// Parses the configuration from `var`, which looks a variable up.
fn parse_from(var: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
    let method = match var("TXMEM_ITM_METHOD").as_deref() {
        // NOrec by default: the fastest of the four on every harness workload at 2 threads
        // (docs/results/itm-*.md), and privatization-safe without waiting.
        None | Some("") | Some("norec") => MethodKind::NOrec,
        Some("lazy") => MethodKind::Lazy,
        Some("serial") => MethodKind::Serial,
        Some("eager") => MethodKind::Eager,
        Some(other) => {
            return Err(format!(
                "unknown TXMEM_ITM_METHOD '{other}' (expected 'lazy', 'eager', 'norec' or 'serial')"
            ))
        }
    };
    let stats = var("TXMEM_ITM_STATS").as_deref() == Some("1");
    let contention = match var("TXMEM_ITM_CM").as_deref() {
        None | Some("") | Some("backoff") => ContentionPolicy::Backoff,
        Some("none") => ContentionPolicy::None,
        Some("hourglass") => ContentionPolicy::Hourglass,
        Some(other) => {
            return Err(format!(
                "unknown TXMEM_ITM_CM '{other}' (expected 'backoff', 'none' or 'hourglass')"
            ))
        }
    };
    // The hourglass is an alternative to serializing, so with it nothing serializes after
    // aborts unless asked to.
    let serialize_default = match contention {
        ContentionPolicy::Hourglass => u32::MAX,
        _ => 100,
    };
    let serialize_after = positive(
        "TXMEM_ITM_SERIALIZE_AFTER",
        var("TXMEM_ITM_SERIALIZE_AFTER"),
        serialize_default,
    )?;
    let hourglass_after = positive(
        "TXMEM_ITM_HOURGLASS_AFTER",
        var("TXMEM_ITM_HOURGLASS_AFTER"),
        128,
    )?;
    Ok(Config {
        method,
        stats,
        contention,
        serialize_after,
        hourglass_after,
    })
}

impl MethodKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            MethodKind::Serial => "serial",
            MethodKind::Lazy => "lazy",
            MethodKind::Eager => "eager",
            MethodKind::NOrec => "norec",
        }
    }
}

/// The configuration; the first call parses the environment and exits the process with a
/// message if a variable is wrong (the load-time constructor makes that first call).
pub(crate) fn get() -> &'static Config {
    CONFIG.get_or_init(|| match parse() {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("txmem-itm: {msg}");
            std::process::exit(2)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_with(vars: &[(&str, &str)]) -> Result<Config, String> {
        parse_from(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn defaults_are_lazy_without_stats_serializing_after_100() {
        let c = parse_with(&[]).unwrap();
        assert_eq!(c.method, MethodKind::NOrec);
        assert!(!c.stats);
        assert_eq!(c.serialize_after, 100);
    }

    #[test]
    fn every_method_name_parses_and_round_trips() {
        for m in ["lazy", "eager", "norec", "serial"] {
            let c = parse_with(&[("TXMEM_ITM_METHOD", m), ("TXMEM_ITM_STATS", "1")]).unwrap();
            assert_eq!(c.method.name(), m);
            assert!(c.stats);
        }
    }

    #[test]
    fn contention_policies_and_their_serialization_defaults() {
        let c = parse_with(&[("TXMEM_ITM_CM", "hourglass")]).unwrap();
        assert_eq!(c.contention, ContentionPolicy::Hourglass);
        assert_eq!(c.serialize_after, u32::MAX);
        assert_eq!(c.hourglass_after, 128);
        let c = parse_with(&[("TXMEM_ITM_CM", "none"), ("TXMEM_ITM_SERIALIZE_AFTER", "7")]);
        let c = c.unwrap();
        assert_eq!(c.contention, ContentionPolicy::None);
        assert_eq!(c.serialize_after, 7);
        assert!(parse_with(&[("TXMEM_ITM_CM", "karma")])
            .unwrap_err()
            .contains("'karma'"));
    }

    #[test]
    fn bad_values_are_errors_that_name_them() {
        let e = parse_with(&[("TXMEM_ITM_METHOD", "tl2")]).unwrap_err();
        assert!(e.contains("'tl2'") && e.contains("norec"), "{e}");
        let e = parse_with(&[("TXMEM_ITM_SERIALIZE_AFTER", "0")]).unwrap_err();
        assert!(e.contains("TXMEM_ITM_SERIALIZE_AFTER"), "{e}");
    }
}
