//! Toolset selection, identity and model checks, native tool availability and server scope.

use yetibot_tool_policy::{
    AdapterKind, Denial, Error, KnownNames, NativeKind, NativeServices, NativeTool, PolicyConfig,
    Provenance, ProviderModelsConfig, RequestContext, Selection, ServerRefConfig, ServerUse,
    ToolPolicy, ToolsetConfig, ToolsetKind, check_tool_calling, filter_listed,
};

fn strings(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| (*s).to_owned()).collect())
}

fn names(tools: Vec<&NativeTool>) -> Vec<&str> {
    tools.into_iter().map(NativeTool::name).collect()
}

/// The legacy flat scope (no toolsets) with `natives` registered.
fn legacy(natives: &[NativeTool]) -> ToolPolicy {
    let known = KnownNames {
        native_tools: natives,
        ..KnownNames::default()
    };
    ToolPolicy::from_config(&PolicyConfig::default(), &known).expect("valid policy")
}

fn policy() -> ToolPolicy {
    policy_with(&crate::specified_native_tools())
}

/// Toolsets `search` (the default), `narrow` (explicit `help`, `meme`, `wise`) and `gh`
/// (github-read), with `natives` registered.
fn policy_with(natives: &[NativeTool]) -> ToolPolicy {
    let toolsets = vec![
        ToolsetConfig {
            name: Some("search".into()),
            kind: Some("search".into()),
            servers: Some(vec![ServerRefConfig {
                name: Some("web".into()),
                tools: None,
            }]),
            ..ToolsetConfig::default()
        },
        ToolsetConfig {
            name: Some("narrow".into()),
            kind: Some("search".into()),
            servers: Some(vec![ServerRefConfig {
                name: Some("web".into()),
                tools: strings(&["search"]),
            }]),
            native_tools: strings(&["help", "meme", "wise"]),
            users: strings(&["U1"]),
            adapters: strings(&["discord"]),
            providers: Some(vec![ProviderModelsConfig {
                name: Some("local".into()),
                models: strings(&["m"]),
            }]),
            ..ToolsetConfig::default()
        },
        ToolsetConfig {
            name: Some("gh".into()),
            kind: Some("github-read".into()),
            users: strings(&["U1"]),
            adapters: strings(&["slack"]),
            repositories: strings(&["o/r"]),
            servers: Some(vec![ServerRefConfig {
                name: Some("github".into()),
                tools: None,
            }]),
            ..ToolsetConfig::default()
        },
    ];
    let web_tools = vec!["search".to_owned(), "fetch".to_owned()];
    let known = KnownNames {
        servers: vec![
            ("web", Some(web_tools.as_slice())),
            ("github", None),
            ("other", None),
        ],
        providers: vec!["local"],
        with_github_api_token: Vec::new(),
        native_tools: natives,
    };
    let config = PolicyConfig {
        toolsets: &toolsets,
        default_toolset: None,
        max_tool_calls: None,
    };
    ToolPolicy::from_config(&config, &known).expect("valid policy")
}

fn trusted(adapter: AdapterKind, user: &str) -> RequestContext {
    RequestContext {
        provenance: Provenance::trusted(adapter, user).expect("a nonblank ID"),
        provider: "local".into(),
        model: "m".into(),
    }
}

fn untrusted() -> RequestContext {
    RequestContext {
        provenance: Provenance::Untrusted,
        provider: "local".into(),
        model: "m".into(),
    }
}

fn denial(result: Result<(), Error>) -> Option<Denial> {
    match result {
        Ok(()) => None,
        Err(Error::Denied(d)) => Some(d),
        Err(other) => panic!("unexpected {other}"),
    }
}

#[test]
fn choosing_a_toolset() {
    let policy = policy();
    let chosen = |requested| {
        Selection::choose(&policy, requested)
            .map(|s| s.toolset().map(|t| t.name.as_str()))
            .ok()
    };
    assert_eq!(chosen(None), Some(Some("search")));
    assert_eq!(chosen(Some("gh")), Some(Some("gh")));
    assert!(matches!(
        Selection::choose(&policy, Some("nope")),
        Err(Error::UnknownToolset)
    ));
    let flat = ToolPolicy::default();
    assert!(Selection::choose(&flat, None).is_ok_and(|s| s.toolset().is_none()));
}

#[test]
fn identity_and_model_rules() {
    let policy = policy();
    let narrow = Selection::choose(&policy, Some("narrow")).expect("narrow");
    assert_eq!(
        denial(narrow.authorize(&trusted(AdapterKind::Discord, "U1"))),
        None
    );
    assert_eq!(
        denial(narrow.authorize(&trusted(AdapterKind::Slack, "U1"))),
        Some(Denial::Adapter)
    );
    assert_eq!(
        denial(narrow.authorize(&trusted(AdapterKind::Discord, "U2"))),
        Some(Denial::User)
    );
    assert_eq!(
        denial(narrow.authorize(&untrusted())),
        Some(Denial::UntrustedIdentity)
    );
    let mut other_model = trusted(AdapterKind::Discord, "U1");
    other_model.model = "m2".into();
    assert_eq!(
        denial(narrow.authorize(&other_model)),
        Some(Denial::ProviderModel)
    );
    // An unrestricted search toolset and the legacy scope serve untrusted requests too.
    let search = Selection::choose(&policy, None).expect("search");
    assert_eq!(denial(search.authorize(&untrusted())), None);
    let flat = ToolPolicy::default();
    let legacy = Selection::choose(&flat, None).expect("legacy");
    assert_eq!(denial(legacy.authorize(&untrusted())), None);
    // GitHub toolsets always need a trusted identity.
    let gh = Selection::choose(&policy, Some("gh")).expect("gh");
    assert_eq!(
        denial(gh.authorize(&untrusted())),
        Some(Denial::UntrustedIdentity)
    );
}

#[test]
fn tool_calling_off_rejects_tool_requests_only() {
    assert_eq!(
        denial(check_tool_calling(false, false)),
        Some(Denial::ToolCallingDisabled)
    );
    assert_eq!(denial(check_tool_calling(false, true)), None);
    assert_eq!(denial(check_tool_calling(true, false)), None);
}

#[test]
fn native_tools_by_kind_provenance_and_platform() {
    let policy = policy();
    let services = NativeServices {
        configured: vec!["meme".into(), "ai".into(), "cf".into()],
    };
    let search = Selection::choose(&policy, None).expect("search");
    assert_eq!(
        names(search.native_tools(&trusted(AdapterKind::Slack, "U9"), &services)),
        [
            "help",
            "history",
            "history_count",
            "release_info",
            "util",
            "meme",
            "ai",
            "cf"
        ]
    );
    assert_eq!(
        names(search.native_tools(&trusted(AdapterKind::Discord, "U9"), &services)),
        [
            "help",
            "history",
            "history_count",
            "release_info",
            "util",
            "meme",
            "ai",
            "cf",
            "react"
        ]
    );
    assert!(
        search.native_tools(&untrusted(), &services).is_empty(),
        "untrusted requests get none"
    );
    let natives = crate::specified_native_tools();
    let flat = legacy(&natives);
    let legacy = Selection::choose(&flat, None).expect("legacy");
    assert_eq!(
        names(legacy.native_tools(
            &trusted(AdapterKind::Slack, "U9"),
            &NativeServices::default()
        )),
        ["help", "history", "history_count", "release_info", "util"]
    );
    // An explicit list is authoritative, and a tool without its service cannot appear.
    let narrow = Selection::choose(&policy, Some("narrow")).expect("narrow");
    assert_eq!(
        names(narrow.native_tools(&trusted(AdapterKind::Discord, "U1"), &services)),
        ["help", "meme"]
    );
    // GitHub toolsets get exactly the four read tools, whatever is configured.
    let gh = Selection::choose(&policy, Some("gh")).expect("gh");
    let all = NativeServices {
        configured: ["meme", "gi", "clef", "clairic", "ai", "cf", "wise"]
            .map(String::from)
            .to_vec(),
    };
    assert_eq!(
        names(gh.native_tools(&trusted(AdapterKind::Slack, "U1"), &all)),
        ["help", "history", "history_count", "release_info"]
    );
}

/// The policy used to name its native tools itself (a list of every name, the four GitHub
/// toolsets get, those that need a service, `react` on Discord). Now the command layer
/// registers each tool with a kind, and a tool the policy has never heard of gets exactly
/// what its kind allows.
#[test]
fn native_rules_follow_the_registered_kind() {
    let natives = [
        NativeTool::new("notes", NativeKind::Context),
        NativeTool::new("calc", NativeKind::Computation),
        NativeTool::new("weather", NativeKind::Service),
        NativeTool::new("pin", NativeKind::PlatformAction(AdapterKind::Slack)),
    ];
    let services = NativeServices {
        configured: vec!["weather".into()],
    };
    let flat = legacy(&natives);
    let scope = Selection::choose(&flat, None).expect("legacy");
    let slack = trusted(AdapterKind::Slack, "U9");
    let discord = trusted(AdapterKind::Discord, "U9");
    assert_eq!(
        names(scope.native_tools(&slack, &services)),
        ["notes", "calc", "weather", "pin"]
    );
    assert_eq!(
        names(scope.native_tools(&discord, &services)),
        ["notes", "calc", "weather"],
        "a platform action only on its platform"
    );
    assert_eq!(
        names(scope.native_tools(&slack, &NativeServices::default())),
        ["notes", "calc", "pin"],
        "a service tool only with its service"
    );
    assert!(scope.allows_native(&slack, "pin"));
    assert!(!scope.allows_native(&discord, "pin"));
    assert!(!scope.allows_native(&untrusted(), "notes"));
    assert!(
        !scope.allows_native(&slack, "help"),
        "an unregistered name is no native tool"
    );

    // GitHub toolsets get the context tools and nothing else.
    let policy = policy_with(&[natives.as_slice(), &crate::specified_native_tools()].concat());
    let gh = Selection::choose(&policy, Some("gh")).expect("gh");
    let github = trusted(AdapterKind::Slack, "U1");
    assert_eq!(
        names(gh.native_tools(&github, &services)),
        ["notes", "help", "history", "history_count", "release_info"]
    );
    assert!(gh.allows_native(&github, "notes"));
    assert!(!gh.allows_native(&github, "calc"));
    assert!(!gh.allows_native(&github, "pin"));
}

/// `:native-tools` entries are checked against the registered tools, not a list the policy
/// keeps: a registered name passes whatever it is called, an unregistered one fails.
#[test]
fn native_tool_lists_are_checked_against_the_registration() {
    let toolsets = [ToolsetConfig {
        name: Some("mine".into()),
        kind: Some("search".into()),
        native_tools: strings(&["notes", "help"]),
        users: strings(&["U1"]),
        adapters: strings(&["slack"]),
        providers: Some(vec![ProviderModelsConfig {
            name: Some("local".into()),
            models: strings(&["m"]),
        }]),
        ..ToolsetConfig::default()
    }];
    let config = PolicyConfig {
        toolsets: &toolsets,
        ..PolicyConfig::default()
    };
    let problems = |natives: &[NativeTool]| -> Vec<String> {
        let known = KnownNames {
            providers: vec!["local"],
            native_tools: natives,
            ..KnownNames::default()
        };
        match ToolPolicy::from_config(&config, &known) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    };
    let notes = NativeTool::new("notes", NativeKind::Context);
    assert_eq!(
        problems(std::slice::from_ref(&notes)),
        ["toolsets[0].native-tools[1]: is not a native tool name"]
    );
    assert_eq!(
        problems(&crate::specified_native_tools()),
        ["toolsets[0].native-tools[0]: is not a native tool name"]
    );
    assert!(problems(&[notes, NativeTool::new("help", NativeKind::Context)]).is_empty());
}

#[test]
fn servers_connected_and_allowlists() {
    let policy = policy();
    let web_tools = vec!["search".to_owned(), "fetch".to_owned()];
    let servers = [
        ("web", Some(web_tools.as_slice())),
        ("github", None),
        ("other", None),
    ];
    let search = Selection::choose(&policy, None).expect("search");
    assert_eq!(
        search.servers(&servers),
        [ServerUse {
            name: "web".into(),
            tools: Some(web_tools.clone()),
            kind: ToolsetKind::Search,
        }],
        "a name-only reference inherits the server's :tools; unreferenced servers stay disconnected"
    );
    let narrow = Selection::choose(&policy, Some("narrow")).expect("narrow");
    assert_eq!(
        narrow.servers(&servers)[0].tools,
        Some(vec!["search".to_owned()])
    );
    let flat = ToolPolicy::default();
    assert_eq!(
        Selection::choose(&flat, None)
            .expect("legacy")
            .servers(&servers)
            .len(),
        3,
        "legacy connects every server"
    );

    let use_web = ServerUse {
        name: "web".into(),
        tools: Some(vec!["search".into()]),
        kind: ToolsetKind::Search,
    };
    let listed = vec!["fetch".to_owned(), "search".to_owned(), "delete".to_owned()];
    assert_eq!(
        filter_listed(&use_web, &listed).expect("filtered"),
        ["search"]
    );
    let missing = ServerUse {
        name: "web".into(),
        tools: Some(vec!["gone".into()]),
        kind: ToolsetKind::Search,
    };
    assert!(
        matches!(filter_listed(&missing, &listed), Err(Error::MissingTool { tool, .. }) if tool == "gone")
    );
    let catalog = ServerUse {
        name: "web".into(),
        tools: None,
        kind: ToolsetKind::Search,
    };
    assert_eq!(filter_listed(&catalog, &listed).expect("all"), listed);
}
