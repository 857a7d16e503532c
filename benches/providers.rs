//! Streaming cost of yetibot-ai-providers against the local fixture, and the same Chat Completions
//! stream read by `async-openai` in the same run.
//!
//! `responses_stream` reads a long Responses stream (about 5 MB of text deltas) end to end:
//! HTTP on 127.0.0.1, SSE framing under the crate's bounds, JSON decoding and typed events;
//! its throughput is in wire bytes. The CPU report before the divan table puts it beside two
//! references measured in the same run on the same bytes: `serde_json` decoding every event
//! payload into a `Value` (the cost of the JSON alone), and a bare hyper-util client
//! draining the same HTTP body without looking at it (the cost of the transport alone). `chat_stream` compares one streamed Chat Completions
//! answer of 5,000 chunks (one token each) read by this crate and by `async-openai` (reqwest) from the same
//! fixture. The fixture runs on its own runtime thread; the client side runs on a
//! current-thread runtime in the benchmark thread, so the time measured is the client's.
//!
//! ```text
//! cargo bench -p benches --bench providers
//! ```

use std::io::Write;
use std::sync::LazyLock;

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
};
use divan::Bencher;
use divan::counter::BytesCount;
use futures_util::StreamExt;
use provider_fixture::{Fixture, Reply};
use tokio::runtime::Runtime;
use yetibot_ai_providers::{
    Client, ClientOptions, Provider, ProviderConfig, ProviderSet, TurnRequest,
};

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The report runs for a whole-file run, not when divan is asked for one benchmark (as
    // when profiling one client).
    if std::env::args().skip(1).all(|arg| arg.starts_with('-')) {
        cpu_report();
    }
    divan::main();
}

/// CPU time of the benchmark thread, in nanoseconds (Linux `schedstat`), or `None`
/// elsewhere. Wall time on a shared machine mostly measures the neighbours; the client's
/// own CPU time does not, and the current-thread runtime keeps all client work (including
/// hyper's connection tasks) on this thread.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Prints client CPU time per streamed answer for both clients, and Responses decoding
/// throughput per CPU second, measured over the same fixture in this run. The two chat
/// clients alternate round by round so that machine load affects both alike; medians are
/// reported.
fn cpu_report() {
    const ROUNDS: usize = 101;
    let time = |run: &mut dyn FnMut()| -> Option<u64> {
        let start = thread_cpu_ns()?;
        run();
        Some(thread_cpu_ns()? - start)
    };
    let median = |mut v: Vec<u64>| -> f64 {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or_default() as f64 / 1e3
    };
    let runtime = client_runtime();
    let ours = Client::new(ClientOptions::default()).expect("client");
    let chat = provider("chat-completions");
    let burst_chat = provider_at("chat-completions", "/burst/v1");
    let burst_theirs = openai_client_at("/burst/v1");
    let mut chat_request = TurnRequest::prompt("long answer");
    chat_request.stream = true;
    let theirs = openai_client();
    let request = openai_request();
    let responses = provider("responses");
    let responses_request = TurnRequest::prompt("long answer");
    let mut ours_run = || {
        runtime
            .block_on(ours.turn(&chat, &chat_request, &mut |_| {}))
            .expect("turn");
    };
    let mut theirs_run = || {
        runtime.block_on(read_openai_stream(&theirs, &request));
    };
    let mut ours_burst = || {
        runtime
            .block_on(ours.turn(&burst_chat, &chat_request, &mut |_| {}))
            .expect("turn");
    };
    let mut theirs_burst = || {
        runtime.block_on(read_openai_stream(&burst_theirs, &request));
    };
    let drain_client = drain_client();
    let drain_url: http::Uri = SETUP.fixture.url("/v1/responses").parse().expect("uri");
    let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    let (mut json, mut floor) = (Vec::new(), Vec::new());
    let (mut burst_a, mut burst_b) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS + 5 {
        let (x, y, bx, by) = if round % 2 == 0 {
            let x = time(&mut ours_run);
            let y = time(&mut theirs_run);
            let bx = time(&mut ours_burst);
            (x, y, bx, time(&mut theirs_burst))
        } else {
            let y = time(&mut theirs_run);
            let x = time(&mut ours_run);
            let by = time(&mut theirs_burst);
            (x, y, time(&mut ours_burst), by)
        };
        let z = time(&mut || {
            runtime
                .block_on(ours.turn(&responses, &responses_request, &mut |_| {}))
                .expect("turn");
        });
        let j = time(&mut || {
            for payload in &SETUP.responses_payloads {
                let value: serde_json::Value = serde_json::from_str(payload).expect("json");
                divan::black_box(value);
            }
        });
        let f = time(&mut || {
            runtime.block_on(drain(&drain_client, drain_url.clone()));
        });
        // The first rounds warm up the pools and caches.
        if round >= 5
            && let (Some(x), Some(y), Some(z), Some(j), Some(f), Some(bx), Some(by)) =
                (x, y, z, j, f, bx, by)
        {
            burst_a.push(bx);
            burst_b.push(by);
            a.push(x);
            b.push(y);
            r.push(z);
            json.push(j);
            floor.push(f);
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = if a.is_empty() {
        writeln!(out, "thread CPU time is not available on this platform")
    } else {
        let (a, b, r) = (median(a), median(b), median(r));
        let (j, f) = (median(json), median(floor));
        let (ba, bb) = (median(burst_a), median(burst_b));
        let rate = |us: f64| SETUP.responses_bytes as f64 / us;
        writeln!(
            out,
            "median client CPU per streamed chat answer ({CHAT_CHUNKS} chunks): \
             yetibot-ai-providers {a:.0} us ({:.2} us per token), async-openai {b:.0} us \
             ({:.2} us per token; {:.2}x); \
             the same answer sent as one burst: {ba:.0} us, {bb:.0} us ({:.2}x)\n\
             Responses stream of {} bytes, MB per CPU second: yetibot-ai-providers {:.1}; \
             serde_json::Value over the payloads {:.1} (ratio {:.2}); \
             hyper body drain {:.1} (ratio {:.2})",
            a / CHAT_CHUNKS as f64,
            b / CHAT_CHUNKS as f64,
            b / a,
            bb / ba,
            SETUP.responses_bytes,
            rate(r),
            rate(j),
            rate(r) / rate(j),
            rate(f),
            rate(r) / rate(f),
        )
    };
}

fn openai_client() -> async_openai::Client<OpenAIConfig> {
    openai_client_at("/v1")
}

fn openai_client_at(base: &str) -> async_openai::Client<OpenAIConfig> {
    let config = OpenAIConfig::new()
        .with_api_base(SETUP.fixture.url(base))
        .with_api_key("bench-key");
    async_openai::Client::with_config(config)
}

fn openai_request() -> CreateChatCompletionRequest {
    CreateChatCompletionRequestArgs::default()
        .model("m")
        .messages([ChatCompletionRequestUserMessage::from("long answer").into()])
        .build()
        .expect("request")
}

async fn read_openai_stream(
    client: &async_openai::Client<OpenAIConfig>,
    request: &CreateChatCompletionRequest,
) -> usize {
    let mut stream = client
        .chat()
        .create_stream(request.clone())
        .await
        .expect("stream");
    let mut text = String::new();
    let mut chunks = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("chunk");
        chunks += 1;
        for choice in chunk.choices {
            if let Some(piece) = choice.delta.content {
                text.push_str(&piece);
            }
        }
    }
    assert!(chunks > CHAT_CHUNKS);
    text.len()
}

/// One streamed answer of 5,000 tokens, one per chunk as a model server flushes them.
const CHAT_CHUNKS: usize = 5000;
const RESPONSES_DELTAS: usize = 20_000;

struct Setup {
    server: Runtime,
    fixture: Fixture,
    responses_bytes: u64,
    responses_payloads: Vec<String>,
}

type DrainClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// A bare pooled hyper-util client, as the crate's transport uses, without TLS.
fn drain_client() -> DrainClient {
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http()
}

/// Posts to `uri` and reads the body to its end without looking at it.
async fn drain(client: &DrainClient, uri: http::Uri) -> usize {
    use http_body_util::BodyExt;
    let request = http::Request::post(uri)
        .body(http_body_util::Full::new(bytes::Bytes::from_static(b"{}")))
        .expect("request");
    let mut body = client.request(request).await.expect("response").into_body();
    let mut total = 0;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.expect("frame").into_data() {
            total += data.len();
        }
    }
    total
}

static SETUP: LazyLock<Setup> = LazyLock::new(|| {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let fixture = server.block_on(Fixture::start()).expect("fixture");
    let chat: Vec<String> = (0..CHAT_CHUNKS)
        .map(|i| {
            format!(
                r#"{{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":"word {i} of a long streamed answer "}},"finish_reason":null}}]}}"#
            )
        })
        .chain([
            r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.to_owned(),
            "[DONE]".to_owned(),
        ])
        .collect();
    // The same events once as one chunk each (a provider flushing every token) and once as a
    // single burst, which leaves the transport's per-chunk work out of the comparison.
    let burst: String = chat.iter().map(|e| format!("data: {e}\n\n")).collect();
    fixture.route("/burst/v1/chat/completions", Reply::sse_chunks([burst]));
    fixture.route("/v1/chat/completions", Reply::sse_events(chat));
    let delta = "x".repeat(200);
    let responses: Vec<String> = (0..RESPONSES_DELTAS)
        .map(|_| format!(r#"{{"type":"response.output_text.delta","delta":"{delta}"}}"#))
        .chain([r#"{"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":1,"output_tokens":2}}}"#.to_owned()])
        .collect();
    let responses_bytes = responses.iter().map(|e| e.len() as u64 + 8).sum();
    fixture.route("/v1/responses", Reply::sse_events(&responses));
    Setup {
        server,
        fixture,
        responses_bytes,
        responses_payloads: responses,
    }
});

fn client_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime")
}

fn provider(api: &str) -> Provider {
    provider_at(api, "/v1")
}

fn provider_at(api: &str, base: &str) -> Provider {
    let config = ProviderConfig {
        name: Some("bench".into()),
        url: Some(SETUP.fixture.url(base)),
        key: Some("bench-key".into()),
        model: Some("m".into()),
        api: Some(api.into()),
        ..ProviderConfig::default()
    };
    let set = ProviderSet::from_config(None, &[config]).expect("config");
    set.default_provider().expect("provider").clone()
}

#[divan::bench]
fn responses_stream(bencher: Bencher) {
    let _ = &SETUP.server;
    let runtime = client_runtime();
    let client = Client::new(ClientOptions::default()).expect("client");
    let provider = provider("responses");
    let request = TurnRequest::prompt("long answer");
    bencher
        .counter(BytesCount::new(SETUP.responses_bytes))
        .bench_local(|| {
            let turn = runtime
                .block_on(client.turn(&provider, &request, &mut |_| {}))
                .expect("turn");
            divan::black_box(turn.usage)
        });
}

mod chat_stream {
    use super::*;

    /// Where the answer comes from: one chunk per event, or everything in one burst.
    const BASES: &[&str] = &["/v1", "/burst/v1"];

    #[divan::bench(args = BASES)]
    fn ai_providers(bencher: Bencher, base: &str) {
        let runtime = client_runtime();
        let client = Client::new(ClientOptions::default()).expect("client");
        let provider = provider_at("chat-completions", base);
        let mut request = TurnRequest::prompt("long answer");
        request.stream = true;
        bencher.bench_local(|| {
            let mut deltas = 0usize;
            let turn = runtime
                .block_on(client.turn(&provider, &request, &mut |_| deltas += 1))
                .expect("turn");
            assert!(deltas > CHAT_CHUNKS);
            divan::black_box(turn.text.len())
        });
    }

    #[divan::bench(args = BASES)]
    fn async_openai(bencher: Bencher, base: &str) {
        let runtime = client_runtime();
        let client = openai_client_at(base);
        let request = openai_request();
        bencher.bench_local(|| {
            divan::black_box(runtime.block_on(read_openai_stream(&client, &request)))
        });
    }
}
