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
    disable_transparent_huge_pages();
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

/// Turns transparent huge pages off for this process, as latency-bound stores (Redis, MongoDB)
/// advise. mimalloc asks for them on its arenas, so each first touch of a 2 MiB region faults and
/// zeroes it whole inside one allocation; on the project's 2-core VMs, where a huge page is
/// often not yet backed by the host, one such fault took ~20 ms. `scdflow run` over the
/// 1M-event SCD2 workload: 4.8-5.4 s with 2.9-3.4 s of system time, 3.2 s with 0.6 s without
/// them (same resident set); the bench's SCD2 p99 per 1,000-event commit: 48 ms -> 3 ms. The
/// flag is the process's, so it holds for mappings made before `main` too; a kernel without it
/// leaves things as they were.
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
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
    use super::{disable_transparent_huge_pages, MI_OPTION_PURGE_DELAY};

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // Its documented default in mimalloc v3 (the version the crate builds): 1000 (ms).
        // SAFETY: reads an allocator option.
        let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_are_off_for_the_process() {
        disable_transparent_huge_pages();
        // SAFETY: reads a flag of this process.
        let off = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert_eq!(off, 1);
    }
}
