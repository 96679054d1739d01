//! Where the process's parallel work runs: timely's workers and a pool of helper threads, each
//! pinned to one of the cores the process may use once [`pin_threads`] has switched pinning on.
//!
//! # Why pin
//! A commit is a chain of short parallel phases: its file read in halves, the workers applying
//! and labelling their keys, its change feed rendered in halves, a table rendered in ranges.
//! Each lasts 1 to 8 ms, about as long as a kernel may take to move a thread that woke beside a
//! busy one to an idle core. On the 2-vCPU VMs this project is measured on, the guest kernel
//! packs runnable threads onto as few vCPUs as it can (`kernel.sched_vcpu_pack`): a thread
//! spawned to do 3 ms of work beside 3 ms of its spawner's started 1.1–2.3 ms late and the
//! pair took 4.2–5.3 ms; made on the other core, it started in 0.04–0.25 ms and the pair took
//! 3.1–3.4 ms (a C probe, 50 rounds per idle gap of 0.1 to 100 ms). In a followed 10,000-event
//! commit on 2 workers the second worker applied 1–3 ms after the first and the two labelled
//! one after the other; the halves of its file were read one after the other. A thread pinned
//! to a core is woken there, so those phases overlap as they were meant to.
//!
//! # What is pinned
//! Worker `i` (its index among all processes' workers) to the process's core `(s + i) mod
//! cores`, where `s` is the core the process started on: the processes of a cluster on one
//! machine spread their workers, and so, mostly, do unrelated runs, which the OS starts on idle
//! cores. Helper `h` goes to core `h`, one helper per core (they idle between phases). The
//! driver's own thread is not pinned: it hands its parallel work to the helpers ([`join`],
//! [`install`]) and waits for it. Phases do not overlap (the workers idle while a file is
//! read, the helpers while the workers apply), so a worker and a helper sharing a core do not
//! compete.
//!
//! # Limits
//! Pinning assumes the run has its cores to itself (the CPU set it starts with, as `taskset` or
//! a cgroup gives it): a pinned thread cannot leave a core a neighbour keeps busy. Nor is it
//! right for a run that keeps more threads busy than it has cores (a plain run reading ahead
//! beside as many workers as cores): the OS's balancing serves that better. The binary pins
//! for `run --follow`, runs of fewer workers than cores and `bench`, unless `SCDFLOW_PIN=0`;
//! the library pins nothing unless told. Linux only: elsewhere [`pin_threads`] does nothing
//! and the helpers run where the OS puts them.
//!
//! The helpers are a rayon thread pool: fork-join over borrowed data with work stealing is
//! what rayon is made for, and its `start_handler` is where each thread pins itself. Without a
//! pool (its threads could not be started) the work runs on the caller's thread.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::OnceLock;

/// The cores threads are pinned to, once [`pin_threads`] has run: the process's CPU set then,
/// and the position in it of the core the process started on.
static PINNED: OnceLock<(Vec<usize>, usize)> = OnceLock::new();

/// The helper pool, made at its first use.
static HELPERS: OnceLock<Option<ThreadPool>> = OnceLock::new();

/// Pins the threads started from now on (timely's workers, the helpers) to the cores the
/// process may use now. Call it before any of them starts, from the thread that starts the
/// rest: its CPU set is the one read. Does nothing where pinning is not supported, or a second
/// time.
pub fn pin_threads() {
    if let Some(cpus) = allowed().filter(|cpus| !cpus.is_empty()) {
        let start = current().and_then(|cpu| cpus.iter().position(|&c| c == cpu));
        let _ = PINNED.set((cpus, start.unwrap_or(0)));
    }
}

/// The number of cores the process may use (at least 1).
pub fn count() -> usize {
    match PINNED.get() {
        Some((cpus, _)) => cpus.len(),
        None => std::thread::available_parallelism().map_or(1, usize::from),
    }
}

/// Pins the calling thread, timely worker `index` of all processes' workers, if pinning is on.
pub(crate) fn pin_worker(index: usize) {
    if let Some((cpus, start)) = PINNED.get() {
        pin_current(cpus[(start + index) % cpus.len()]);
    }
}

/// Runs `a` and `b` on the helpers, side by side, and returns both results; a panic in either
/// is resumed here.
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match helpers() {
        Some(pool) => pool.join(a, b),
        None => (a(), b()),
    }
}

/// Runs `op` on a helper, where rayon's parallel iterators inside it run on the helpers.
pub fn install<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    match helpers() {
        Some(pool) => pool.install(op),
        None => op(),
    }
}

fn helpers() -> Option<&'static ThreadPool> {
    HELPERS
        .get_or_init(|| {
            let pinned = PINNED.get();
            ThreadPoolBuilder::new()
                .num_threads(count())
                .thread_name(|h| format!("scdflow-helper-{h}"))
                .start_handler(move |h| {
                    if let Some((cpus, _)) = pinned {
                        pin_current(cpus[h % cpus.len()]);
                    }
                })
                .build()
                .ok()
        })
        .as_ref()
}

/// The CPUs the calling thread may run on.
#[cfg(target_os = "linux")]
fn allowed() -> Option<Vec<usize>> {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; `sched_getaffinity` writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid `cpu_set_t` of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return None;
    }
    let cpus = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below `CPU_SETSIZE`, the set's capacity.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    Some(cpus)
}

#[cfg(not(target_os = "linux"))]
fn allowed() -> Option<Vec<usize>> {
    None
}

/// The CPU the calling thread runs on.
#[cfg(target_os = "linux")]
fn current() -> Option<usize> {
    // SAFETY: `sched_getcpu` takes no arguments and only reads.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

#[cfg(not(target_os = "linux"))]
fn current() -> Option<usize> {
    None
}

/// Pins the calling thread to `cpu`; a refusal (a CPU set changed since) leaves it where it is.
#[cfg(target_os = "linux")]
fn pin_current(cpu: usize) {
    // SAFETY: a zeroed `cpu_set_t` is an empty set, and `cpu` came from the process's set, so
    // it is below `CPU_SETSIZE`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_current(_cpu: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_runs_both_and_install_runs_parallel_iterators() {
        use rayon::prelude::*;
        let data: Vec<u64> = (1..=1000).collect();
        let (a, b) = join(|| data[..500].iter().sum::<u64>(), || data[500..].len());
        assert_eq!((a, b), (125_250, 500));
        let squares: Vec<u64> = install(|| data.par_iter().map(|x| x * x).collect());
        assert_eq!(squares[999], 1_000_000);
        assert!(count() >= 1);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_pinned_runs_on_its_core_only() {
        let cpus = allowed().expect("the CPU set of this thread");
        assert!(!cpus.is_empty());
        let last = *cpus.last().expect("a CPU");
        let on = std::thread::spawn(move || {
            pin_current(last);
            allowed().expect("the CPU set of the pinned thread")
        })
        .join()
        .expect("the thread ran");
        assert_eq!(on, vec![last]);
    }
}
