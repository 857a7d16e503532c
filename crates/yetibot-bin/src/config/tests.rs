//! Loading tests: every configuration example of the specification, and one case per rule.

use std::path::Path;

use yetibot_ai_providers::{Credential, WireApi};
use yetibot_mcp_host::Transport;

use super::{Config, load, summary};

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn ok(edn: &str, env: &[(&str, &str)]) -> Config {
    let file = (!edn.is_empty()).then_some((Path::new("test.edn"), edn));
    match load(file, &vars(env)) {
        Ok(config) => config,
        Err(invalid) => panic!("expected a valid configuration, got:\n{invalid}"),
    }
}

/// Asserts that loading fails with exactly these `path: reason` lines (in any order).
fn err(edn: &str, env: &[(&str, &str)], expected: &[&str]) {
    let file = (!edn.is_empty()).then_some((Path::new("test.edn"), edn));
    let Err(invalid) = load(file, &vars(env)) else {
        panic!("expected problems {expected:?}, but the configuration loaded");
    };
    let mut got: Vec<String> = invalid.problems.iter().map(ToString::to_string).collect();
    let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

/// Wraps the inside of the `:ai` map.
fn ai(inner: &str) -> String {
    format!("{{:yetibot {{:ai {inner}}}}}")
}

/// One provider entry with extra fields.
fn provider(fields: &str) -> String {
    ai(&format!(
        r#"{{:providers [{{:name "p" :url "https://api.example.com/v1" {fields}}}]}}"#
    ))
}

/// The `:mcp` map with one remote server plus extra `:mcp` entries.
fn mcp(inner: &str) -> String {
    ai(&format!("{{:mcp {{{inner}}}}}"))
}

// ----- Every configuration example in ai-command.md -----

const SPEC_PROVIDERS: &str = r#"
{:yetibot
 {:ai
  {:default-provider "openai"
   :providers
   [{:name "openai"
     :url "https://api.openai.com/v1"
     :key "YOUR_API_KEY"
     :model "gpt-4o-mini"}
    {:name "local"
     :url "http://localhost:11434/v1"
     :model "llama3.2"}]}}}"#;

#[test]
fn spec_provider_file_example() {
    let config = ok(SPEC_PROVIDERS, &[]);
    let providers = config.providers.providers();
    assert_eq!(providers.len(), 2);
    assert_eq!(
        config.providers.default_provider().map(|p| p.name()),
        Some("openai")
    );
    assert!(matches!(providers[0].credential(), Credential::Inline(_)));
    assert_eq!(providers[1].credential(), &Credential::None);
    assert_eq!(providers[1].base_url(), "http://localhost:11434/v1");
}

#[test]
fn spec_provider_environment_example() {
    let config = ok(
        "",
        &[
            ("YETIBOT_AI_DEFAULT_PROVIDER", "openai"),
            ("YETIBOT_AI_PROVIDERS_0_NAME", "openai"),
            ("YETIBOT_AI_PROVIDERS_0_URL", "https://api.openai.com/v1"),
            ("YETIBOT_AI_PROVIDERS_0_KEY", "YOUR_API_KEY"),
            ("YETIBOT_AI_PROVIDERS_0_MODEL", "gpt-4o-mini"),
            ("YETIBOT_AI_PROVIDERS_1_NAME", "local"),
            ("YETIBOT_AI_PROVIDERS_1_URL", "http://localhost:11434/v1"),
            ("YETIBOT_AI_PROVIDERS_1_MODEL", "llama3.2"),
        ],
    );
    let providers = config.providers.providers();
    assert_eq!(providers.len(), 2);
    assert_eq!(providers[0].model(), Some("gpt-4o-mini"));
    assert_eq!(providers[1].name(), "local");
    assert_eq!(
        config.providers.default_provider().map(|p| p.name()),
        Some("openai")
    );
}

#[test]
fn spec_key_file_environment_example() {
    let config = ok(
        "",
        &[
            ("YETIBOT_AI_PROVIDERS_0_NAME", "zen"),
            (
                "YETIBOT_AI_PROVIDERS_0_URL",
                "https://opencode.ai/inference/openai/v1",
            ),
            (
                "YETIBOT_AI_PROVIDERS_0_KEY_FILE",
                "/absolute/private/token-file",
            ),
        ],
    );
    assert_eq!(
        config.providers.providers()[0].credential(),
        &Credential::KeyFile("/absolute/private/token-file".into())
    );
}

#[test]
fn spec_zen_cloudflare_and_grok_provider_examples() {
    let config = ok(
        &ai(r#"{:providers
          [{:name "zen"
            :url "https://opencode.ai/inference/openai/v1"
            :key-file "/run/secrets/opencode-zen-api-key"}
           {:name "zen-gpt" :url "https://opencode.ai/inference/openai/v1"
            :key "REPLACE_WITH_OPENCODE_ZEN_API_KEY" :model "gpt-5.4-mini" :api "responses"}
           {:name "cloudflare"
            :url "https://api.cloudflare.com/client/v4/accounts/ACCOUNT_ID/ai/v1"
            :key-file "/run/secrets/cloudflare-workers-ai-token"
            :model "@cf/zai-org/glm-4.7-flash"
            :gateway-id "my-gateway"}
           {:name "grok"
            :url "https://api.x.ai/v1"
            :key "YOUR_XAI_API_KEY"
            :model "grok-4.7"
            :api "responses"
            :native-tools ["web_search" "x_search"]
            :max-turns 6}]}"#),
        &[],
    );
    let cloudflare = config.providers.get("cloudflare").expect("cloudflare");
    assert_eq!(cloudflare.gateway_id(), Some("my-gateway"));
    let grok = config.providers.get("grok").expect("grok");
    assert_eq!(grok.api(), WireApi::Responses);
    assert_eq!(grok.native_tools(), ["web_search", "x_search"]);
    assert_eq!(grok.max_turns(), 6);
    assert_eq!(
        config.providers.default_provider().map(|p| p.name()),
        Some("zen")
    );
}

#[test]
fn spec_native_only_toolset_example() {
    let config = ok(
        &ai(
            r#"{:providers [{:name "grok" :url "https://api.x.ai/v1" :api "responses"}]
          :mcp {:servers []
                :max-tool-calls 6
                :toolsets
                [{:name "yetibot_read"
                  :kind "search"
                  :servers []
                  :native-tools ["help" "history" "history_count" "release_info"]
                  :users ["U0123456789"]
                  :adapters ["slack"]
                  :providers [{:name "grok" :models ["grok-4.7"]}]}]}}"#,
        ),
        &[],
    );
    let toolset = config.policy.default_toolset().expect("toolset");
    assert_eq!(toolset.name, "yetibot_read");
    assert_eq!(toolset.native_tools.as_ref().map(Vec::len), Some(4));
    assert_eq!(config.policy.max_tool_calls(), Some(6));
}

#[test]
fn spec_devth_server_example() {
    let config = ok(
        &ai(r#"{:mcp {:servers [{:name "devth" :url "https://devth.com/mcp"}]}}"#),
        &[],
    );
    assert_eq!(config.servers.servers()[0].tools(), None);
}

#[test]
fn spec_reviewed_subsets_example() {
    let config = ok(
        &ai(r#"{:mcp
          {:max-tool-calls 6
           :timeout-ms 30000
           :servers
           [{:name "exa" :url "https://mcp.exa.ai/mcp" :tools ["web_search_exa"]}
            {:name "tavily"
             :url "https://mcp.tavily.com/mcp/"
             :headers {"Authorization" "Bearer YOUR_TAVILY_API_KEY"}
             :tools ["tavily-search"]}
            {:name "searxng" :url "http://localhost:8080/mcp" :tools ["searxng_web_search"]}]}}"#),
        &[],
    );
    let tavily = config.servers.get("tavily").expect("tavily");
    match tavily.transport() {
        // The trailing slash is kept: MCP endpoints are used exactly as written.
        Transport::Http { url, headers } => {
            assert_eq!(url, "https://mcp.tavily.com/mcp/");
            assert_eq!(headers[0].0, "Authorization");
        }
        Transport::Stdio { .. } => panic!("tavily is remote"),
    }
    assert_eq!(config.servers.timeout().as_millis(), 30_000);
}

#[test]
fn spec_remote_server_environment_example() {
    let config = ok(
        "",
        &[
            ("YETIBOT_AI_MCP_SERVERS_0_NAME", "tavily"),
            (
                "YETIBOT_AI_MCP_SERVERS_0_URL",
                "https://mcp.tavily.com/mcp/",
            ),
            (
                "YETIBOT_AI_MCP_SERVERS_0_HEADERS_AUTHORIZATION",
                "Bearer YOUR_TAVILY_API_KEY",
            ),
            ("YETIBOT_AI_MCP_SERVERS_0_TOOLS_0", "tavily-search"),
            ("YETIBOT_AI_MCP_MAX_TOOL_CALLS", "6"),
        ],
    );
    let server = &config.servers.servers()[0];
    assert_eq!(server.tools(), Some(&["tavily-search".to_owned()][..]));
    match server.transport() {
        Transport::Http { headers, .. } => {
            assert_eq!(headers[0].0, "AUTHORIZATION");
            assert_eq!(headers[0].1.expose(), "Bearer YOUR_TAVILY_API_KEY");
        }
        Transport::Stdio { .. } => panic!("remote"),
    }
    assert_eq!(config.policy.max_tool_calls(), Some(6));
}

#[test]
fn spec_local_process_example() {
    let config = ok(
        &ai(r#"{:mcp
          {:servers
           [{:name "exa"
             :command "npx"
             :args ["-y" "exa-mcp-server"]
             :env {"EXA_API_KEY" "YOUR_EXA_API_KEY"}
             :tools ["web_search_exa"]}
            {:name "searxng"
             :command "npx"
             :args ["-y" "mcp-searxng"]
             :env {"SEARXNG_URL" "http://your-searxng-instance:8080"}
             :tools ["searxng_web_search"]}]}}"#),
        &[],
    );
    match config.servers.servers()[0].transport() {
        Transport::Stdio { command, args, env } => {
            assert_eq!(command, "npx");
            assert_eq!(args, &["-y", "exa-mcp-server"]);
            assert_eq!(env[0].0, "EXA_API_KEY");
        }
        Transport::Http { .. } => panic!("local"),
    }
}

const EXA_FILE: &str = r#"{:yetibot {:ai {:mcp {:servers [{:name "exa" :url "https://mcp.exa.ai/mcp" :tools ["web_search_exa"]}]}}}}"#;

#[test]
fn spec_x_server_example() {
    ok(
        &ai(r#"{:mcp {:servers [{:name "x"
             :url "https://api.x.com/mcp"
             :headers {"Authorization" "Bearer YOUR_X_APP_ONLY_BEARER_TOKEN"}
             :tools ["POST_SEARCH_TOOL_FROM_TOOLS_LIST"]}]}}"#),
        &[],
    );
}

#[test]
fn spec_x_server_environment_example_after_exa() {
    let config = ok(
        EXA_FILE,
        &[
            ("YETIBOT_AI_MCP_SERVERS_1_NAME", "x"),
            ("YETIBOT_AI_MCP_SERVERS_1_URL", "https://api.x.com/mcp"),
            (
                "YETIBOT_AI_MCP_SERVERS_1_HEADERS_AUTHORIZATION",
                "Bearer token-from-environment",
            ),
            (
                "YETIBOT_AI_MCP_SERVERS_1_TOOLS_0",
                "POST_SEARCH_TOOL_FROM_TOOLS_LIST",
            ),
        ],
    );
    let names: Vec<&str> = config.servers.servers().iter().map(|s| s.name()).collect();
    assert_eq!(names, ["exa", "x"]);
}

const SPEC_TOOLSETS: &str = r#"
{:yetibot {:ai
{:providers
 [{:name "local"
   :url "http://localhost:1234/v1"
   :model "YOUR_TOOL_CAPABLE_MODEL"
   :tool-calling true
   :tool-choice "standard"}]
 :default-provider "local"
 :mcp
 {:default-toolset "search"
  :max-tool-calls 6
  :timeout-ms 30000
  :servers
  [{:name "web"
    :url "https://mcp.exa.ai/mcp"
    :tools ["web_search_exa"]}
   {:name "github-read"
    :command "/usr/local/bin/github-mcp-server"
    :args ["stdio" "--read-only" "--tools" "get_file_contents,get_commit,list_branches,issue_read,pull_request_read,search_code"]
    :env {"GITHUB_PERSONAL_ACCESS_TOKEN" "READ_TOKEN_PLACEHOLDER"}
    :github-api-token "READ_TOKEN_PLACEHOLDER"
    :tools ["get_file_contents" "get_commit" "list_branches"
            "issue_read" "pull_request_read" "search_code"]}
   {:name "github-write"
    :command "/usr/local/bin/github-mcp-server"
    :args ["stdio" "--tools" "create_branch,push_files,create_pull_request"]
    :env {"GITHUB_PERSONAL_ACCESS_TOKEN" "WRITE_TOKEN_PLACEHOLDER"}
    :tools ["create_branch" "push_files" "create_pull_request"]}]
  :toolsets
  [{:name "search"
    :kind "search"
    :servers [{:name "web"}]}
   {:name "github-read"
    :kind "github-read"
    :users ["SLACK_USER_ID"]
    :adapters ["slack"]
    :repositories ["your-org/your-repo"]
    :providers [{:name "local" :models ["YOUR_TOOL_CAPABLE_MODEL"]}]
    :servers [{:name "github-read"}]}
   {:name "github-pr"
    :kind "github-pr"
    :users ["SLACK_USER_ID"]
    :adapters ["slack"]
    :repositories ["your-org/your-repo"]
    :providers [{:name "local" :models ["YOUR_TOOL_CAPABLE_MODEL"]}]
    :base-branches ["main"]
    :allowed-paths ["src/" "test/" "doc/"]
    :denied-paths ["src/credentials/"]
    :branch-prefix "yetibot/ai-"
    :write-server "github-write"
    :servers [{:name "github-read"}]}]}
 INTENT_ROUTER}}}"#;

#[test]
fn spec_named_toolsets_example() {
    let config = ok(&SPEC_TOOLSETS.replace("INTENT_ROUTER", ""), &[]);
    assert_eq!(config.policy.toolsets().len(), 3);
    let pr = config.policy.get("github-pr").expect("github-pr");
    let github = pr.github.as_ref().expect("github fields");
    assert_eq!(github.write_server.as_deref(), Some("github-write"));
    assert_eq!(github.branch_prefix.as_deref(), Some("yetibot/ai-"));
    assert!(
        config
            .servers
            .get("github-read")
            .and_then(|s| s.github_api_token())
            .is_some()
    );
}

#[test]
fn spec_named_toolsets_environment_example() {
    let config = ok(
        r#"{:yetibot {:ai {:providers [{:name "local" :url "http://localhost:1234/v1"}]
                           :mcp {:servers [{:name "web" :url "https://mcp.exa.ai/mcp"}]}}}}"#,
        &[
            ("YETIBOT_AI_PROVIDERS_0_TOOL_CALLING", "true"),
            ("YETIBOT_AI_PROVIDERS_0_TOOL_CHOICE", "standard"),
            ("YETIBOT_AI_MCP_DEFAULT_TOOLSET", "search"),
            ("YETIBOT_AI_MCP_TOOLSETS_0_NAME", "search"),
            ("YETIBOT_AI_MCP_TOOLSETS_0_KIND", "search"),
            ("YETIBOT_AI_MCP_TOOLSETS_0_SERVERS_0_NAME", "web"),
        ],
    );
    assert!(config.providers.providers()[0].tool_calling());
    assert_eq!(
        config.policy.default_toolset().map(|t| t.name.as_str()),
        Some("search")
    );
}

#[test]
fn spec_github_token_environment_example() {
    let config = ok(
        &SPEC_TOOLSETS.replace("INTENT_ROUTER", ""),
        &[
            (
                "YETIBOT_AI_MCP_SERVERS_1_ENV_GITHUB_PERSONAL_ACCESS_TOKEN",
                "github_pat_reader_0123456789",
            ),
            (
                "YETIBOT_AI_MCP_SERVERS_2_ENV_GITHUB_PERSONAL_ACCESS_TOKEN",
                "github_pat_writer_0123456789",
            ),
            (
                "YETIBOT_AI_MCP_SERVERS_1_GITHUB_API_TOKEN",
                "github_pat_reader_0123456789",
            ),
        ],
    );
    let reader = config.servers.get("github-read").expect("reader");
    match reader.transport() {
        Transport::Stdio { env, .. } => {
            assert_eq!(
                env.len(),
                1,
                "the environment replaces the file's value, not adds a key"
            );
            assert_eq!(env[0].0, "GITHUB_PERSONAL_ACCESS_TOKEN");
            assert_eq!(env[0].1.expose(), "github_pat_reader_0123456789");
        }
        Transport::Http { .. } => panic!("local"),
    }
    assert_eq!(
        reader
            .github_api_token()
            .map(yetibot_redaction::Secret::expose),
        Some("github_pat_reader_0123456789")
    );
}

#[test]
fn spec_intent_router_examples() {
    let automatic = r#":intent-router
        {:enabled false
         :account-id "0123456789abcdef0123456789abcdef"
         :key-file "/root/yetibot/config/.clef-api-token"
         :github-toolset "github-pr"
         :min-probability 0.95}"#;
    let config = ok(&SPEC_TOOLSETS.replace("INTENT_ROUTER", automatic), &[]);
    assert_eq!(
        config.intent_router.as_ref().map(|r| r.min_probability),
        Some(0.95)
    );

    let clef = ok(
        &ai(r#"{:intent-router
          {:enabled false
           :account-id "0123456789abcdef0123456789abcdef"
           :key-file "/run/secrets/cloudflare-workers-ai-token"
           :gateway-id "my-gateway"}}"#),
        &[],
    );
    assert_eq!(
        clef.intent_router.and_then(|r| r.gateway_id).as_deref(),
        Some("my-gateway")
    );
}

#[test]
fn spec_intent_router_environment_example() {
    let config = ok(
        "",
        &[
            (
                "YETIBOT_AI_INTENT_ROUTER_ACCOUNT_ID",
                "0123456789abcdef0123456789abcdef",
            ),
            (
                "YETIBOT_AI_INTENT_ROUTER_KEY_FILE",
                "/run/secrets/cloudflare-workers-ai-token",
            ),
            ("YETIBOT_AI_INTENT_ROUTER_GATEWAY_ID", "my-gateway"),
        ],
    );
    let router = config.intent_router.expect("router");
    assert_eq!(router.account_id, "0123456789abcdef0123456789abcdef");
    assert_eq!(
        router.key_file,
        Path::new("/run/secrets/cloudflare-workers-ai-token")
    );
}

#[test]
fn example_file_loads_and_covers_every_schema_key() {
    let text = include_str!("../../../../config/config.example.edn");
    let config = ok(text, &[]);
    assert_eq!(config.providers.providers().len(), 5);
    // Every key that the schema knows appears in the example, so the example documents all.
    let tree = yetibot_json_util::edn::parse(text).expect("example parses");
    let mut missing = Vec::new();
    covers(&tree, &super::schema::ROOT, "", &mut missing);
    assert!(
        missing.is_empty(),
        "keys missing from config.example.edn: {missing:?}"
    );
}

fn covers(
    value: &serde_json::Value,
    shape: &super::schema::Shape,
    path: &str,
    missing: &mut Vec<String>,
) {
    use super::schema::Shape;
    match (shape, value) {
        (Shape::Section { fields, .. }, serde_json::Value::Object(map)) => {
            for field in *fields {
                if matches!(field.shape, Shape::Legacy) {
                    continue;
                }
                match map.get(field.key) {
                    Some(child) => covers(
                        child,
                        field.shape,
                        &super::schema::join(path, field.key),
                        missing,
                    ),
                    None => missing.push(super::schema::join(path, field.key)),
                }
            }
        }
        (Shape::Named(item), serde_json::Value::Object(map)) => {
            // Each key of the entry type must appear in at least one entry.
            let entries: Vec<serde_json::Value> = map.values().cloned().collect();
            covers(
                &serde_json::Value::Array(entries),
                &Shape::List(item),
                path,
                missing,
            );
        }
        (Shape::List(item), serde_json::Value::Array(items)) => {
            // Each key of an item type must appear in at least one item.
            let mut per_item: Vec<Vec<String>> = Vec::new();
            for value in items {
                let mut m = Vec::new();
                covers(value, item, &format!("{path}[]"), &mut m);
                per_item.push(m);
            }
            if let Some(first) = per_item.first() {
                for key in first {
                    if per_item.iter().all(|m| m.contains(key)) {
                        missing.push(key.clone());
                    }
                }
            } else if matches!(item, Shape::Section { .. }) {
                missing.push(format!("{path}[] (empty)"));
            }
        }
        _ => {}
    }
}

// ----- Chat adapters -----

#[test]
fn slack_adapters_from_the_file_and_the_environment() {
    let file = r#"{:yetibot {:adapters {:myteam {:type "slack" :token "xoxb-file-token"
                                            :app-token "xapp-file-token"}}}}"#;
    let config = ok(file, &[]);
    let slack = &config.adapters.slack[0];
    assert_eq!(slack.connection, "myteam");
    assert_eq!(slack.api_url, "https://slack.com/api");
    // The environment names an entry by the fewest words after which a setting follows,
    // and overrides the file's field.
    let config = ok(
        file,
        &[
            ("YETIBOT_ADAPTERS_MYTEAM_APP_TOKEN", "xapp-env-token"),
            ("YETIBOT_ADAPTERS_MY_TEAM_TYPE", "slack"),
            ("YETIBOT_ADAPTERS_MY_TEAM_TOKEN", "xoxb-second-token"),
            ("YETIBOT_ADAPTERS_MY_TEAM_APP_TOKEN", "xapp-second-token"),
            (
                "YETIBOT_ADAPTERS_MY_TEAM_API_URL",
                "https://slack-gov.example/api/",
            ),
        ],
    );
    let names: Vec<&str> = config
        .adapters
        .slack
        .iter()
        .map(|s| s.connection.as_str())
        .collect();
    assert_eq!(names, ["my-team", "myteam"]);
    assert_eq!(
        config.adapters.slack[0].api_url,
        "https://slack-gov.example/api"
    );
    assert_eq!(
        config.adapters.slack[1].app_token.expose(),
        "xapp-env-token"
    );
    // Every token joins the redaction set, and the summary shows none of them.
    let text = summary(&config);
    for token in [
        "xoxb-file-token",
        "xapp-env-token",
        "xoxb-second-token",
        "xapp-second-token",
    ] {
        assert!(config.secrets.contains_secret(token), "{token}");
        assert!(!text.contains(token), "{text}");
    }
    assert!(text.contains("myteam slack (Socket Mode) api https://slack.com/api; bot token [redacted], app token [redacted]"), "{text}");
}

#[test]
fn adapter_problems_name_the_path_and_never_the_value() {
    err(
        r#"{:yetibot {:adapters {:a {:type "irc" :token "SECRET-1"}
                                 :b {:type "slack" :token "xoxp-SECRET-2" :app-tokn "x"}
                                 :c {:type "slack" :token "xoxb-x" :app-token "xapp-y"
                                     :api-url "http://slack.example/api"}}}}"#,
        &[],
        // Every problem at once: the unknown key (with the key meant) and what the
        // semantic checks find in the rest.
        &[
            "yetibot.adapters.a.type: must be \"slack\" or \"discord\"",
            "yetibot.adapters.b.app-token: is required",
            "yetibot.adapters.b.app-tokn: is not a known setting; did you mean :app-token?",
            "yetibot.adapters.b.token: must be a bot token (it starts with xoxb-)",
            "yetibot.adapters.c.api-url: must use https (plain http only for a loopback host, as in tests)",
        ],
    );
    err(
        r#"{:yetibot {:adapters {:a {:type "irc" :token "SECRET-1"}
                                 :b {:type "slack" :token "xoxp-SECRET-2"}
                                 :c {:type "slack" :token "xoxb-x" :app-token "xapp-y"
                                     :api-url "http://slack.example/api"}}}}"#,
        &[],
        &[
            "yetibot.adapters.a.type: must be \"slack\" or \"discord\"",
            "yetibot.adapters.b.token: must be a bot token (it starts with xoxb-)",
            "yetibot.adapters.b.app-token: is required",
            "yetibot.adapters.c.api-url: must use https (plain http only for a loopback host, as in tests)",
        ],
    );
    err(
        "",
        &[("YETIBOT_ADAPTERS_MYTEAM", "slack")],
        &[
            "environment YETIBOT_ADAPTERS_MYTEAM: needs an entry's name followed by one of its settings",
        ],
    );
    err(
        r#"{:yetibot {:adapters {:a "slack"}}}"#,
        &[],
        &["yetibot.adapters.a: expected a map"],
    );
}

#[test]
fn discord_adapters_from_the_file_and_the_environment() {
    let config = ok(
        r#"{:yetibot {:adapters {:guild {:type "discord" :token "discord-bot-token-123"
                                        :http-proxy "127.0.0.1:3000"
                                        :shards {:first 0 :last 1 :total 4}}}}}"#,
        &[("YETIBOT_ADAPTERS_GUILD_GATEWAY_URL", "ws://127.0.0.1:4000")],
    );
    assert!(config.adapters.slack.is_empty());
    let discord = &config.adapters.discord[0];
    assert_eq!(discord.connection, "guild");
    assert_eq!(discord.shards, Some((0, 1, 4)));
    assert_eq!(discord.gateway_url.as_deref(), Some("ws://127.0.0.1:4000"));
    assert!(config.secrets.contains_secret("discord-bot-token-123"));
    let summary = summary(&config);
    assert!(summary.contains("guild discord"), "{summary}");
    assert!(summary.contains("shards 0-1 of 4"), "{summary}");
    assert!(!summary.contains("discord-bot-token-123"), "{summary}");
    err(
        r#"{:yetibot {:adapters {:guild {:type "discord"}}}}"#,
        &[("YETIBOT_ADAPTERS_GUILD_SHARDS_FIRST", "3")],
        &[
            "yetibot.adapters.guild.token: is required",
            "yetibot.adapters.guild.shards: must give :first, :last and :total with first <= last < total <= 65536",
        ],
    );
}

// ----- Providers -----

#[test]
fn provider_name_rules() {
    err(
        &ai(r#"{:providers [{:url "https://a.example/v1"}]}"#),
        &[],
        &["yetibot.ai.providers[0].name: is required"],
    );
    err(
        &provider("").replace(r#":name "p""#, r#":name """#),
        &[],
        &["yetibot.ai.providers[0].name: must not be blank"],
    );
    err(
        &provider("").replace(r#":name "p""#, r#":name "my provider""#),
        &[],
        &["yetibot.ai.providers[0].name: must not contain whitespace"],
    );
    err(
        &ai(
            r#"{:providers [{:name "a" :url "https://a.example/v1"} {:name "a" :url "https://b.example/v1"}]}"#,
        ),
        &[],
        &["yetibot.ai.providers[1].name: duplicates an earlier provider's name"],
    );
}

#[test]
fn provider_url_rules() {
    let url = |u: &str| ai(&format!(r#"{{:providers [{{:name "p" :url "{u}"}}]}}"#));
    let at = "yetibot.ai.providers[0].url";
    err(
        &ai(r#"{:providers [{:name "p"}]}"#),
        &[],
        &[&format!("{at}: is required")],
    );
    err(
        &url("ftp://files.example/v1"),
        &[],
        &[&format!("{at}: must use http or https")],
    );
    err(
        &url("https://user:pw@api.example/v1"),
        &[],
        &[&format!(
            "{at}: must not contain credentials (put the key in :key or :key-file)"
        )],
    );
    err(
        &url("https://api.example/v1?key=x"),
        &[],
        &[&format!("{at}: must not contain a query string")],
    );
    err(
        &url("https://api.example/v1#frag"),
        &[],
        &[&format!("{at}: must not contain a fragment")],
    );
    err(
        &url("https://api.example/v1/chat/completions"),
        &[],
        &[&format!(
            "{at}: must be the API base URL, without /chat/completions, /responses or /models"
        )],
    );
    err(
        &url("api.example/v1"),
        &[],
        &[&format!("{at}: is not a valid absolute URL")],
    );
    err(
        &url("https://api.example/ v1"),
        &[],
        &[&format!(
            "{at}: must not contain whitespace or control characters"
        )],
    );
    let config = ok(&url("HTTPS://API.Example.com/v1/"), &[]);
    assert_eq!(
        config.providers.providers()[0].base_url(),
        "https://api.example.com/v1"
    );
}

#[test]
fn provider_credential_rules() {
    let at = "yetibot.ai.providers[0]";
    err(
        &provider(r#":key "sk-a" :key-file "/k""#),
        &[],
        &[&format!(
            "{at}.key: and :key-file are mutually exclusive: keep one"
        )],
    );
    err(
        &provider(r#":key-file "relative/token""#),
        &[],
        &[&format!("{at}.key-file: must be an absolute path")],
    );
    err(
        &provider(r#":key "  ""#),
        &[],
        &[&format!(
            "{at}.key: must not be blank (omit it for endpoints without authentication)"
        )],
    );
    err(
        &provider(r#":key "sk two words""#),
        &[],
        &[&format!(
            "{at}.key: must be printable ASCII without whitespace"
        )],
    );
    // The key file is not opened while loading: a path that does not exist is fine.
    let config = ok(&provider(r#":key-file "/nonexistent/yetibot/token""#), &[]);
    assert!(matches!(
        config.providers.providers()[0].credential(),
        Credential::KeyFile(_)
    ));
}

#[test]
fn provider_api_and_responses_only_options() {
    let at = "yetibot.ai.providers[0]";
    err(
        &provider(r#":api "completions""#),
        &[],
        &[&format!(
            r#"{at}.api: must be "chat-completions" or "responses""#
        )],
    );
    err(
        &provider(r#":native-tools ["web_search"]"#),
        &[],
        &[&format!(
            r#"{at}.native-tools: is only allowed with :api "responses""#
        )],
    );
    err(
        &provider(r#":max-turns 3"#),
        &[],
        &[&format!(
            r#"{at}.max-turns: is only allowed with :api "responses""#
        )],
    );
    for bad in [
        ":context-length 1023",
        ":context-length 10000001",
        ":context-length -5",
    ] {
        err(
            &provider(bad),
            &[],
            &[&format!(
                "{at}.context-length: must be an integer from 1024 to 10000000 tokens"
            )],
        );
    }
    assert_eq!(
        ok(&provider(":stream false"), &[])
            .providers
            .get("p")
            .map(|p| p.streams()),
        Some(false)
    );
    assert_eq!(
        ok(&provider(""), &[])
            .providers
            .get("p")
            .map(|p| p.streams()),
        Some(true),
        "turns are streamed unless the server cannot take it"
    );
    let capped = ok(&provider(":max-output-tokens 256"), &[]);
    assert_eq!(
        capped.providers.get("p").map(|p| p.max_output_tokens()),
        Some(256)
    );
    let default = ok(&provider(""), &[]);
    assert_eq!(
        default.providers.get("p").map(|p| p.max_output_tokens()),
        Some(4096)
    );
    let from_env = ok(
        &provider(""),
        &[("YETIBOT_AI_PROVIDERS_0_MAX_OUTPUT_TOKENS", "512")],
    );
    assert_eq!(
        from_env.providers.get("p").map(|p| p.max_output_tokens()),
        Some(512)
    );
    for bad in [
        ":max-output-tokens 0",
        ":max-output-tokens 1000001",
        ":max-output-tokens -1",
    ] {
        err(
            &provider(bad),
            &[],
            &[&format!(
                "{at}.max-output-tokens: must be an integer from 1 to 1000000 tokens"
            )],
        );
    }
    err(
        &provider(r#":thread-store "yes""#),
        &[],
        &[&format!("{at}.thread-store: expected true or false")],
    );
    err(
        &provider(r#":api "responses" :max-turns 0"#),
        &[],
        &[&format!("{at}.max-turns: must be an integer from 1 to 20")],
    );
    err(
        &provider(r#":api "responses" :max-turns 21"#),
        &[],
        &[&format!("{at}.max-turns: must be an integer from 1 to 20")],
    );
    err(
        &provider(r#":api "responses" :native-tools ["code_interpreter"]"#),
        &[],
        &[&format!(
            r#"{at}.native-tools[0]: must be "web_search" or "x_search""#
        )],
    );
    err(
        &provider(r#":tool-choice "auto""#),
        &[],
        &[&format!(
            r#"{at}.tool-choice: must be "standard" or "omit""#
        )],
    );
    err(
        &provider(r#":gateway-id "a b""#),
        &[],
        &[&format!(
            "{at}.gateway-id: must be 1 to 64 letters, digits, '-' or '_'"
        )],
    );
    err(
        &provider(r#":model """#),
        &[],
        &[&format!(
            "{at}.model: must not be blank (omit it to choose a model per prompt)"
        )],
    );
    let config = ok(&provider(r#":api "responses""#), &[]);
    assert_eq!(config.providers.providers()[0].max_turns(), 6);
    let config = ok(&provider(""), &[]);
    assert_eq!(
        config.providers.providers()[0].api(),
        WireApi::ChatCompletions
    );
    assert!(config.providers.providers()[0].tool_calling());
}

#[test]
fn default_provider_rules() {
    err(
        &ai(r#"{:default-provider "nope" :providers [{:name "a" :url "https://a.example/v1"}]}"#),
        &[],
        &["yetibot.ai.default-provider: does not name a configured provider"],
    );
    let config = ok(
        &ai(
            r#"{:providers [{:name "a" :url "https://a.example/v1"} {:name "b" :url "https://b.example/v1"}]}"#,
        ),
        &[],
    );
    assert_eq!(
        config.providers.default_provider().map(|p| p.name()),
        Some("a")
    );
    // Naming a provider that is itself invalid reports that provider's problem only.
    err(
        &ai(
            r#"{:default-provider "b" :providers [{:name "a" :url "https://a.example/v1"} {:name "b" :url "ftp://b.example"}]}"#,
        ),
        &[],
        &["yetibot.ai.providers[1].url: must use http or https"],
    );
}

// ----- MCP servers, toolsets, budget -----

#[test]
fn server_rules() {
    let server = |fields: &str| mcp(&format!(r#":servers [{{:name "s" {fields}}}]"#));
    let at = "yetibot.ai.mcp.servers[0]";
    err(
        &server(""),
        &[],
        &[&format!("{at}.url: or :command is required")],
    );
    err(
        &server(r#":url "https://a.example/mcp" :command "x""#),
        &[],
        &[&format!(
            "{at}.url: and :command are mutually exclusive: a server is remote or local"
        )],
    );
    err(
        &server(r#":url "https://u:p@a.example/mcp""#),
        &[],
        &[&format!(
            "{at}.url: must not contain credentials (put them in :headers)"
        )],
    );
    err(
        &server(r#":url "https://a.example/mcp?x=1""#),
        &[],
        &[&format!("{at}.url: must not contain a query string")],
    );
    err(
        &server(r#":url "https://a.example/mcp#f""#),
        &[],
        &[&format!("{at}.url: must not contain a fragment")],
    );
    err(
        &server(r#":url "ws://a.example/mcp""#),
        &[],
        &[&format!("{at}.url: must use http or https")],
    );
    err(
        &server(r#":url "https://a.example/mcp" :env {"A" "b"}"#),
        &[],
        &[&format!(
            "{at}.env: is only allowed with :command (use :headers for a remote server)"
        )],
    );
    err(
        &server(r#":command "x" :headers {"A" "b"}"#),
        &[],
        &[&format!(
            "{at}.headers: is only allowed with :url (use :env for a local server)"
        )],
    );
    err(
        &server(r#":url "https://a.example/mcp" :tools []"#),
        &[],
        &[&format!(
            "{at}.tools: must list at least one tool (omit it to use the server's whole catalog)"
        )],
    );
    err(
        &server(r#":url "https://a.example/mcp" :tools nil"#),
        &[],
        &[&format!(
            "{at}.tools: must not be nil (omit the key instead)"
        )],
    );
    err(
        &server(r#":url "https://a.example/mcp" :headers {"Bad Header" "x"}"#),
        &[],
        &[&format!(
            "{at}.headers.Bad Header: is not a valid HTTP header name"
        )],
    );
    err(
        &mcp(r#":servers [{:name "yetibot" :url "https://a.example/mcp"}]"#),
        &[],
        &[r#"yetibot.ai.mcp.servers[0].name: "yetibot" is reserved for the bot's own tools"#],
    );
    err(
        &mcp(r#":servers [{:name "a" :command "x"} {:name "a" :command "y"}]"#),
        &[],
        &["yetibot.ai.mcp.servers[1].name: duplicates an earlier server's name"],
    );
}

#[test]
fn timeout_and_budget_rules() {
    err(
        &mcp(":timeout-ms 99"),
        &[],
        &["yetibot.ai.mcp.timeout-ms: must be an integer from 100 to 120000"],
    );
    err(
        &mcp(":timeout-ms 120001"),
        &[],
        &["yetibot.ai.mcp.timeout-ms: must be an integer from 100 to 120000"],
    );
    err(
        &mcp(":max-tool-calls 0"),
        &[],
        &["yetibot.ai.mcp.max-tool-calls: must be an integer from 1 to 20"],
    );
    err(
        &mcp(":max-tool-calls 21"),
        &[],
        &["yetibot.ai.mcp.max-tool-calls: must be an integer from 1 to 20"],
    );
    let config = ok(&mcp(":timeout-ms 100 :max-tool-calls 20"), &[]);
    assert_eq!(config.servers.timeout().as_millis(), 100);
    let config = ok("", &[]);
    assert_eq!(config.servers.timeout().as_millis(), 30_000);
    assert_eq!(config.policy.max_tool_calls(), None);
}

#[test]
fn github_api_url_rules() {
    assert_eq!(ok("", &[]).github_api_url, "https://api.github.com");
    let config = ok(&mcp(r#":github-api-url "http://127.0.0.1:9/""#), &[]);
    assert_eq!(config.github_api_url, "http://127.0.0.1:9");
    for (url, reason) in [
        (
            "http://api.example.com",
            "must use https (plain http only to a loopback address)",
        ),
        ("https://u:p@api.github.com", "must not contain credentials"),
        (
            "https://github.example.com/api/v3",
            "must be https://api.github.com (only GitHub.com is supported), or plain http to a loopback address for a local stand-in",
        ),
        ("https://api.github.com?x=1", "must not contain a query"),
    ] {
        let message = format!("yetibot.ai.mcp.github-api-url: {reason}");
        err(
            &mcp(&format!(":github-api-url {url:?}")),
            &[],
            &[message.as_str()],
        );
    }
}

#[test]
fn toolset_rules() {
    let base = r#":servers [{:name "web" :url "https://a.example/mcp" :tools ["search"]}]"#;
    let toolset = |fields: &str| {
        ai(&format!(
            r#"{{:providers [{{:name "local" :url "http://localhost:1/v1"}}]
                 :mcp {{{base} :toolsets [{{:name "t" {fields}}}]}}}}"#
        ))
    };
    let at = "yetibot.ai.mcp.toolsets[0]";
    err(
        &toolset(""),
        &[],
        &[&format!(
            r#"{at}.kind: is required: "search", "github-read" or "github-pr""#
        )],
    );
    err(
        &toolset(r#":kind "search" :servers [{:name "nope"}]"#),
        &[],
        &[&format!(
            "{at}.servers[0].name: does not name a configured server"
        )],
    );
    err(
        &toolset(r#":kind "search" :servers [{:name "web" :tools ["other"]}]"#),
        &[],
        &[&format!(
            "{at}.servers[0].tools[0]: is not in the server's :tools allowlist (a reference may narrow it, never widen it)"
        )],
    );
    err(
        &toolset(r#":kind "search" :native-tools ["help"]"#),
        &[],
        &[&format!(
            "{at}.native-tools: an explicit list needs :users, :adapters and :providers allowlists"
        )],
    );
    err(
        &toolset(
            r#":kind "search" :native-tools ["shell"] :users ["U1"] :adapters ["slack"] :providers [{:name "local" :models ["m"]}]"#,
        ),
        &[],
        &[&format!("{at}.native-tools[0]: is not a native tool name")],
    );
    err(
        &toolset(r#":kind "search" :adapters ["irc"]"#),
        &[],
        &[&format!(
            r#"{at}.adapters[0]: must be "slack" or "discord""#
        )],
    );
    err(
        &toolset(r#":kind "search" :providers [{:name "cloud" :models ["m"]}]"#),
        &[],
        &[&format!(
            "{at}.providers[0].name: does not name a configured provider"
        )],
    );
    err(
        &toolset(r#":kind "search" :repositories ["o/r"]"#),
        &[],
        &[&format!(
            "{at}.repositories: is only for github-read and github-pr toolsets"
        )],
    );
    err(
        &toolset(
            r#":kind "github-read" :users ["U1"] :adapters ["slack"] :repositories ["not-a-repo"]"#,
        ),
        &[],
        &[&format!(
            "{at}.repositories[0]: must have the form owner/repo"
        )],
    );
    err(
        &toolset(
            r#":kind "github-read" :users ["U1"] :adapters ["slack"] :repositories ["o/r"] :native-tools ["help"] :providers [{:name "local" :models ["m"]}]"#,
        ),
        &[],
        &[&format!(
            "{at}.native-tools: an explicit list is only accepted on search toolsets"
        )],
    );
    err(
        &toolset(r#":kind "github-pr" :users ["U1"] :adapters ["slack"] :repositories ["o/r"]"#),
        &[],
        &[
            &format!(
                "{at}.providers: is required on github-pr toolsets (exact providers and models)"
            ),
            &format!("{at}.base-branches: must list at least one branch"),
            &format!(
                "{at}.allowed-paths: must list at least one path prefix that pull requests may change"
            ),
            &format!("{at}.write-server: is required on github-pr toolsets"),
            &format!(
                r#"{at}.servers: github-pr toolset "t" needs get_commit and get_file_contents for host-side snapshots, and none of its servers offers get_commit or get_file_contents"#
            ),
        ],
    );
    // A search toolset must not reach a GitHub or writer connection (here the recipe's
    // writer, referenced next to the web server).
    let with_writer = SPEC_TOOLSETS.replace("INTENT_ROUTER", "").replace(
        r#":servers [{:name "web"}]"#,
        r#":servers [{:name "web"} {:name "github-write"}]"#,
    );
    err(
        &with_writer,
        &[],
        &[
            r#"yetibot.ai.mcp.toolsets[0].servers[1].name: search toolset "search" must not reference server "github-write": it is the :write-server of github-pr toolset "github-pr", and a writer connection is used only by the host, never offered to the model"#,
        ],
    );
    err(
        &ai(&format!(
            r#"{{:mcp {{{base} :default-toolset "nope" :toolsets [{{:name "t" :kind "search"}}]}}}}"#
        )),
        &[],
        &["yetibot.ai.mcp.default-toolset: does not name a configured toolset"],
    );
    // Legacy :conversations is accepted and reported as ignored.
    let config = ok(&toolset(r#":kind "search" :conversations ["C1"]"#), &[]);
    assert!(
        config
            .notes
            .iter()
            .any(|n| n.contains("toolsets[0].conversations: legacy setting, ignored"))
    );
}

#[test]
fn intent_router_rules() {
    let at = "yetibot.ai.intent-router";
    err(
        &ai(r#"{:intent-router {:account-id "xyz" :key-file "token"}}"#),
        &[],
        &[
            &format!("{at}.account-id: must be 32 hexadecimal characters"),
            &format!("{at}.key-file: must be an absolute path"),
        ],
    );
    err(
        &ai(
            r#"{:intent-router {:account-id "0123456789abcdef0123456789abcdef" :key-file "/t" :min-probability 0.5}}"#,
        ),
        &[],
        &[&format!(
            "{at}.min-probability: must be a number from 0.9 to 1.0"
        )],
    );
    err(
        &ai(
            r#"{:intent-router {:enabled true :account-id "0123456789abcdef0123456789abcdef" :key-file "/t"}}"#,
        ),
        &[],
        &[&format!(
            "{at}.github-toolset: is required when :enabled is true"
        )],
    );
    let router = |url: &str| {
        ai(&format!(
            r#"{{:intent-router {{:account-id "0123456789abcdef0123456789abcdef" :key-file "/t" :api-url "{url}"}}}}"#
        ))
    };
    for (url, reason) in [
        (
            "http://api.example.com/v4",
            "must use https (plain http only to a loopback address)",
        ),
        (
            "https://user:pw@api.example.com/v4",
            "must not contain credentials",
        ),
        ("https://api.example.com/v4?x=1", "must not contain a query"),
        ("api.example.com", "must be an absolute https URL"),
    ] {
        err(&router(url), &[], &[&format!("{at}.api-url: {reason}")]);
    }
    for url in [
        "http://127.0.0.1:8080/v4",
        "http://[::1]:9/v4",
        "https://gateway.example/v4",
    ] {
        let config = ok(&router(url), &[]);
        assert_eq!(
            config.intent_router.map(|r| r.api_url),
            Some(url.to_owned())
        );
    }
}

#[test]
fn the_imgflip_account_needs_both_halves_and_a_safe_api_base() {
    let at = "yetibot.imgflip";
    let imgflip = |fields: &str| format!("{{:yetibot {{:imgflip {{{fields}}}}}}}");
    err(
        &imgflip(r#":username "bot""#),
        &[],
        &[&format!("{at}.password: is required with :username")],
    );
    err(
        &imgflip(r#":password "imgflip-secret-1""#),
        &[],
        &[&format!("{at}.username: is required with :password")],
    );
    err(
        &imgflip(r#":username " " :password "imgflip-secret-1""#),
        &[],
        &[&format!("{at}.username: must not be blank")],
    );
    err(
        &imgflip(
            r#":username "bot" :password "imgflip-secret-1" :api-url "http://imgflip.example""#,
        ),
        &[],
        &[&format!(
            "{at}.api-url: must use https (plain http only to a loopback address)"
        )],
    );
    let config = ok(
        &imgflip(r#":username "bot" :password "imgflip-secret-1""#),
        &[],
    );
    let account = config.imgflip.expect("account");
    assert_eq!(
        account.api_url(),
        yetibot_ai_commands::DEFAULT_IMGFLIP_API_URL
    );
    assert_eq!(account.username(), "bot");
    let config = ok(
        &imgflip(
            r#":username "bot" :password "imgflip-secret-1" :api-url "http://127.0.0.1:9/x/""#,
        ),
        &[],
    );
    assert_eq!(
        config.imgflip.expect("account").api_url(),
        "http://127.0.0.1:9/x"
    );
    assert!(ok("{:yetibot {}}", &[]).imgflip.is_none());
}

#[test]
fn published_images_need_a_safe_public_url_and_sane_bounds() {
    let images = |fields: &str| format!("{{:yetibot {{:images {{{fields}}}}}}}");
    assert!(ok("{:yetibot {}}", &[]).images.is_none());
    assert!(
        ok(&images(r#":listen "127.0.0.1:9""#), &[])
            .images
            .is_none()
    );
    let config = ok(
        &images(r#":public-url "https://bot.example/img/" :max-count 5"#),
        &[],
    );
    let options = config.images.expect("publishing");
    assert_eq!(options.public_url, "https://bot.example/img");
    assert_eq!(options.max_count, 5);
    assert_eq!(options.listen.to_string(), "127.0.0.1:3100");
    err(
        &images(r#":public-url "http://bot.example/img" :listen "nowhere" :max-bytes 1"#),
        &[],
        &[
            "yetibot.images.listen: must be an IP address and port, such as 127.0.0.1:3100",
            "yetibot.images.max-bytes: must be a whole number of bytes from 1 MiB to 4 GiB",
            "yetibot.images.public-url: must use https (plain http only to a loopback address)",
        ],
    );
    let config = ok(
        "{:yetibot {}}",
        &[("YETIBOT_IMAGES_PUBLIC_URL", "https://bot.example/i")],
    );
    assert!(config.images.is_some());
}

// ----- Shape, unknown keys and the environment mapping -----

#[test]
fn type_errors_and_unknown_keys_are_all_reported() {
    err(
        &ai(
            r#"{:providers {:name "x"} :mcp {:timeout-ms "fast" :servers [{:name "a" :url 5}]} :colour "blue"}"#,
        ),
        &[],
        &[
            "yetibot.ai.providers: expected a vector",
            "yetibot.ai.mcp.timeout-ms: expected an integer",
            "yetibot.ai.mcp.servers[0].url: expected a string",
            "yetibot.ai.colour: is not a known setting",
        ],
    );
    err("[1 2]", &[], &["(root): the configuration must be a map"]);
}

#[test]
fn every_problem_is_listed_at_once() {
    err(
        &ai(r#"{:default-provider "x"
                :providers [{:name "a b" :url "ftp://x"} {:url "https://ok.example/v1" :key-file "rel"}]
                :mcp {:timeout-ms 5 :servers [{:name "s"}]}}"#),
        &[],
        &[
            "yetibot.ai.providers[0].name: must not contain whitespace",
            "yetibot.ai.providers[0].url: must use http or https",
            "yetibot.ai.providers[1].name: is required",
            "yetibot.ai.providers[1].key-file: must be an absolute path",
            "yetibot.ai.default-provider: does not name a configured provider",
            "yetibot.ai.mcp.timeout-ms: must be an integer from 100 to 120000",
            "yetibot.ai.mcp.servers[0].url: or :command is required",
        ],
    );
}

#[test]
fn unknown_sections_outside_ai_are_ignored_with_a_note() {
    let config = ok(
        r#"{:yetibot {:twitter {:consumer {:key "k"}} :ai {}} :other 1}"#,
        &[("YETIBOT_METRICS_PORT", "9090")],
    );
    assert!(
        config
            .notes
            .iter()
            .any(|n| n == "yetibot.twitter: not used by this build, ignored")
    );
    assert!(
        config
            .notes
            .iter()
            .any(|n| n == "yetibot.metrics: not used by this build, ignored")
    );
    assert!(
        config
            .notes
            .iter()
            .any(|n| n == "other: not used by this build, ignored")
    );
}

#[test]
fn the_log_level_is_checked_and_upstream_log_settings_are_ignored() {
    use crate::logging::Level;
    assert_eq!(ok("", &[]).log_level, Level::Info);
    let config = ok(
        r#"{:yetibot {:log {:level :debug :path "/var/log/yetibot.log"}}}"#,
        &[],
    );
    assert_eq!(config.log_level, Level::Debug);
    assert!(
        config
            .notes
            .iter()
            .any(|n| n == "yetibot.log.path: not used by this build, ignored"),
        "{:?}",
        config.notes
    );
    assert_eq!(
        ok("", &[("YETIBOT_LOG_LEVEL", "WARN")]).log_level,
        Level::Warn
    );
    err(
        r#"{:yetibot {:log {:level "loud"}}}"#,
        &[],
        &["yetibot.log.level: must be one of trace, debug, info, warn, error, off"],
    );
}

#[test]
fn environment_wins_with_a_deep_merge() {
    let config = ok(
        SPEC_PROVIDERS,
        &[
            ("YETIBOT_AI_PROVIDERS_1_MODEL", "qwen3"),
            ("YB_AI_DEFAULT_PROVIDER", "local"),
        ],
    );
    let local = config.providers.get("local").expect("local");
    assert_eq!(local.model(), Some("qwen3"));
    assert_eq!(
        local.base_url(),
        "http://localhost:11434/v1",
        "fields the environment does not set are kept"
    );
    assert_eq!(
        config.providers.default_provider().map(|p| p.name()),
        Some("local")
    );
}

#[test]
fn environment_header_override_ignores_case() {
    let config = ok(
        &mcp(
            r#":servers [{:name "t" :url "https://a.example/mcp" :headers {"Authorization" "Bearer file-token-value"}}]"#,
        ),
        &[
            (
                "YETIBOT_AI_MCP_SERVERS_0_HEADERS_AUTHORIZATION",
                "Bearer env-token-value",
            ),
            ("YETIBOT_AI_MCP_SERVERS_0_HEADERS_X_MCP_READONLY", "true"),
        ],
    );
    match config.servers.servers()[0].transport() {
        Transport::Http { headers, .. } => {
            let names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(names, ["AUTHORIZATION", "X-MCP-READONLY"]);
            assert_eq!(headers[0].1.expose(), "Bearer env-token-value");
            assert_eq!(headers[1].1.expose(), "true", "header values stay strings");
        }
        Transport::Stdio { .. } => panic!("remote"),
    }
}

#[test]
fn environment_values_are_typed_only_where_the_schema_expects() {
    let config = ok(
        "",
        &[
            ("YETIBOT_AI_PROVIDERS_0_NAME", "123"),
            ("YETIBOT_AI_PROVIDERS_0_URL", "http://localhost:1/v1"),
            ("YETIBOT_AI_PROVIDERS_0_MODEL", "true"),
            ("YETIBOT_AI_PROVIDERS_0_TOOL_CALLING", "FALSE"),
            ("YETIBOT_AI_MCP_TIMEOUT_MS", "2500"),
            (
                "YETIBOT_AI_INTENT_ROUTER_ACCOUNT_ID",
                "0123456789abcdef0123456789abcdef",
            ),
            ("YETIBOT_AI_INTENT_ROUTER_KEY_FILE", "/t"),
            ("YETIBOT_AI_INTENT_ROUTER_MIN_PROBABILITY", "0.99"),
        ],
    );
    let p = &config.providers.providers()[0];
    assert_eq!(p.name(), "123");
    assert_eq!(p.model(), Some("true"));
    assert!(!p.tool_calling());
    assert_eq!(config.servers.timeout().as_millis(), 2_500);
    assert_eq!(config.intent_router.map(|r| r.min_probability), Some(0.99));
    err(
        "",
        &[
            ("YETIBOT_AI_PROVIDERS_0_NAME", "p"),
            ("YETIBOT_AI_PROVIDERS_0_URL", "http://localhost:1/v1"),
            ("YETIBOT_AI_PROVIDERS_0_TOOL_CALLING", "yes"),
            ("YETIBOT_AI_MCP_MAX_TOOL_CALLS", "six"),
        ],
        &[
            "yetibot.ai.providers[0].tool-calling: expected true or false",
            "yetibot.ai.mcp.max-tool-calls: expected an integer",
        ],
    );
}

#[test]
fn environment_name_errors_name_the_variable_not_the_value() {
    err(
        "",
        &[
            ("YETIBOT_AI_PROVIDERS_X_NAME", "v1"),
            ("YETIBOT_AI_PROVIDERS_300_NAME", "v2"),
            ("YETIBOT_AI_COLOUR", "v3"),
            ("YETIBOT_AI_MCP", "v4"),
            ("YETIBOT_AI__DEFAULT_PROVIDER", "v5"),
            ("YETIBOT_AI_DEFAULT_PROVIDER_EXTRA", "v6"),
            ("YETIBOT_AI_MCP_SERVERS_0_HEADERS", "v7"),
        ],
        &[
            "environment YETIBOT_AI_PROVIDERS_X_NAME: needs a vector index (a number) here",
            "environment YETIBOT_AI_PROVIDERS_300_NAME: uses a vector index above 255",
            "environment YETIBOT_AI_COLOUR: does not name a known setting",
            "environment YETIBOT_AI_MCP: names a whole section; set one of its fields instead",
            "environment YETIBOT_AI__DEFAULT_PROVIDER: has an empty word (double or trailing underscore)",
            "environment YETIBOT_AI_DEFAULT_PROVIDER_EXTRA: has extra words after a setting's name",
            "environment YETIBOT_AI_MCP_SERVERS_0_HEADERS: names a whole map; add the entry's name",
        ],
    );
}

#[test]
fn one_mistake_per_stage_is_reported_in_one_pass() {
    // A conflict in the environment, a value of the wrong type, an unknown key, and two
    // semantic problems (duplicate provider names, a relative key file) all at once.
    err(
        r#"{:yetibot {:web {:port "3003"}
                     :comand {:prefix "?"}
                     :ai {:providers [{:name "p" :url "http://127.0.0.1:9/v1" :model "m"}
                                      {:name "p" :url "http://127.0.0.1:9/v1" :model "m"
                                       :key-file "keys/p.key"}]}}}"#,
        &[("YETIBOT_LOG_LEVEL", "debug"), ("YB_LOG_LEVEL", "info")],
        &[
            "environment YETIBOT_LOG_LEVEL: sets yetibot.log.level differently from YB_LOG_LEVEL; remove one of them",
            "yetibot.web.port: expected an integer",
            "yetibot.comand: is not a known setting; did you mean :command?",
            "yetibot.ai.providers[1].name: duplicates an earlier provider's name",
            "yetibot.ai.providers[1].key-file: must be an absolute path",
        ],
    );
}

#[test]
fn a_syntax_error_names_the_file() {
    let Err(invalid) = load(Some((Path::new("conf/bot.edn"), "{:yetibot {:web }")), &[]) else {
        panic!("a broken file loads");
    };
    assert_eq!(invalid.problems.len(), 1);
    assert!(
        invalid.problems[0].path.starts_with("conf/bot.edn"),
        "{}",
        invalid.problems[0]
    );
    // The variables are still checked beside it.
    let Err(invalid) = load(
        Some((Path::new("conf/bot.edn"), "{:yetibot")),
        &vars(&[("YETIBOT_ADAPTERS_MYTEAM", "slack")]),
    ) else {
        panic!("a broken file loads");
    };
    assert_eq!(invalid.problems.len(), 2, "{invalid}");
    assert!(invalid.problems[1].path.contains("YETIBOT_ADAPTERS_MYTEAM"));
}

#[test]
fn environment_prefix_conflicts_and_gaps() {
    err(
        "",
        &[
            ("YETIBOT_AI_DEFAULT_PROVIDER", "a"),
            ("YB_AI_DEFAULT_PROVIDER", "b"),
        ],
        &[
            "environment YETIBOT_AI_DEFAULT_PROVIDER: sets yetibot.ai.default-provider differently from YB_AI_DEFAULT_PROVIDER; remove one of them",
        ],
    );
    // The same value under both prefixes is fine.
    ok(
        r#"{:yetibot {:ai {:providers [{:name "a" :url "https://a.example/v1"}]}}}"#,
        &[
            ("YETIBOT_AI_DEFAULT_PROVIDER", "a"),
            ("YB_AI_DEFAULT_PROVIDER", "a"),
        ],
    );
    err(
        SPEC_PROVIDERS,
        &[
            ("YETIBOT_AI_PROVIDERS_3_NAME", "late"),
            ("YETIBOT_AI_PROVIDERS_3_URL", "https://late.example/v1"),
        ],
        &["yetibot.ai.providers[2]: is missing (nil, or the environment sets a later index)"],
    );
}

// ----- The history store -----

#[test]
fn nothing_configured_keeps_history_in_the_default_sqlite_file() {
    let config = ok("", &[]);
    assert_eq!(
        config.store,
        yetibot_history_store::Backend::Sqlite {
            path: "data/yetibot.db".into(),
            prefix: yetibot_history_store::TablePrefix::default(),
        }
    );
    assert!(config.history_enabled);
    assert!(summary(&config).contains(
        "History store: SQLite data/yetibot.db, table prefix \"yetibot_\"; chat history recorded"
    ));
}

#[test]
fn yetibots_own_database_keys_select_postgres_and_the_url_stays_secret() {
    let url = "postgresql://bot:db-password-0123456789@db.internal:5432/yetibot";
    for config in [
        ok(
            &format!(r#"{{:yetibot {{:db {{:url "{url}" :table {{:prefix "yb_"}}}}}}}}"#),
            &[],
        ),
        ok(
            "",
            &[
                ("YETIBOT_DB_URL", url),
                ("YETIBOT_DB_TABLE_PREFIX", "yb_"),
                ("YETIBOT_HISTORY_DISABLED", "true"),
            ],
        ),
    ] {
        assert!(matches!(
            &config.store,
            yetibot_history_store::Backend::Postgres { prefix, .. } if prefix.as_str() == "yb_"
        ));
        let text = summary(&config);
        assert!(
            text.contains("History store: PostgreSQL [redacted], table prefix \"yb_\""),
            "{text}"
        );
        for part in ["db-password", "db.internal", "postgresql://"] {
            assert!(!text.contains(part), "{part} printed:\n{text}");
            assert!(!format!("{config:?}").contains(part), "{part} in Debug");
        }
        assert!(config.secrets.contains_secret(&format!("oops {url}")));
        assert!(
            config
                .secrets
                .contains_secret("oops db-password-0123456789")
        );
    }
    assert!(!ok("", &[("YETIBOT_HISTORY_DISABLED", "true")]).history_enabled);
    let other_file = ok(
        "",
        &[("YETIBOT_DB_SQLITE_PATH", "/var/lib/yetibot/chat.db")],
    );
    assert_eq!(
        other_file.store,
        yetibot_history_store::Backend::Sqlite {
            path: "/var/lib/yetibot/chat.db".into(),
            prefix: yetibot_history_store::TablePrefix::default(),
        }
    );
}

#[test]
fn database_settings_are_checked_without_repeating_them() {
    err(
        r#"{:yetibot {:db {:url "mysql://root:hunter2-password@h/db" :table {:prefix "Bad-One"} :sqlite {:path " "} :pool 3}}}"#,
        &[],
        &[
            "yetibot.db.pool: is not a known setting",
            "yetibot.db.url: must be a postgresql:// or postgres:// URL",
            "yetibot.db.table.prefix: must be at most 40 lower-case letters, digits and underscores, not starting with a digit",
            "yetibot.db.sqlite.path: must not be blank",
        ],
    );
    let file = r#"{:yetibot {:db {:url "mysql://root:hunter2-password@h/db" :table {:prefix "Bad-One"} :sqlite {:path " "}}}}"#;
    err(
        file,
        &[],
        &[
            "yetibot.db.url: must be a postgresql:// or postgres:// URL",
            "yetibot.db.table.prefix: must be at most 40 lower-case letters, digits and underscores, not starting with a digit",
            "yetibot.db.sqlite.path: must not be blank",
        ],
    );
    err(
        "",
        &[("YETIBOT_DB_URL", "postgresql://u:p@h/db?sslmode=require")],
        &[
            "yetibot.db.url: asks for TLS (sslmode=require), which this build does not support yet; connect through a local socket or a TLS tunnel",
        ],
    );
    err(
        r#"{:yetibot {:history {:disabled "true"}}}"#,
        &[],
        &["yetibot.history.disabled: expected true or false"],
    );
}

// ----- Secrets never leak -----

#[test]
fn secrets_never_appear_in_problems_or_the_summary() {
    let secret = "sk-live-0123456789abcdefSECRET";
    let edn = ai(&format!(
        r#"{{:providers [{{:name "a" :url "https://a.example/v1?key={secret}" :key "{secret}"}}
                         {{:name "b" :url "https://b.example/v1" :key-file "/private/{secret}"}}
                         {{:name "c" :url "https://c.example/v1" :key "{secret} x"}}]
            :mcp {{:servers [{{:name "s" :url "https://{secret}@x.example/mcp" :headers {{"A" "{secret}"}}}}]}}}}"#
    ));
    let file = Some((Path::new("t.edn"), edn.as_str()));
    let invalid = load(file, &[]).expect_err("invalid");
    let text = invalid.to_string();
    assert!(!text.contains("SECRET"), "{text}");
    assert!(!text.contains("/private"), "{text}");

    let valid = ai(&format!(
        r#"{{:providers [{{:name "a" :url "https://a.example/v1" :key "{secret}"}}
                         {{:name "b" :url "https://b.example/v1" :key-file "/private/token"}}]
            :mcp {{:servers [{{:name "s" :url "https://x.example/mcp" :headers {{"Authorization" "Bearer {secret}"}}}}
                             {{:name "l" :command "srv" :env {{"TOKEN" "{secret}"}}}}]}}
            :intent-router {{:account-id "0123456789abcdef0123456789abcdef" :key-file "/private/clef"}}}}"#
    ));
    let config = ok(
        &valid,
        &[
            ("YETIBOT_XAI_KEY", secret),
            ("YETIBOT_IMGFLIP_USERNAME", "bot"),
            ("YETIBOT_IMGFLIP_PASSWORD", secret),
        ],
    );
    let text = summary(&config);
    assert!(!text.contains("SECRET"), "{text}");
    assert!(!text.contains("/private"), "{text}");
    assert!(!text.contains("0123456789abcdef0123456789abcdef"), "{text}");
    assert!(text.contains("[redacted]"));
    let debug = format!("{config:?}");
    assert!(!debug.contains("SECRET"), "{debug}");
    assert!(!debug.contains("/private"), "{debug}");
    assert!(config.secrets.contains_secret(&format!("leaked: {secret}")));
}

// ----- Properties -----

mod properties {
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    use super::ok;

    /// Writes a JSON value as EDN text, with keyword or string keys.
    fn to_edn(value: &Value, keyword_keys: bool, out: &mut String) {
        match value {
            Value::Null => out.push_str("nil"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => out.push_str(&n.to_string()),
            Value::String(s) => edn_string(s, out),
            Value::Array(items) => {
                out.push('[');
                for item in items {
                    to_edn(item, keyword_keys, out);
                    out.push(' ');
                }
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (k, v) in map {
                    if keyword_keys {
                        out.push(':');
                        out.push_str(k);
                    } else {
                        edn_string(k, out);
                    }
                    out.push(' ');
                    to_edn(v, keyword_keys, out);
                    out.push_str(" ; comment\n");
                }
                out.push('}');
            }
        }
    }

    fn edn_string(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c => out.push(c),
            }
        }
        out.push('"');
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| Value::Number(n.into())),
            "[^\\u{0}-\\u{8}\\u{b}\\u{c}\\u{e}-\\u{1f}]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map("[a-z][a-z0-9-]{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        #[test]
        fn edn_data_converts_to_the_same_json(value in json_value(), keyword_keys in any::<bool>()) {
            let mut text = String::new();
            to_edn(&value, keyword_keys, &mut text);
            prop_assert_eq!(yetibot_json_util::edn::parse(&text).map_err(|p| p.to_string()), Ok(value));
        }

        /// A provider written as environment variables loads exactly like the same provider
        /// written in the file.
        #[test]
        fn environment_and_file_agree(
            name in "[a-z][a-z0-9_.-]{0,10}",
            host in "[a-z]{1,10}",
            model in proptest::option::of("[A-Za-z0-9@/._:-]{1,20}"),
            key in proptest::option::of("[!-~&&[^\"\\\\]]{8,30}"),
            tool_calling in proptest::option::of(any::<bool>()),
            responses in any::<bool>(),
            max_turns in proptest::option::of(1i64..=20),
        ) {
            let url = format!("https://{host}.example/v1");
            let mut edn = format!(r#"{{:yetibot {{:ai {{:providers [{{:name "{name}" :url "{url}""#);
            let mut env = vec![
                ("YETIBOT_AI_PROVIDERS_0_NAME".to_owned(), name),
                ("YETIBOT_AI_PROVIDERS_0_URL".to_owned(), url),
            ];
            if let Some(model) = &model {
                edn.push_str(&format!(r#" :model "{model}""#));
                env.push(("YETIBOT_AI_PROVIDERS_0_MODEL".to_owned(), model.clone()));
            }
            if let Some(key) = &key {
                edn.push_str(&format!(r#" :key "{key}""#));
                env.push(("YB_AI_PROVIDERS_0_KEY".to_owned(), key.clone()));
            }
            if let Some(on) = tool_calling {
                edn.push_str(&format!(" :tool-calling {on}"));
                env.push(("YETIBOT_AI_PROVIDERS_0_TOOL_CALLING".to_owned(), on.to_string()));
            }
            if responses {
                edn.push_str(r#" :api "responses""#);
                env.push(("YETIBOT_AI_PROVIDERS_0_API".to_owned(), "responses".to_owned()));
                if let Some(n) = max_turns {
                    edn.push_str(&format!(" :max-turns {n}"));
                    env.push(("YETIBOT_AI_PROVIDERS_0_MAX_TURNS".to_owned(), n.to_string()));
                }
            }
            edn.push_str("}]}}}");
            let from_file = ok(&edn, &[]);
            let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let from_env = ok("", &pairs);
            prop_assert_eq!(format!("{:?}", from_file.providers), format!("{:?}", from_env.providers));
            let a = &from_file.providers.providers()[0];
            let b = &from_env.providers.providers()[0];
            prop_assert_eq!(a.credential(), b.credential());
        }
    }
}

/// The binary tells the policy which servers carry a `:github-api-token`, so a search
/// toolset that references one is refused: it would expose a GitHub connection to everyone.
#[test]
fn search_toolset_referencing_a_tokened_server_is_refused() {
    let edn = ai(
        r#"{:providers [{:name "local" :url "http://localhost:1/v1"}]
            :mcp {:servers [{:name "gh" :url "https://a.example/mcp" :github-api-token "ghp_0123456789abcdef"}]
                  :toolsets [{:name "t" :kind "search" :servers [{:name "gh"}]}]}}"#,
    );
    let file = Some((Path::new("test.edn"), edn.as_str()));
    let Err(invalid) = load(file, &vars(&[])) else {
        panic!("a search toolset over a tokened server must be refused");
    };
    let problems: Vec<String> = invalid.problems.iter().map(ToString::to_string).collect();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("yetibot.ai.mcp.toolsets[0].servers[0]")
                && p.contains("github-api-token")),
        "{problems:?}"
    );
    assert!(problems.iter().all(|p| !p.contains("ghp_0123456789abcdef")));
}

#[test]
fn command_prefix_and_local_operator_rules() {
    err(
        r#"{:yetibot {:command {:prefix ""} :local {:user-id " "}}}"#,
        &[],
        &[
            "yetibot.command.prefix: must be 1 to 8 characters without whitespace",
            "yetibot.local.user-id: must not be blank",
        ],
    );
    err(
        r#"{:yetibot {:command {:prefix "! "}}}"#,
        &[],
        &["yetibot.command.prefix: must be 1 to 8 characters without whitespace"],
    );
    let file = Some((
        Path::new("test.edn"),
        r#"{:yetibot {:command {:prefix ","}}}"#,
    ));
    let config = load(file, &vars(&[("YETIBOT_LOCAL_USER_ID", "U42")])).expect("valid");
    assert_eq!(config.settings.prefix, ",");
    assert!(config.settings.embedded_commands);
    assert_eq!(config.local.user_id, "U42");
    assert_eq!(config.local.adapter, yetibot_conversation::AdapterKind::Cli);
    assert!(config.local.trusted);
}

#[test]
fn release_feed_rules() {
    let config = ok(
        r#"{:yetibot {:release-info {:feed-url "https://example.org/releases.json"}}}"#,
        &[],
    );
    assert_eq!(
        config
            .release_feed
            .as_ref()
            .map(yetibot_ai_commands::ReleaseFeed::url),
        Some("https://example.org/releases.json")
    );
    assert!(summary(&config).contains("published feed"));
    assert!(!summary(&config).contains("example.org"));
    assert!(ok("", &[]).release_feed.is_none());
    err(
        r#"{:yetibot {:release-info {:feed-url "https://user:pw@example.org/r.json"}}}"#,
        &[],
        &["yetibot.release-info.feed-url: must not contain credentials"],
    );
    err(
        r#"{:yetibot {:release-info {:feed-url "ftp://example.org/r.json"}}}"#,
        &[],
        &["yetibot.release-info.feed-url: must use http or https"],
    );
    err(
        r#"{:yetibot {:release-info {:feed-url "https://example.org/r.json" :other 1}}}"#,
        &[],
        &["yetibot.release-info.other: is not a known setting"],
    );
}

#[test]
fn concurrency_limits_are_read_from_the_file_and_the_environment_and_checked() {
    use yetibot_conductor::AdmissionLimits;
    assert_eq!(ok("", &[]).admission, AdmissionLimits::default());
    let config = ok(
        "{:yetibot {:concurrency {:memory-budget-mib 64 :per-user 4 :queue 100}}}",
        &[("YETIBOT_CONCURRENCY_PER_CHANNEL", "16")],
    );
    assert_eq!(
        config.admission,
        AdmissionLimits {
            in_flight: 128,
            per_user: 4,
            per_channel: 16,
            queue: 100,
            queue_per_user: 100,
        }
    );
    err(
        "{:yetibot {:concurrency {:memory-budget-mib 0 :queue 70000 :per-users 3}}}",
        &[],
        &[
            "yetibot.concurrency.per-users: is not a known setting; did you mean :per-user?",
            "yetibot.concurrency.memory-budget-mib: must be a whole number from 1 to 1048576",
            "yetibot.concurrency.queue: must be a whole number from 0 to 65536",
        ],
    );
    err(
        "{:yetibot {:concurrency {:memory-budget-mib 0 :queue 70000}}}",
        &[],
        &[
            "yetibot.concurrency.memory-budget-mib: must be a whole number from 1 to 1048576",
            "yetibot.concurrency.queue: must be a whole number from 0 to 65536",
        ],
    );
}

#[test]
fn the_output_token_field_is_checked() {
    let provider = |extra: &str| {
        format!(
            r#"{{:yetibot {{:ai {{:providers [{{:name "p" :url "http://127.0.0.1:9/v1" :model "m" {extra}}}]}}}}}}"#
        )
    };
    ok(&provider(r#":output-token-field "max_tokens""#), &[]);
    err(
        &provider(r#":output-token-field "max-tokens""#),
        &[],
        &[
            r#"yetibot.ai.providers[0].output-token-field: must be "max_completion_tokens" or "max_tokens""#,
        ],
    );
    err(
        &provider(r#":api "responses" :output-token-field "max_tokens""#),
        &[],
        &[
            r#"yetibot.ai.providers[0].output-token-field: applies to :api "chat-completions" only (Responses uses max_output_tokens)"#,
        ],
    );
}
