//! Benchmarks for the workspace crates live in this package's `[[bench]]` targets, so their
//! dev-only dependencies never reach a published manifest. Run them with
//! `cargo bench -p benches`.
//!
//! One measurement is a program rather than a benchmark: `console_load` (a `[[bin]]`,
//! `console_load.rs`) drives the release `yetibot` binary's web console with 200 concurrent
//! prompts against the in-process provider fixture, beside the same 200 requests sent
//! straight to the fixture in the same run, and reports start-to-ready, idle RSS and the
//! bot's latency overhead at p50/p90/p99. Run it with `scripts/console-load.sh` (which builds
//! both in release mode first); options such as `--per-room 50` are passed through.
