//! Workspace-wide tests live in this package's `it` test target: rules that span every crate
//! (layout, docs, manifests) and behaviour that needs several crates together.
