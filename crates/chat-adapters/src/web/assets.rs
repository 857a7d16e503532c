//! The console page: one HTML file, one script and one stylesheet, built into the binary
//! (no build step, no CDN).

/// The page.
pub(crate) const INDEX_HTML: &str = include_str!("assets/index.html");
/// Its script.
pub(crate) const APP_JS: &str = include_str!("assets/app.js");
/// Its stylesheet.
pub(crate) const STYLE_CSS: &str = include_str!("assets/style.css");
/// The page a browser gets instead of the console when it has no valid token: how to open
/// the console (served to anyone, so it holds nothing but that).
pub(crate) const LOCKED_HTML: &str = include_str!("assets/locked.html");
