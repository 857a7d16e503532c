//! Cost of one long server-sent event against its length and the size of the pieces it
//! arrives in: 1, 2 and 4 MiB event lines sent in 1 KiB and 16 KiB chunks from the local
//! provider fixture, read end to end by `yetibot-ai-providers` (HTTP, SSE parsing, JSON
//! decoding). Throughput is in wire bytes, so a parser that is linear in the line length
//! shows the same throughput for every length and both chunk sizes; one that rescans an
//! unfinished line on every chunk (as `eventsource-stream` 0.2 did) falls with the length
//! and with smaller chunks.
//!
//! ```text
//! cargo bench -p benches --bench sse
//! ```

use std::sync::LazyLock;

use divan::Bencher;
use divan::counter::BytesCount;
use provider_fixture::{Fixture, Reply};
use tokio::runtime::Runtime;
use yetibot_ai_providers::{
    Client, ClientOptions, Provider, ProviderConfig, ProviderSet, TurnRequest,
};

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    divan::main();
}

const MIB: usize = 1 << 20;

struct Setup {
    _server: Runtime,
    fixture: Fixture,
}

static SETUP: LazyLock<Setup> = LazyLock::new(|| {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("server runtime");
    let fixture = server.block_on(Fixture::start()).expect("fixture");
    for mib in [1, 2, 4] {
        for chunk in [1024, 16 * 1024] {
            let body = stream(mib * MIB);
            let chunks: Vec<Vec<u8>> = body.chunks(chunk).map(<[u8]>::to_vec).collect();
            fixture.route(&path(mib, chunk), Reply::sse_bytes(chunks));
        }
    }
    Setup {
        _server: server,
        fixture,
    }
});

fn path(mib: usize, chunk: usize) -> String {
    format!("/{mib}-{chunk}/v1/responses")
}

/// One text delta whose `data:` line is `line` bytes long, then the completed response.
fn stream(line: usize) -> Vec<u8> {
    let head = br#"data: {"type":"response.output_text.delta","delta":""#;
    let tail = b"\"}\n\n";
    let mut body = head.to_vec();
    body.resize(line - tail.len(), b'x');
    body.extend_from_slice(tail);
    body.extend_from_slice(
        br#"data: {"type":"response.completed","response":{"status":"completed","output":[]}}"#,
    );
    body.extend_from_slice(b"\n\n");
    body
}

fn provider(mib: usize, chunk: usize) -> Provider {
    let base = SETUP.fixture.url(&path(mib, chunk));
    let config = ProviderConfig {
        name: Some("bench".into()),
        url: Some(base.trim_end_matches("/responses").to_owned()),
        key: Some("bench-key".into()),
        model: Some("m".into()),
        api: Some("responses".into()),
        ..ProviderConfig::default()
    };
    let set = ProviderSet::from_config(None, &[config]).expect("config");
    set.default_provider().expect("provider").clone()
}

#[divan::bench(args = [1, 2, 4], consts = [1024, 16384], sample_count = 20)]
fn long_event_line<const CHUNK: usize>(bencher: Bencher, mib: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    // Room for the longest line: the default bound is 4 Mi characters per event.
    let client = Client::new(ClientOptions {
        max_event_chars: 8 * MIB,
        ..ClientOptions::default()
    })
    .expect("client");
    let provider = provider(mib, CHUNK);
    let request = TurnRequest::prompt("long line");
    let bytes = stream(mib * MIB).len() as u64;
    bencher.counter(BytesCount::new(bytes)).bench_local(|| {
        let mut received = 0usize;
        runtime
            .block_on(client.turn(&provider, &request, &mut |event| {
                if let yetibot_ai_providers::TurnEvent::TextDelta(text) = event {
                    received += text.len();
                }
            }))
            .expect("turn");
        assert!(received > (mib * MIB) / 2);
        divan::black_box(received)
    });
}
