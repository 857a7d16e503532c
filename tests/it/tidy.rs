//! Layout and hygiene rules that every crate follows, checked on the source tree.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn crates() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root().join("crates"))
        .expect("crates/ exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_crate_has_docs_a_readme_and_workspace_lints() {
    let expected = [
        "ai-providers",
        "bot-core",
        "chat-adapters",
        "discovery-cache",
        "json-util",
        "mcp-host",
        "redaction",
        "tool-policy",
        "yetibot-bin",
    ];
    let names: Vec<String> = crates()
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, expected);
    for dir in crates() {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "{name}: package name = folder name"
        );
        assert!(
            manifest.contains("[lints]\nworkspace = true"),
            "{name}: uses the workspace lints"
        );
        assert!(
            manifest.contains("readme = \"README.md\""),
            "{name}: declares its README"
        );
        let readme = fs::read_to_string(dir.join("README.md")).expect("README.md");
        assert!(
            readme.starts_with(&format!("# {name}\n")),
            "{name}: README starts with its name"
        );
        assert!(
            readme.contains("```rust"),
            "{name}: README has a runnable example"
        );
        let lib = fs::read_to_string(dir.join("src/lib.rs")).expect("lib.rs");
        assert!(
            lib.starts_with("#![doc = include_str!(\"../README.md\")]"),
            "{name}: docs are the README"
        );
    }
}

#[test]
fn dependencies_are_declared_once_in_the_workspace() {
    for dir in crates()
        .into_iter()
        .chain(["examples", "benches", "tests"].map(|d| root().join(d)))
    {
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
        let mut section = String::new();
        for line in manifest.lines() {
            if line.starts_with('[') {
                section = line.to_owned();
                continue;
            }
            if !section.contains("dependencies") || line.trim().is_empty() {
                continue;
            }
            let ok = line.contains(".workspace = true") || line.contains("workspace = true");
            // The workspace-level test package may name the binary crate by path: it is not
            // published and the binary crate is not a library dependency of anything else.
            let path_ok = dir.ends_with("tests") && line.starts_with("yetibot-bin = { path");
            assert!(
                ok || path_ok,
                "{}: `{line}` must come from [workspace.dependencies]",
                dir.display()
            );
        }
    }
}

#[test]
fn every_source_file_says_what_it_is_for() {
    let mut files = Vec::new();
    for dir in ["crates", "examples", "benches", "tests"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 20);
    for file in files {
        let text = fs::read_to_string(&file).expect("source");
        let first = text.lines().next().unwrap_or_default();
        let is_lib_root =
            file.ends_with("src/lib.rs") && first.starts_with("#![doc = include_str!");
        assert!(
            first.starts_with("//!") || is_lib_root,
            "{}: the first line should be a `//!` line saying what the file is for",
            file.display()
        );
    }
}

#[test]
fn only_the_binary_reads_the_environment() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    for file in files {
        let text = fs::read_to_string(&file).expect("source");
        let in_loader = file.ends_with("yetibot-bin/src/config/environment.rs");
        let is_test = file.components().any(|c| c.as_os_str() == "tests");
        // Example programs are binaries, not library code; each read there must still opt
        // out of the clippy rule explicitly.
        let is_example = file.components().any(|c| c.as_os_str() == "examples");
        if in_loader || is_test {
            continue;
        }
        if is_example {
            let reads = text.contains("env::var");
            assert!(
                !reads || text.contains("clippy::disallowed_methods"),
                "{} reads the environment without an explicit #[expect]",
                file.display()
            );
            continue;
        }
        for needle in [
            "env::var",
            "env::vars",
            "env::var_os",
            "env::set_var",
            "env::remove_var",
        ] {
            assert!(
                !text.contains(needle),
                "{} reads the environment ({needle})",
                file.display()
            );
        }
    }
}
