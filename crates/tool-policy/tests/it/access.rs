//! Toolset selection, identity and model checks, native tool availability and server scope.

use yetibot_tool_policy::{
    AdapterKind, Denial, Error, Identity, KnownNames, NativeServices, PolicyConfig, Provenance,
    ProviderModelsConfig, RequestContext, Selection, ServerRefConfig, ServerUse, ToolPolicy,
    ToolsetConfig, ToolsetKind, check_tool_calling, filter_listed,
};

fn strings(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| (*s).to_owned()).collect())
}

fn policy() -> ToolPolicy {
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
    assert!(
        matches!(Selection::choose(&policy, None), Ok(Selection::Toolset(t)) if t.name == "search")
    );
    assert!(
        matches!(Selection::choose(&policy, Some("gh")), Ok(Selection::Toolset(t)) if t.name == "gh")
    );
    assert!(matches!(
        Selection::choose(&policy, Some("nope")),
        Err(Error::UnknownToolset)
    ));
    let flat = ToolPolicy::default();
    assert!(matches!(
        Selection::choose(&flat, None),
        Ok(Selection::Legacy)
    ));
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
    assert_eq!(denial(Selection::Legacy.authorize(&untrusted())), None);
    // GitHub toolsets always need a trusted identity.
    let gh = Selection::choose(&policy, Some("gh")).expect("gh");
    assert_eq!(
        denial(gh.authorize(&untrusted())),
        Some(Denial::UntrustedIdentity)
    );
}

#[test]
fn trusted_provenance_with_a_blank_user_id_is_refused() {
    // A blank ID used to be accepted as a trusted identity: it matched no :users entry, but
    // it still unlocked native tools and unrestricted toolsets as if a platform user sent it.
    for blank in ["", " ", "\t\n", "\u{3000}"] {
        assert!(
            matches!(
                Provenance::trusted(AdapterKind::Slack, blank),
                Err(Error::BlankUserId)
            ),
            "{blank:?}"
        );
        assert!(Identity::new(AdapterKind::Discord, blank).is_err());
    }
    let identity = Identity::new(AdapterKind::Discord, "1234567890").expect("valid");
    assert_eq!(
        (identity.adapter(), identity.user_id()),
        (AdapterKind::Discord, "1234567890")
    );
    let provenance = Provenance::Trusted(identity.clone());
    assert_eq!(provenance.identity(), Some(&identity));
    assert_eq!(Provenance::Untrusted.identity(), None);
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
        search.native_tools(&trusted(AdapterKind::Slack, "U9"), &services),
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
        search.native_tools(&trusted(AdapterKind::Discord, "U9"), &services),
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
    assert_eq!(
        Selection::Legacy.native_tools(
            &trusted(AdapterKind::Slack, "U9"),
            &NativeServices::default()
        ),
        ["help", "history", "history_count", "release_info", "util"]
    );
    // An explicit list is authoritative, and a tool without its service cannot appear.
    let narrow = Selection::choose(&policy, Some("narrow")).expect("narrow");
    assert_eq!(
        narrow.native_tools(&trusted(AdapterKind::Discord, "U1"), &services),
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
        gh.native_tools(&trusted(AdapterKind::Slack, "U1"), &all),
        ["help", "history", "history_count", "release_info"]
    );
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
    assert_eq!(
        Selection::Legacy.servers(&servers).len(),
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
