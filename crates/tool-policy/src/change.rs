//! Which files a `github-pr` toolset's proposals may touch, decided from the path's text
//! alone (no I/O): a normalized relative path, inside an `:allowed-paths` prefix and outside
//! every `:denied-paths` one, and never a place whose change is dangerous whatever the
//! configuration says (Git's own data, environment files, keys and credentials, CI
//! workflows).

use crate::config::GithubPolicy;

/// The longest path a proposal may name, in bytes.
pub const MAX_CHANGE_PATH_BYTES: usize = 256;

/// Why a path may not be changed. The texts name the rule, never the configuration's
/// prefixes, so a refusal tells the model only what it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    /// Empty, absolute, longer than [`MAX_CHANGE_PATH_BYTES`], or with an empty, `.` or `..`
    /// segment, a backslash, a control character or an invisible or bidirectional formatting
    /// character ([`is_hidden_character`]).
    #[error(
        "the path must be a plain relative path (no leading /, no . or .. segments, no backslashes)"
    )]
    NotPlain,
    /// Inside a `.git` directory, or a `.gitmodules` file.
    #[error("Git's own files cannot be changed")]
    GitData,
    /// An environment file (`.env`, `.env.local`, ...).
    #[error("environment files cannot be changed")]
    Environment,
    /// A key, certificate or credential file by its name.
    #[error("secret and key files cannot be changed")]
    SecretFile,
    /// Anything under `.github/` (workflows, and the local actions they run) or a
    /// `.gitattributes` file (which can hide files from review).
    #[error("workflow and repository settings files (.github/, .gitattributes) cannot be changed")]
    Workflow,
    /// Not under any `:allowed-paths` prefix.
    #[error("the path is outside the toolset's allowed paths")]
    NotAllowed,
    /// Under a `:denied-paths` prefix.
    #[error("the path is inside the toolset's denied paths")]
    Denied,
}

/// File names (compared without case) that hold keys or credentials.
const SECRET_NAMES: &[&str] = &[
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".pgpass",
    "credentials",
    "credentials.json",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
];

/// Extensions (compared without case) of key, certificate and keystore files.
const SECRET_EXTENSIONS: &[&str] = &[
    "pem", "key", "p12", "pfx", "jks", "keystore", "der", "crt", "cer", "gpg", "asc", "kdbx", "ppk",
];

/// Whether `c` is an invisible or bidirectional formatting character, which can make text
/// read differently from what it is (zero-width spaces and joiners, the word joiner and
/// invisible operators, bidirectional embeddings, overrides, isolates and marks, the byte
/// order mark, soft hyphen, line and paragraph separators, interlinear annotation marks).
#[must_use]
pub fn is_hidden_character(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{061c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
    )
}

/// Checks that a proposal may change `path` under `policy`. Prefixes are literal: `src/`
/// covers `src/a.rs` but not `src2/a.rs`, and `src` covers both, exactly as written.
///
/// # Errors
///
/// The first [`PathRefusal`] that applies.
pub fn check_change_path(path: &str, policy: &GithubPolicy) -> Result<(), PathRefusal> {
    if path.is_empty()
        || path.len() > MAX_CHANGE_PATH_BYTES
        || path.starts_with('/')
        || path.contains('\\')
        || path
            .chars()
            .any(|c| c.is_control() || is_hidden_character(c))
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(PathRefusal::NotPlain);
    }
    let lower: Vec<String> = path.split('/').map(str::to_ascii_lowercase).collect();
    if lower.iter().any(|s| s == ".git") || lower.last().is_some_and(|s| s == ".gitmodules") {
        return Err(PathRefusal::GitData);
    }
    let name = lower.last().map_or("", String::as_str);
    if name == ".env" || name.starts_with(".env.") {
        return Err(PathRefusal::Environment);
    }
    let extension = name.rsplit_once('.').map(|(_, e)| e);
    if SECRET_NAMES.contains(&name)
        || name.starts_with("id_rsa")
        || name.starts_with("id_ed25519")
        || extension.is_some_and(|e| SECRET_EXTENSIONS.contains(&e))
    {
        return Err(PathRefusal::SecretFile);
    }
    if lower[0] == ".github" || name == ".gitattributes" {
        return Err(PathRefusal::Workflow);
    }
    if !policy
        .allowed_paths
        .iter()
        .any(|p| path.starts_with(p.as_str()))
    {
        return Err(PathRefusal::NotAllowed);
    }
    if policy
        .denied_paths
        .iter()
        .any(|p| path.starts_with(p.as_str()))
    {
        return Err(PathRefusal::Denied);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn policy() -> GithubPolicy {
        GithubPolicy {
            repositories: vec!["your-org/your-repo".to_owned()],
            base_branches: vec!["main".to_owned()],
            allowed_paths: vec!["src/".to_owned(), "doc/".to_owned(), ".github/".to_owned()],
            denied_paths: vec!["src/credentials/".to_owned()],
            branch_prefix: None,
            write_server: Some("w".to_owned()),
        }
    }

    #[test]
    fn only_plain_allowed_paths_pass() {
        for ok in [
            "src/example.clj",
            "doc/a b.md",
            "src/deep/er/x.rs",
            "src/.envrc.md",
        ] {
            assert_eq!(check_change_path(ok, &policy()), Ok(()), "{ok}");
        }
        let refused = [
            ("", PathRefusal::NotPlain),
            ("/src/a", PathRefusal::NotPlain),
            ("src//a", PathRefusal::NotPlain),
            ("src/./a", PathRefusal::NotPlain),
            ("src/../etc/passwd", PathRefusal::NotPlain),
            ("src\\a", PathRefusal::NotPlain),
            ("src/a\n", PathRefusal::NotPlain),
            ("src/", PathRefusal::NotPlain),
            ("src/.git/config", PathRefusal::GitData),
            ("src/.GIT/hooks/x", PathRefusal::GitData),
            ("src/.gitmodules", PathRefusal::GitData),
            ("src/.env", PathRefusal::Environment),
            ("src/.env.production", PathRefusal::Environment),
            ("src/server.pem", PathRefusal::SecretFile),
            ("src/id_rsa.pub", PathRefusal::SecretFile),
            ("src/CREDENTIALS", PathRefusal::SecretFile),
            (".github/workflows/ci.yml", PathRefusal::Workflow),
            (".github/actions/setup/action.yml", PathRefusal::Workflow),
            (".github/CODEOWNERS", PathRefusal::Workflow),
            ("src/.gitattributes", PathRefusal::Workflow),
            ("src/a\u{202e}lmx.exe", PathRefusal::NotPlain),
            ("src/zero\u{200b}width.rs", PathRefusal::NotPlain),
            ("src2/a.rs", PathRefusal::NotAllowed),
            ("README.md", PathRefusal::NotAllowed),
            ("src/credentials/a.clj", PathRefusal::Denied),
        ];
        for (path, why) in refused {
            assert_eq!(check_change_path(path, &policy()), Err(why), "{path:?}");
        }
        assert_eq!(
            check_change_path(&format!("src/{}", "a".repeat(300)), &policy()),
            Err(PathRefusal::NotPlain)
        );
    }

    proptest! {
        /// A path that passes has no traversal and stays under an allowed prefix.
        #[test]
        fn a_passing_path_stays_inside(path in "[a-z./\\\\-]{0,30}") {
            if check_change_path(&path, &policy()).is_ok() {
                prop_assert!(!path.split('/').any(|s| s == ".." || s == "." || s.is_empty()));
                prop_assert!(path.starts_with("src/") || path.starts_with("doc/") || path.starts_with(".github/"));
                prop_assert!(!path.starts_with("src/credentials/"));
            }
        }
    }
}
