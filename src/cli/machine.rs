//! What the benchmark ran on: CPU, memory, OS, compiler (Linux `/proc`; "unknown" elsewhere).

use std::fmt;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The machine and build a benchmark ran on.
pub struct Machine {
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu: String,
    /// Logical CPUs (`processor` entries of `/proc/cpuinfo`).
    pub cpus: usize,
    /// Total memory in bytes (`/proc/meminfo`).
    pub memory: Option<u64>,
    /// Distribution and kernel.
    pub os: String,
    /// `rustc --version` of the rustc on PATH, if any.
    pub rustc: Option<String>,
}

impl Machine {
    /// Reads it.
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == "model name").then(|| value.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let cpus = cpuinfo
            .lines()
            .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
            .count();
        let cpus = if cpus > 0 {
            cpus
        } else {
            std::thread::available_parallelism().map_or(1, usize::from)
        };
        let memory = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
        let distribution = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|r| {
                let line = r.lines().find(|l| l.starts_with("PRETTY_NAME="))?;
                Some(line["PRETTY_NAME=".len()..].trim_matches('"').to_string())
            })
            .unwrap_or_else(|| std::env::consts::OS.to_string());
        let os = match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
            Ok(kernel) => format!("{distribution}, kernel {}", kernel.trim()),
            Err(_) => distribution,
        };
        let rustc = Command::new("rustc")
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        Machine {
            cpu,
            cpus,
            memory,
            os,
            rustc,
        }
    }
}

impl fmt::Display for Machine {
    /// One line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x {}", self.cpus, self.cpu)?;
        if let Some(m) = self.memory {
            write!(f, ", {:.1} GiB", m as f64 / (1u64 << 30) as f64)?;
        }
        write!(f, ", {}", self.os)?;
        if let Some(r) = &self.rustc {
            write!(f, ", {r}")?;
        }
        let profile = if cfg!(debug_assertions) {
            "debug build (figures not representative)"
        } else {
            "release build"
        };
        write!(f, ", scdflow {} {profile}", env!("CARGO_PKG_VERSION"))
    }
}

/// The process's command line, each argument quoted for a POSIX shell where needed.
pub fn command_line() -> String {
    std::env::args()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c));
            if plain {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Now, as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn machine_is_one_line() {
        let m = Machine::probe().to_string();
        assert_eq!(m.lines().count(), 1, "{m}");
        assert!(m.contains("scdflow"), "{m}");
    }
}
