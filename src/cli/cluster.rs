//! Timely's cluster options (`-n`, `-p`, `-h`) as a `scdflow::runtime::Cluster`.

use anyhow::{bail, Context};
use scdflow::runtime::{Cluster, Timeouts};
use std::path::Path;
use std::time::Duration;

/// First port of the default addresses, as in timely's own `-h` default.
const FIRST_PORT: u16 = 2101;

/// The cluster this process belongs to, or `None` for a single process. The timeouts are in
/// seconds, 0 meaning none (`--connect-timeout`, `--peer-timeout`).
pub fn cluster(
    processes: u16,
    process: u16,
    hostfile: Option<&Path>,
    connect_timeout: f64,
    peer_timeout: f64,
) -> anyhow::Result<Option<Cluster>> {
    if process >= processes {
        bail!("--process {process}: must be less than --processes {processes} (processes count from 0)");
    }
    if processes == 1 {
        return Ok(None);
    }
    let n = usize::from(processes);
    let addresses = match hostfile {
        None => (0..processes)
            .map(|i| format!("localhost:{}", u32::from(FIRST_PORT) + u32::from(i)))
            .collect(),
        Some(path) => read_hostfile(path, n)?,
    };
    let timeouts = Timeouts {
        connect: timeout(connect_timeout, "--connect-timeout")?,
        silence: timeout(peer_timeout, "--peer-timeout")?,
    };
    Ok(Some(Cluster {
        process: usize::from(process),
        addresses,
        timeouts,
    }))
}

/// `seconds` as a timeout: 0 is none.
fn timeout(seconds: f64, name: &str) -> anyhow::Result<Option<Duration>> {
    match Duration::try_from_secs_f64(seconds) {
        Ok(d) if d.is_zero() => Ok(None),
        Ok(d) => Ok(Some(d)),
        Err(_) => bail!("{name} must be a number of seconds (0 for none), not {seconds}"),
    }
}

/// Keeps timely's network-thread panics to one line each: when a peer process goes away,
/// timely's threads panic one after the other, and the run then fails with one error saying
/// so. Every other panic (a bug) is reported as usual.
pub fn quiet_network_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        let thread = std::thread::current().name().unwrap_or("").to_string();
        if !thread.starts_with("timely:") && thread != "main" {
            return default(info);
        }
        if message.starts_with("timely communication error") {
            eprintln!("warning: {message}");
        } else if !(message.contains("poisoned") || message.contains("thread panic")) {
            default(info);
        }
    }));
}

/// The first `n` addresses of `path`: one `host:port` per line; blank lines and `#` comments
/// are skipped.
fn read_hostfile(path: &Path, n: usize) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the hostfile", path.display()))?;
    let mut addresses = Vec::with_capacity(n);
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let port = line
            .rsplit_once(':')
            .map(|(host, port)| (host, port.parse::<u16>()));
        match port {
            Some((host, Ok(_))) if !host.is_empty() => addresses.push(line.to_string()),
            _ => bail!(
                "{}:{}: expected host:port, found `{line}`",
                path.display(),
                i + 1
            ),
        }
        if addresses.len() == n {
            return Ok(addresses);
        }
    }
    bail!(
        "{}: {} address(es) for {n} processes; give one host:port line per process",
        path.display(),
        addresses.len()
    )
}
