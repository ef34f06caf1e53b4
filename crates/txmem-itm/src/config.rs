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
    let method = match std::env::var("TXMEM_ITM_METHOD").as_deref() {
        Err(_) | Ok("") | Ok("lazy") => MethodKind::Lazy,
        Ok("serial") => MethodKind::Serial,
        Ok("eager") => MethodKind::Eager,
        Ok(other) => {
            return Err(format!(
                "unknown TXMEM_ITM_METHOD '{other}' (expected 'lazy', 'eager' or 'serial')"
            ))
        }
    };
    let stats = matches!(std::env::var("TXMEM_ITM_STATS").as_deref(), Ok("1"));
    let serialize_after = match std::env::var("TXMEM_ITM_SERIALIZE_AFTER") {
        Err(_) => 100,
        Ok(s) => s.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
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
