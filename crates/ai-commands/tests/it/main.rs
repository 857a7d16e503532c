//! The AI commands at their boundary, against a fixture provider: `ai` and `grok` prompts
//! with tools, threads and progress, and `zen`.

mod ai;
mod clef;
mod gi;
mod github;
mod github_pr;
mod wise;
mod zen;
