//! Source rules: only the config mapping may look at provider hosts or names.

use std::fs;
use std::path::Path;

#[test]
fn only_the_config_mapping_knows_hosts_and_names() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let needles = [
        "cloudflare.com",
        "opencode.ai",
        "x.ai",
        "openai.com",
        "localhost",
        "name() ==",
        "\"grok\"",
        "\"zen\"",
        "\"cloudflare\"",
        "host_str",
    ];
    let mut checked = 0;
    for entry in fs::read_dir(&src).expect("src") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        // capability.rs is the mapping; config.rs validates names and URLs but must not
        // branch on particular ones.
        if file == "capability.rs" || !file.ends_with(".rs") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("source");
        // Unit tests may use provider names as data.
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for needle in needles {
            if file == "config.rs" && needle == "host_str" {
                continue;
            }
            assert!(!text.contains(needle), "{file} mentions {needle}");
        }
        checked += 1;
    }
    assert!(checked >= 8);
}
