//! The `ai` listings and the runtime default: `providers`, `models`, `servers`, `tools`,
//! `toolsets` and `default`. None of them sends a prompt.

use serde_json::json;
use yetibot_ai_providers::{Price, Pricing, Provider, RouteRequest, WireApi};
use yetibot_conversation::Provenance;
use yetibot_conversation::limits::MAX_TOOLS;
use yetibot_json_util::Value;
use yetibot_mcp_host::{ServerCatalog, ToolInfo};
use yetibot_tool_policy::{RequestContext, Selection};

use crate::free;
use crate::natives;
use crate::offer;
use crate::request::{RUNNER_INSTRUCTIONS, to_value};
use crate::services::AiServices;
use yetibot_command::Call;
use yetibot_command::{Outcome, PathStep};

fn api_name(api: WireApi) -> &'static str {
    match api {
        WireApi::ChatCompletions => "chat-completions",
        WireApi::Responses => "responses",
    }
}

/// `ai providers`: one row per provider in configuration order, with its default model,
/// wire API and whether it is the default; records hold the same fields.
pub(crate) fn providers(services: &AiServices) -> Outcome {
    let providers = services.providers.providers();
    if providers.is_empty() {
        return Outcome::error(
            "no AI provider is configured; add one under :yetibot :ai :providers",
        );
    }
    let default = services.providers.default_provider().map(Provider::name);
    let mut rows = Vec::new();
    let mut records = Vec::new();
    for provider in providers {
        let is_default = Some(provider.name()) == default;
        rows.push(Value::String(format!(
            "{}: {}, {}{}",
            provider.name(),
            provider
                .model()
                .map_or_else(|| "no default model".to_owned(), |m| format!("model {m}")),
            api_name(provider.api()),
            if is_default { " (default)" } else { "" },
        )));
        records.push(to_value(&json!({
            "name": provider.name(),
            "model": provider.model(),
            "api": api_name(provider.api()),
            "default": is_default,
            "tool_calling": provider.tool_calling(),
        })));
    }
    Outcome::Data {
        value: Value::Array(rows),
        data: Some(Value::Array(records)),
        path: None,
    }
}

/// `ai models [provider]`: one provider's model IDs, or every provider's, each row labelled
/// with its provider. One provider's failure is a note beside the rows and hides no other
/// list.
pub(crate) async fn models(services: &AiServices, provider: Option<&str>) -> Outcome {
    if services.providers.is_empty() {
        return Outcome::error(
            "no AI provider is configured; add one under :yetibot :ai :providers",
        );
    }
    if let Some(name) = provider {
        let Some(provider) = services.providers.get(name) else {
            return Outcome::error(format!(
                "no provider is named {name}; `ai providers` lists them"
            ));
        };
        return provider_models(services, provider).await;
    }
    let mut rows = Vec::new();
    let mut records = Vec::new();
    let mut failures = Vec::new();
    for (name, result) in services.client.list_all(&services.providers).await {
        match result {
            Ok(list) if list.models.is_empty() => {
                rows.push(Value::String(format!("{name}: (no models listed)")));
                records.push(to_value(&json!({"provider": name, "id": null})));
            }
            Ok(list) => {
                for model in &list.models {
                    rows.push(Value::String(format!("{name}: {}", model.id)));
                    records.push(model_record(&name, model));
                }
            }
            Err(error) => failures.push(format!("{name}: {}", error.user_message())),
        }
    }
    // Only when every provider failed is the listing itself a failure.
    if failures.len() == services.providers.providers().len() {
        return Outcome::error(failures.join("; "));
    }
    // A provider that could not be listed is a note beside the rows, not a row: the rows
    // are models, so that `ai models | count` counts models.
    Outcome::Data {
        value: Value::Array(rows),
        data: Some(Value::Array(records)),
        path: None,
    }
    .with_notes(failures)
}

/// One provider's model IDs, fetched now, each row paired with its record (`ai models
/// <provider>`, `zen models`).
pub(crate) async fn provider_models(services: &AiServices, provider: &Provider) -> Outcome {
    let name = provider.name();
    match services.client.list_models(provider).await {
        Ok(list) => {
            let mut rows = Vec::new();
            let mut records = Vec::new();
            for model in &list.models {
                rows.push(Value::String(model.id.clone()));
                records.push(model_record(name, model));
            }
            if rows.is_empty() {
                return Outcome::text(format!("{name} lists no models"));
            }
            Outcome::Data {
                value: Value::Array(rows),
                data: Some(Value::Array(records)),
                path: None,
            }
        }
        Err(error) => Outcome::error(format!("{name}: {}", error.user_message())),
    }
}

fn model_record(provider: &str, model: &yetibot_ai_providers::ModelInfo) -> Value {
    let mut record = json!({"provider": provider, "id": model.id});
    if let Some(length) = model.context_length {
        record["context_length"] = json!(length);
    }
    if let Some(catalog) = &model.record {
        record["catalog"] = catalog.clone();
    }
    if let Some(pricing) = &model.pricing {
        record["pricing"] = pricing_record(pricing);
        record["verified_free"] = json!(pricing.is_free());
    }
    to_value(&record)
}

/// Advertised prices as data: each an exact decimal string, `null` when not stated, or
/// `"not a number"`; tiers nested; unknown cost fields by name.
fn pricing_record(pricing: &Pricing) -> serde_json::Value {
    let price = |price: &Price| match price {
        Price::Exact(amount) => json!(amount.to_string()),
        Price::Missing => serde_json::Value::Null,
        Price::Unreadable => json!("not a number"),
    };
    let mut record = json!({"input": price(&pricing.input), "output": price(&pricing.output)});
    for (name, cache) in &pricing.cache {
        record[name.as_str()] = price(cache);
    }
    for (name, tier) in &pricing.tiers {
        record[name.as_str()] = pricing_record(tier);
    }
    if !pricing.unknown.is_empty() || pricing.unknown_truncated {
        record["unknown"] = json!(pricing.unknown);
    }
    record
}

/// `ai servers`: the configured MCP servers.
pub(crate) fn servers(services: &AiServices, call: &Call<'_>) -> Outcome {
    let policy = &services.policy;
    let context = listing_context(services, call);
    // With named toolsets, a caller sees the servers their toolsets read from; a writer
    // connection (a github-pr toolset's `:write-server`) is never listed, since no prompt
    // reads from it.
    let readable: Option<std::collections::HashSet<&str>> =
        (!policy.toolsets().is_empty()).then(|| {
            policy
                .toolsets()
                .iter()
                .filter(|toolset| toolset.admits(&context.provenance))
                .flat_map(|toolset| toolset.servers.iter().map(|s| s.name.as_str()))
                .collect()
        });
    let configured = services.host.servers();
    let rows: Vec<String> = configured
        .servers()
        .iter()
        .zip(yetibot_mcp_host::server_rows(configured))
        .filter(|(server, _)| readable.as_ref().is_none_or(|r| r.contains(server.name())))
        .map(|(_, row)| row)
        .collect();
    if rows.is_empty() {
        return Outcome::text(if configured.servers().is_empty() {
            "no MCP servers are configured"
        } else {
            "no MCP server is available to you"
        });
    }
    Outcome::lines(rows)
}

/// `ai toolsets`: the named toolsets this caller may use, the default marked. A toolset
/// whose users or adapters exclude the caller is not shown to them.
pub(crate) fn toolsets(services: &AiServices, call: &Call<'_>) -> Outcome {
    let policy = &services.policy;
    if policy.toolsets().is_empty() {
        return Outcome::text(
            "no named toolsets are configured: every configured MCP server is available to prompts",
        );
    }
    let context = listing_context(services, call);
    let default = policy.default_toolset().map(|t| t.name.as_str());
    let mut rows = Vec::new();
    let mut records = Vec::new();
    for toolset in policy
        .toolsets()
        .iter()
        .filter(|toolset| toolset.admits(&context.provenance))
    {
        let servers: Vec<&str> = toolset.servers.iter().map(|s| s.name.as_str()).collect();
        rows.push(Value::String(format!(
            "{} ({}){}: servers {}",
            toolset.name,
            toolset.kind.as_str(),
            if Some(toolset.name.as_str()) == default {
                ", default"
            } else {
                ""
            },
            if servers.is_empty() {
                "none".to_owned()
            } else {
                servers.join(", ")
            },
        )));
        records.push(to_value(&json!({
            "name": toolset.name,
            "kind": toolset.kind.as_str(),
            "default": Some(toolset.name.as_str()) == default,
            "servers": servers,
            "native_tools": toolset.native_tools,
        })));
    }
    if rows.is_empty() {
        return Outcome::text("no named toolset is available to you");
    }
    Outcome::Data {
        value: Value::Array(rows),
        data: Some(Value::Array(records)),
        path: None,
    }
}

/// The context a listing is checked against: the caller, and the route a prompt without
/// options would take (empty names when there is none, which match no provider rule).
fn listing_context(services: &AiServices, call: &Call<'_>) -> RequestContext {
    let caller = call.runner.caller();
    let provenance = if caller.trusted {
        Provenance::trusted(caller.adapter, caller.user_id.clone()).unwrap_or(Provenance::Untrusted)
    } else {
        Provenance::Untrusted
    };
    let route = yetibot_ai_providers::route(
        &services.providers,
        &services.defaults,
        |model| services.owner_of(model),
        RouteRequest::default(),
    )
    .ok();
    RequestContext {
        provenance,
        provider: route
            .as_ref()
            .map(|r| r.provider.clone())
            .unwrap_or_default(),
        model: route.map(|r| r.model).unwrap_or_default(),
    }
}

/// The native tools this caller may see, as listing entries under the `yetibot` source.
fn native_infos(
    services: &AiServices,
    call: &Call<'_>,
    selection: &Selection<'_>,
    context: &RequestContext,
) -> Vec<ToolInfo> {
    let secrets = services.client.secrets();
    let history_on = call.runner.history().is_some();
    selection
        .native_tools(
            context,
            &natives::configured_services(services, call.runner.caller()),
        )
        .into_iter()
        .filter_map(|tool| natives::native(tool.name())?.definition(history_on))
        .filter_map(|definition| {
            let listed = json!({
                "name": definition.id().name(),
                "description": definition.description(),
                "inputSchema": definition.parameters(),
            });
            ToolInfo::from_listed(definition.id().source(), &listed, secrets).ok()
        })
        .collect()
}

/// `ai tools [selector]`: one row per tool the caller may use (`server/name` — summary),
/// paired with its record; a server name lists that server's tools; a tool ID, a unique bare
/// name or a whole row shows that tool's help. Only the source a selector names is
/// connected; nothing is called and no model runs.
pub(crate) async fn tools(services: &AiServices, call: &Call<'_>, selector: &str) -> Outcome {
    let selector = selector.trim();
    let selection = match Selection::choose(&services.policy, None) {
        Ok(selection) => selection,
        Err(error) => return Outcome::error(error.to_string()),
    };
    let context = listing_context(services, call);
    // Hidden, not refused: a caller the default toolset does not admit sees no tools.
    let admitted = selection.authorize(&context).is_ok();
    let uses = if admitted {
        offer::server_uses(services, &selection)
    } else {
        Vec::new()
    };
    // Which source the selector names, if any: a server name, or the part before `/` of
    // an ID (a row's ID sits between its first pair of backticks).
    let id_text = selector
        .strip_prefix('`')
        .and_then(|rest| rest.split('`').next())
        .unwrap_or(selector);
    let source = match id_text.split_once('/') {
        Some((source, _)) => Some(source),
        None if !selector.is_empty()
            && (selector == yetibot_conversation::NATIVE_SOURCE
                || uses.iter().any(|u| u.name == selector)) =>
        {
            Some(selector)
        }
        None => None,
    };
    let mut infos = if admitted {
        native_infos(services, call, &selection, &context)
    } else {
        Vec::new()
    };
    let connect: Vec<&yetibot_tool_policy::ServerUse> = uses
        .iter()
        .filter(|u| source.is_none_or(|s| s == u.name))
        .collect();
    let mut instructions = Vec::new();
    let mut dropped = Vec::new();
    if source != Some(yetibot_conversation::NATIVE_SOURCE) && !connect.is_empty() {
        let wanted = offer::server_selection(connect.iter().copied(), MAX_TOOLS);
        let session = match services.host.open_selection(&wanted).await {
            Ok(session) => session,
            Err(error) => return Outcome::error(error.to_string()),
        };
        for server in &connect {
            let listed: Vec<String> = session
                .catalog()
                .tools()
                .iter()
                .filter(|t| t.id().source() == server.name)
                .map(|t| t.id().name().to_owned())
                .collect();
            let kept = yetibot_tool_policy::filter_listed(server, &listed).unwrap_or_default();
            infos.extend(
                session
                    .catalog()
                    .tools()
                    .iter()
                    .filter(|t| {
                        t.id().source() == server.name && kept.iter().any(|k| k == t.id().name())
                    })
                    .cloned(),
            );
        }
        instructions.extend(session.catalog().servers().iter().cloned());
        dropped.extend(session.catalog().dropped().iter().cloned());
        session.close().await;
    }
    let catalog = ServerCatalog::with_dropped(infos, instructions, dropped);
    let listing_source = source.filter(|s| *s == selector);
    if selector.is_empty() || listing_source.is_some() {
        let rows = yetibot_mcp_host::summary_rows(&catalog, listing_source);
        if rows.is_empty() {
            return Outcome::text("no tools are available to you here");
        }
        let data = yetibot_mcp_host::aggregate_data(&catalog, RUNNER_INSTRUCTIONS);
        let data = to_value(&data);
        return Outcome::Data {
            value: Value::Array(rows.into_iter().map(Value::String).collect()),
            data: Some(data),
            path: Some(vec![PathStep::Key("tools".to_owned())]),
        };
    }
    match yetibot_mcp_host::lookup(&catalog, selector) {
        Ok(tool) => Outcome::Data {
            value: Value::String(yetibot_mcp_host::focused_help(tool)),
            data: Some(to_value(&yetibot_mcp_host::tool_data(tool))),
            path: None,
        },
        Err(error) => Outcome::error(error.to_string()),
    }
}

/// `ai default [provider model | reset]`: anyone may look; only an admin sending the
/// command directly may set or reset it. A Zen model is accepted only when the catalog,
/// fetched now, shows it free.
pub(crate) async fn default(services: &AiServices, call: &Call<'_>, args: &str) -> Outcome {
    let words: Vec<&str> = args.split_whitespace().collect();
    if words.is_empty() {
        return match services.defaults.get() {
            Some(route) => Outcome::text(format!(
                "AI default: {} {} (set at run time; `ai default reset` restores the configured default)",
                route.provider, route.model
            )),
            None => match services.providers.default_provider() {
                Some(provider) => Outcome::text(format!(
                    "AI default: {} {} (configured)",
                    provider.name(),
                    provider.model().unwrap_or("(no default model)")
                )),
                None => Outcome::text("no AI provider is configured"),
            },
        };
    }
    if !call.runner.is_direct() || !call.runner.is_admin() {
        return Outcome::error(
            "only an admin listed in :admin :users can change the AI default, by sending the command directly (not through pipes, aliases or other commands)",
        );
    }
    match words.as_slice() {
        ["reset"] => {
            services.defaults.reset();
            Outcome::text("AI default reset to the configured default")
        }
        [provider, model] => {
            let on_zen = services.providers.get(provider).filter(|p| free::is_zen(p));
            if let Some(zen_provider) = on_zen
                && let Err(reason) = free::verify_free(services, zen_provider, model).await
            {
                return Outcome::error(format!(
                    "{reason}; a Zen runtime default must be free, so the AI default is unchanged"
                ));
            }
            match services.defaults.set(&services.providers, provider, model) {
                Ok(()) if on_zen.is_some() => Outcome::text(format!(
                    "AI default set to {provider} {model} (verified free now; every automatic request checks again)"
                )),
                Ok(()) => Outcome::text(format!("AI default set to {provider} {model}")),
                Err(error) => Outcome::error(error.to_string()),
            }
        }
        _ => Outcome::error("usage: ai default [<provider> <model> | reset]"),
    }
}
