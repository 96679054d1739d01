//! Timely's cluster options (`-n`, `-p`, `-h`) as a `scdflow::runtime::Cluster`.

use anyhow::{bail, Context};
use scdflow::runtime::Cluster;
use std::path::Path;

/// First port of the default addresses, as in timely's own `-h` default.
const FIRST_PORT: u16 = 2101;

/// The cluster this process belongs to, or `None` for a single process.
pub fn cluster(
    processes: u16,
    process: u16,
    hostfile: Option<&Path>,
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
    Ok(Some(Cluster {
        process: usize::from(process),
        addresses,
    }))
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
