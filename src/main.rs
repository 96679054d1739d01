//! The `scdflow` binary: `scdflow run PIPELINE.sql`, `scdflow check PIPELINE.sql`, `scdflow generate`.

mod cli;

use std::process::ExitCode;

// Rows of owned values are allocated on one worker thread and freed on another all the time;
// mimalloc ran `benches/ingest.rs` 1.3-1.5x faster than the system allocator with 2 workers.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (the same index in its v2 and v3; the
/// bindings do not name it). The test below holds the index to the option's documented default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // mimalloc gives memory that stays free back to the OS (after 1 s by default in its v3);
    // each commit of a `--follow` run then faulted its buffers in afresh, and the kernel
    // zeroing those pages was 15% of such a run's time (p50 latency of 10,000-event commits
    // 66 ms, 40 ms with purging off). Keeping them makes the resident set the run's peak, which
    // a plain run reaches anyway.
    // SAFETY: sets a process-wide allocator option before any thread is started.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    match cli::run(cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// A closed stdout (`scdflow check p.sql | head`) is not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::MI_OPTION_PURGE_DELAY;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // Its documented default in mimalloc v3 (the version the crate builds): 1000 (ms).
        // SAFETY: reads an allocator option.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }
}
