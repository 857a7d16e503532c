//! Examples that embed the yetibot-rs crates in an ordinary Rust program. Each one is an
//! `[[example]]` target of this package: `cargo run -p examples --example NAME`.
