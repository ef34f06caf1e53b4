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
}

#[derive(Debug)]
pub(crate) struct Config {
    pub method: MethodKind,
    pub stats: bool,
    /// Consecutive aborts after which a transaction restarts serial.
    pub serialize_after: u32,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

fn parse() -> Result<Config, String> {
    parse_from(|name| std::env::var(name).ok())
}

/// Parses the configuration from `var`, which looks a variable up.
fn parse_from(var: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
    let method = match var("TXMEM_ITM_METHOD").as_deref() {
        None | Some("") | Some("lazy") => MethodKind::Lazy,
        Some("serial") => MethodKind::Serial,
        Some("eager") => MethodKind::Eager,
        Some(other) => {
            return Err(format!(
                "unknown TXMEM_ITM_METHOD '{other}' (expected 'lazy', 'eager' or 'serial')"
            ))
        }
    };
    let stats = var("TXMEM_ITM_STATS").as_deref() == Some("1");
    let serialize_after = match var("TXMEM_ITM_SERIALIZE_AFTER") {
        None => 100,
        Some(s) => s.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
            format!("TXMEM_ITM_SERIALIZE_AFTER must be a positive integer, not '{s}'")
        })?,
    };
    Ok(Config {
        method,
        stats,
        serialize_after,
    })
}

/// The configuration; the first call parses the environment and exits the process with a
/// message if a variable is wrong (the load-time constructor makes that first call).
impl MethodKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            MethodKind::Serial => "serial",
            MethodKind::Lazy => "lazy",
            MethodKind::Eager => "eager",
        }
    }
}

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
        assert_eq!(c.method, MethodKind::Lazy);
        assert!(!c.stats);
        assert_eq!(c.serialize_after, 100);
    }

    #[test]
    fn every_method_name_parses_and_round_trips() {
        for m in ["lazy", "eager", "serial"] {
            let c = parse_with(&[("TXMEM_ITM_METHOD", m), ("TXMEM_ITM_STATS", "1")]).unwrap();
            assert_eq!(c.method.name(), m);
            assert!(c.stats);
        }
    }

    #[test]
    fn bad_values_are_errors_that_name_them() {
        let e = parse_with(&[("TXMEM_ITM_METHOD", "norec")]).unwrap_err();
        assert!(e.contains("'norec'") && e.contains("lazy"), "{e}");
        let e = parse_with(&[("TXMEM_ITM_SERIALIZE_AFTER", "0")]).unwrap_err();
        assert!(e.contains("TXMEM_ITM_SERIALIZE_AFTER"), "{e}");
    }
}
