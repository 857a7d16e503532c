//! The console page: one HTML file, one script and one stylesheet, built into the binary
//! (no build step, no CDN).

/// The page.
pub(crate) const INDEX_HTML: &str = include_str!("assets/index.html");
/// Its script.
pub(crate) const APP_JS: &str = include_str!("assets/app.js");
/// Its stylesheet.
pub(crate) const STYLE_CSS: &str = include_str!("assets/style.css");
