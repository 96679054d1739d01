//! A progress line on stderr (commits, rows/s), only when stderr is a terminal.

use scdflow::runtime;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;

/// Reports progress while a run executes.
pub struct Progress {
    started: Instant,
    commits: Arc<std::sync::atomic::AtomicU64>,
}

impl Progress {
    /// A reporter if stderr is a terminal.
    pub fn start() -> Option<Self> {
        std::io::stderr().is_terminal().then(|| Progress {
            started: Instant::now(),
            commits: Arc::default(),
        })
    }

    /// The callback the runtime calls after each commit.
    pub fn reporter(&self) -> runtime::Progress {
        let commits = Arc::clone(&self.commits);
        let started = self.started;
        Box::new(move |version| {
            commits.store(version, std::sync::atomic::Ordering::Relaxed);
            eprint!(
                "\rcommits: {version}  elapsed: {:.1}s",
                started.elapsed().as_secs_f64()
            );
        })
    }

    /// Prints the final line.
    pub fn finish(&self, events: u64) {
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        let commits = self.commits.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "\rcommits: {commits}  events: {events}  {:.0} events/s  elapsed: {secs:.1}s",
            events as f64 / secs
        );
    }
}
