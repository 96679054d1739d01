//! Resident memory from `/proc/self/status` (Linux; elsewhere there are no figures).

/// The memory of one run, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rss {
    /// RSS at the start of the run (it includes the input and whatever the allocator kept from
    /// earlier runs).
    pub start: u64,
    /// Peak RSS: during the run if `reset`, else since the process started.
    pub peak: u64,
    /// Whether the peak was reset at the start of the run (`/proc/self/clear_refs` was
    /// writable); otherwise `peak` may belong to an earlier run.
    pub reset: bool,
}

impl Rss {
    /// The peak's growth over the start.
    pub fn growth(&self) -> u64 {
        self.peak.saturating_sub(self.start)
    }

    /// The figures now, for a run that started at `start` (from [`reset_peak`]).
    fn since(start: Start) -> Option<Rss> {
        let peak = status_bytes("VmHWM:")?;
        Some(Rss {
            start: start.rss,
            peak: peak.max(start.rss),
            reset: start.reset,
        })
    }
}

/// Runs `f` with the peak reset before it where permitted; its result and its memory figures.
pub fn during<T>(f: impl FnOnce() -> T) -> (T, Option<Rss>) {
    let start = reset_peak();
    let out = f();
    (out, start.and_then(Rss::since))
}

/// The RSS at the start of a run, and whether the peak was reset.
#[derive(Clone, Copy, Debug)]
struct Start {
    rss: u64,
    reset: bool,
}

/// Resets the peak RSS to the current RSS where permitted (Linux `clear_refs` 5) and returns
/// the current RSS; `None` without `/proc`.
fn reset_peak() -> Option<Start> {
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    Some(Start {
        rss: status_bytes("VmRSS:")?,
        reset,
    })
}

/// A `/proc/self/status` field given in kB, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
