//! The AI commands at their boundary, against a fixture provider: `ai` and `grok` prompts
//! with tools, threads and progress, and `zen`.

mod ai;
mod clef;
mod gi;
mod github;
mod github_pr;
mod wise;
mod zen;

use yetibot_ai_providers::{ProviderConfig, ProviderSet};
use yetibot_tool_policy::{KnownNames, PolicyConfig, ToolPolicy, ToolsetConfig};

/// The one provider `local`, model `m1`, at `url`.
fn local_provider(url: String) -> ProviderSet {
    ProviderSet::from_config(
        None,
        &[ProviderConfig {
            name: Some("local".into()),
            url: Some(url),
            model: Some("m1".into()),
            ..ProviderConfig::default()
        }],
    )
    .expect("providers")
}

/// The policy of `toolsets` (no default toolset, the default call budget) over `known`.
fn policy(toolsets: &[ToolsetConfig], known: &KnownNames<'_>) -> ToolPolicy {
    ToolPolicy::from_config(
        &PolicyConfig {
            toolsets,
            default_toolset: None,
            max_tool_calls: None,
        },
        known,
    )
    .expect("a valid policy")
}
