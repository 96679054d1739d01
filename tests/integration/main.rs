//! One integration-test binary (ripgrep's layout); one module per concern.

// Engine vs reference model on random event sets, arrival orders, commit splits and workers.
mod prop;
// Shared builders for targets and events.
mod util;
