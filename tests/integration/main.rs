//! One integration-test binary (ripgrep's layout); one module per concern.

// Engine vs reference model on random event sets, arrival orders, commit splits and workers.
mod prop;
// The typed operators for embedders vs the reference model, the same way.
mod prop_typed;
// The spec's worked examples and decision vectors, through SQL, exact tables.
mod golden;
// Bitemporal examples (T8 in every arrival order, T9), exact tables.
mod golden_bitemporal;
// Snapshot and REPLACE USING examples, exact tables.
mod golden_snapshot;
// The binary: bundled examples, outputs, and each bad-input class.
mod cli;
// `scdflow run` as two processes on loopback.
mod cluster;
// Clusters whose processes differ, stay silent, stop, or see different files.
mod cluster_faults;
// Snapshot and REPLACE USING flows vs the model.
mod prop_snapshot;
// A target's change data feed read in its own pipeline: copies equal the target at every commit.
mod prop_target_feed;
// Reading a file in two halves gives what one read gives.
mod prop_halves;
// Materialized views over targets of their own pipeline equal their queries at every commit.
mod prop_target_view;
// The same through the binary: plain, durable, rewound, published; refusals.
mod target_feeds;
// Materialized views over a target of their own pipeline: plain, durable, rewound, published.
mod target_views;
// Tombstone retention through the dataflow.
mod tombstones;
// `scdflow generate`'s files through its own pipelines vs the model.
mod generate;
// `scdflow query`: point-in-time reads through the binary.
mod query;
// `scdflow bench`: its table, report and plots, the open loop, the peer, bad arguments.
mod bench;
// Shared builders for targets and events.
mod util;
// Durable runs (`--state`): multi-run spec examples, split runs, refused changes, damaged state.
mod durable;
// `--follow` woken by a watch on its input directories, not by its poll.
mod follow_watch;
// Durable runs killed (SIGKILL) at random instants vs one uninterrupted run.
mod crash;
// A warehouse of Delta tables: `scdflow sql`, pipelines reading tables by name.
mod warehouse;
// Durable runs whose state lost commits their published tables hold: caught up, never twice.
mod catch_up;
// UPDATE, DELETE and TRUNCATE TABLE in `scdflow sql`.
mod warehouse_dml;
// AUTO CDC FROM SNAPSHOT ... WITH VERSION, seed 000 verbatim; queries in scdflow sql.
mod snapshot_versions;
// Append flows (INSERT INTO [ONCE] t BY NAME SELECT ...), seed 003's VALUES source verbatim.
mod append_flows;
// Change data feeds read back (table_changes, readChangeFeed streams), views, SHOW TBLPROPERTIES.
mod change_feeds;
// DML on published targets (seed 003): checked edits a durable run takes into its state.
mod target_dml;
// Every SQL statement of the three seeds, verbatim and in order, and the tables they print.
mod seed_walk;
// REPLACE WHERE flows: a warehouse table's slice replaced at each update.
mod replace_where;
// scdflow rewind: a state and its outputs returned to an earlier commit.
mod rewind;
// Parquet files as a source (read_files format => parquet).
mod parquet_input;
// Streaming tables published in the warehouse: plain, durable, rewound, in a cluster.
mod streaming_tables;
// Mutated pipelines, inputs and states: no panic or hang, one error line, outputs untouched.
mod fuzz;
