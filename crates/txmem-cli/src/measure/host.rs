//! What the numbers were measured on: CPU model, cores, OS, toolchain, date.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::harness::rtm::rtm_verdict;

/// The host a report was measured on (the `machine` of a report).
#[derive(Clone, Debug, Serialize)]
pub struct Host {
    /// CPU model name from /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs this process may use.
    pub cores: usize,
    /// OS name and kernel release.
    pub os: String,
    /// Hardware transactional memory (RTM) reported by the CPU.
    pub htm: bool,
    /// What `txmem-elide`'s run-time detection concluded about RTM (CPUID
    /// bits and a probe of trivial transactions): `usable`, `no-rtm-bit`,
    /// `always-abort-bit`, `probe-failed (N/M committed)`, ...
    pub rtm: String,
    /// `rustc --version`, if a rustc is on the PATH (the binary's compiler
    /// is not recorded by cargo).
    pub rustc: Option<String>,
}

impl Host {
    /// Reads this machine's description.
    pub fn detect() -> Host {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|x| x.1.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let htm = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "rtm"));
        let rtm = rtm_verdict();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pretty = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("PRETTY_NAME=")
                        .map(|v| v.trim_matches('"').to_string())
                })
            })
            .unwrap_or_else(|| std::env::consts::OS.to_string());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| format!(", kernel {}", s.trim()))
            .unwrap_or_default();
        let rustc = Command::new("rustc")
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        Host {
            cpu,
            cores,
            os: format!("{pretty}{kernel}"),
            htm,
            rtm,
            rustc,
        }
    }

    /// One line for the table header and the results pages.
    pub fn line(&self) -> String {
        format!(
            "{}, {} cores, {}{}",
            self.cpu,
            self.cores,
            self.os,
            match (self.htm, self.rtm.as_str()) {
                (_, "usable") => ", RTM".to_string(),
                (false, _) => ", no HTM".to_string(),
                (true, why) => format!(", RTM reported but not used: {why}"),
            }
        )
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ` (no date crate needed).
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn date_format() {
        let s = super::utc_now();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20"), "{s}");
    }
}
