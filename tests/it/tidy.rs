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

/// The `name` of a manifest's `[package]` table (the first `name = "..."` line).
fn package_name(manifest: &str) -> Option<String> {
    let package = manifest.split("\n[").next()?;
    package.lines().find_map(|line| {
        let value = line.strip_prefix("name = \"")?.strip_suffix('"')?;
        Some(value.to_owned())
    })
}

/// Every publishable package carries the `yetibot-` prefix; folders keep their short names.
fn expected_package_name(folder: &str) -> String {
    if folder.starts_with("yetibot-") {
        folder.to_owned()
    } else {
        format!("yetibot-{folder}")
    }
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
        "ai-commands",
        "ai-providers",
        "chat-adapters",
        "command",
        "conductor",
        "conversation",
        "discovery-cache",
        "history",
        "history-store",
        "image-fetch",
        "json-util",
        "mcp-host",
        "pull-requests",
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
        let folder = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
        let name = package_name(&manifest).unwrap_or_else(|| panic!("{folder}: no package name"));
        assert_eq!(
            name,
            expected_package_name(&folder),
            "{folder}: a library package is named `yetibot-<folder>`; the binary is `yetibot-bin`"
        );
        assert!(
            manifest.contains("[lints]\nworkspace = true"),
            "{name}: uses the workspace lints"
        );
        let readme = fs::read_to_string(dir.join("README.md")).expect("README.md");
        assert!(
            readme.starts_with(&format!("# {name}\n")),
            "{name}: README starts with its package name"
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
fn every_crate_carries_the_metadata_crates_io_needs() {
    for dir in crates() {
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).expect("manifest");
        let name = package_name(&manifest).expect("package name");
        for key in [
            "description = \"",
            "license.workspace = true",
            "repository.workspace = true",
            "rust-version.workspace = true",
            "readme = \"README.md\"",
            "keywords = [\"",
            "categories = [\"",
        ] {
            assert!(manifest.contains(key), "{name}: Cargo.toml lacks `{key}`");
        }
        assert!(
            !manifest.contains("publish = false"),
            "{name}: every crate under crates/ is published"
        );
        let keywords = list_field(&manifest, "keywords");
        assert!(
            (1..=5).contains(&keywords.len()),
            "{name}: crates.io takes one to five keywords"
        );
        for keyword in keywords {
            let valid = keyword.len() <= 20
                && keyword.starts_with(|c: char| c.is_ascii_alphabetic())
                && keyword
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            assert!(
                valid,
                "{name}: keyword `{keyword}` is not valid on crates.io"
            );
        }
        assert!(
            (1..=5).contains(&list_field(&manifest, "categories").len()),
            "{name}: crates.io takes one to five categories"
        );
    }
    let root_manifest = fs::read_to_string(root().join("Cargo.toml")).expect("root manifest");
    for key in ["license = \"", "repository = \"", "rust-version = \""] {
        assert!(
            root_manifest.contains(key),
            "the workspace declares `{key}` for every crate"
        );
    }
}

/// The quoted items of a one-line array field such as `keywords = ["a", "b"]`.
fn list_field(manifest: &str, field: &str) -> Vec<String> {
    let prefix = format!("{field} = [");
    let Some(line) = manifest.lines().find(|l| l.starts_with(&prefix)) else {
        return Vec::new();
    };
    line[prefix.len()..]
        .trim_end_matches(']')
        .split(',')
        .map(|item| item.trim().trim_matches('"').to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

#[test]
fn no_old_package_name_remains() {
    // The short names that other projects own on crates.io; a `-p`, a dependency key or a
    // Rust path naming one of them means a manifest or a script was not renamed.
    let short = [
        "redaction",
        "json-util",
        "ai-providers",
        "discovery-cache",
        "mcp-host",
        "tool-policy",
        "chat-adapters",
        "bot-core",
    ];
    let mut files = Vec::new();
    for dir in [
        "crates", "examples", "benches", "tests", "scripts", "fuzz", ".ci",
    ] {
        text_files(&root().join(dir), &mut files);
    }
    files.extend(["Cargo.toml", "README.md", "ARCHITECTURE.md"].map(|f| root().join(f)));
    for file in files {
        let text = fs::read_to_string(&file).expect("text file");
        for name in short {
            let ident = name.replace('-', "_");
            for needle in [
                format!("-p {name} "),
                format!("-p {name}\n"),
                format!("\n{name}.workspace"),
                format!("\n{name} = {{"),
            ] {
                assert!(
                    !text.contains(&needle),
                    "{}: old package name in `{}`",
                    file.display(),
                    needle.trim()
                );
            }
            if file.ends_with("Cargo.toml") {
                assert_ne!(
                    package_name(&text).as_deref(),
                    Some(name),
                    "{}: old package name",
                    file.display()
                );
            }
            let path = format!("{ident}::");
            for (at, _) in text.match_indices(&path) {
                let before = text[..at].chars().next_back();
                assert!(
                    before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':'),
                    "{}: Rust path `{path}` names the old library",
                    file.display()
                );
            }
        }
    }
}

fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_string_lossy();
        if path.is_dir() {
            if name != "target" && name != "node_modules" && name != "corpus" && name != "artifacts"
            {
                text_files(&path, out);
            }
        } else if ["rs", "md", "toml", "sh", "edn"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
            || name == "run"
        {
            out.push(path);
        }
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

/// Rust's default panic hook prints the message as it is, and a message can quote data
/// holding a credential; every program of the workspace installs the redacting hook.
#[test]
fn every_binary_installs_the_redacting_panic_hook() {
    let mut programs = vec![root().join("crates/yetibot-bin/src/main.rs")];
    for dir in crates()
        .into_iter()
        .map(|c| c.join("examples"))
        .chain([root().join("examples")])
    {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            let text = fs::read_to_string(&path).unwrap_or_default();
            if path.extension().is_some_and(|e| e == "rs") && text.contains("fn main(") {
                programs.push(path);
            }
        }
    }
    assert!(programs.len() >= 6, "{programs:?}");
    for program in programs {
        let text = fs::read_to_string(&program).expect("source");
        assert!(
            text.contains("install_panic_hook("),
            "{} must call yetibot_redaction::install_panic_hook first thing in main",
            program.display()
        );
    }
}

/// Which workspace crates each crate may depend on (normal and build dependencies), from the
/// bottom of the workspace up. An edge missing here is a layering change: make it here and in
/// ARCHITECTURE.md's code map together. Dev-dependencies may reach higher crates (tests of
/// the conductor drive the real AI commands) but never the binary.
const LAYERS: &[(&str, &[&str])] = &[
    ("yetibot-redaction", &[]),
    ("yetibot-conversation", &[]),
    ("yetibot-history", &[]),
    ("yetibot-discovery-cache", &[]),
    (
        "yetibot-json-util",
        &["yetibot-conversation", "yetibot-redaction"],
    ),
    (
        "yetibot-ai-providers",
        &[
            "yetibot-conversation",
            "yetibot-discovery-cache",
            "yetibot-redaction",
        ],
    ),
    (
        "yetibot-mcp-host",
        &["yetibot-conversation", "yetibot-redaction"],
    ),
    (
        "yetibot-tool-policy",
        &[
            "yetibot-conversation",
            "yetibot-json-util",
            "yetibot-redaction",
        ],
    ),
    (
        "yetibot-chat-adapters",
        &["yetibot-conversation", "yetibot-redaction"],
    ),
    ("yetibot-image-fetch", &["yetibot-redaction"]),
    (
        "yetibot-history-store",
        &["yetibot-history", "yetibot-redaction"],
    ),
    (
        "yetibot-pull-requests",
        &[
            "yetibot-ai-providers",
            "yetibot-conversation",
            "yetibot-mcp-host",
            "yetibot-redaction",
            "yetibot-tool-policy",
        ],
    ),
    (
        "yetibot-command",
        &[
            "yetibot-conversation",
            "yetibot-history",
            "yetibot-json-util",
            "yetibot-redaction",
        ],
    ),
    (
        "yetibot-conductor",
        &[
            "yetibot-chat-adapters",
            "yetibot-command",
            "yetibot-conversation",
            "yetibot-json-util",
            "yetibot-redaction",
        ],
    ),
    (
        "yetibot-ai-commands",
        &[
            "yetibot-ai-providers",
            "yetibot-command",
            "yetibot-conversation",
            "yetibot-discovery-cache",
            "yetibot-history",
            "yetibot-image-fetch",
            "yetibot-json-util",
            "yetibot-mcp-host",
            "yetibot-pull-requests",
            "yetibot-redaction",
            "yetibot-tool-policy",
        ],
    ),
    (
        "yetibot-bin",
        &[
            "yetibot-ai-commands",
            "yetibot-ai-providers",
            "yetibot-chat-adapters",
            "yetibot-command",
            "yetibot-conductor",
            "yetibot-conversation",
            "yetibot-discovery-cache",
            "yetibot-history",
            "yetibot-history-store",
            "yetibot-image-fetch",
            "yetibot-json-util",
            "yetibot-mcp-host",
            "yetibot-redaction",
            "yetibot-tool-policy",
        ],
    ),
];

/// Every workspace package with its workspace dependencies, as `cargo metadata` reports
/// them: `(package, dependency, kind)` with kind `None` for a normal dependency.
fn workspace_edges() -> Vec<(String, String, Option<String>)> {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut edges = Vec::new();
    for package in packages {
        let name = package["name"].as_str().expect("a name");
        for dependency in package["dependencies"].as_array().expect("dependencies") {
            let on = dependency["name"].as_str().expect("a dependency name");
            if names.contains(&on) {
                let kind = dependency["kind"].as_str().map(str::to_owned);
                edges.push((name.to_owned(), on.to_owned(), kind));
            }
        }
    }
    edges
}

#[test]
fn workspace_crates_depend_only_on_the_layers_below_them() {
    let edges = workspace_edges();
    let libraries: Vec<String> = crates()
        .iter()
        .filter_map(|dir| package_name(&fs::read_to_string(dir.join("Cargo.toml")).ok()?))
        .collect();
    for library in &libraries {
        assert!(
            LAYERS.iter().any(|(name, _)| name == library),
            "{library} has no row in LAYERS: say what it may depend on"
        );
    }
    for (package, on, kind) in &edges {
        let Some((_, allowed)) = LAYERS.iter().find(|(name, _)| name == package) else {
            continue;
        };
        match kind.as_deref() {
            Some("dev") => assert_ne!(on, "yetibot-bin", "{package} tests depend on the binary"),
            _ => assert!(
                allowed.contains(&on.as_str()),
                "{package} depends on {on}, which LAYERS does not allow: an arrow that runs up or sideways"
            ),
        }
    }
}

/// Production lines of a crate: its `src` files, each up to its `#[cfg(test)]` module (test
/// modules close a file here), and no `tests.rs` file.
fn production_lines(dir: &Path) -> usize {
    let mut files = Vec::new();
    rust_files(&dir.join("src"), &mut files);
    files
        .iter()
        .filter(|path| path.file_name().is_some_and(|n| n != "tests.rs"))
        .map(|path| {
            fs::read_to_string(path)
                .expect("a source file")
                .lines()
                .take_while(|line| line.trim() != "#[cfg(test)]")
                .count()
        })
        .sum()
}

#[test]
fn no_crate_holds_more_than_a_fifth_of_the_production_code() {
    let sizes: Vec<(PathBuf, usize)> = crates()
        .into_iter()
        .map(|dir| {
            let lines = production_lines(&dir);
            (dir, lines)
        })
        .collect();
    let total: usize = sizes.iter().map(|(_, lines)| lines).sum();
    for (dir, lines) in &sizes {
        assert!(
            lines * 5 <= total,
            "{} holds {lines} of {total} production lines, more than 20%: split it along its layers",
            dir.display()
        );
    }
}
