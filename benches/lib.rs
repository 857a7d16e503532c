//! Benchmarks for the workspace crates live in this package's `[[bench]]` targets, so their
//! dev-only dependencies never reach a published manifest. Run them with
//! `cargo bench -p benches`.
