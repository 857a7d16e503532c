//! The fake's REST side: plain HTTP on 127.0.0.1, paths as a twilight-http proxy receives
//! them (`/api/v10/...`), scripted faults first, then the behaviour of the real API for the
//! routes a bot uses.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::{BOT_ID, Recorded, State, Stored, TOKEN};

pub(crate) async fn start(
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
    gateway_url: String,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let state = Arc::clone(&state);
            let changed = Arc::clone(&changed);
            let gateway_url = gateway_url.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let state = Arc::clone(&state);
                    let changed = Arc::clone(&changed);
                    let gateway_url = gateway_url.clone();
                    async move {
                        let response = handle(&state, request, &gateway_url).await;
                        changed.notify_waiters();
                        // No answer: hyper closes the connection.
                        response.ok_or_else(|| std::io::Error::other("dropped by a fault"))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn reply(status: u16, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::from(body.to_string()));
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn empty() -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::default());
    *response.status_mut() = http::StatusCode::NO_CONTENT;
    response
}

async fn handle(
    state: &Mutex<State>,
    request: Request<hyper::body::Incoming>,
    gateway_url: &str,
) -> Option<Response<Full<Bytes>>> {
    let method = request.method().as_str().to_owned();
    let full_path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let path = full_path
        .strip_prefix("/api/v10/")
        .unwrap_or(&full_path)
        .to_owned();
    let authorization = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let (fields, file) = match content_type.split_once("boundary=") {
        Some((_, boundary)) => crate::multipart::parse(&body, boundary.trim_matches('"')),
        None => (serde_json::from_slice(&body).ok(), None),
    };
    let fault = {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        state.requests.push(Recorded {
            method: method.clone(),
            path: path.clone(),
            authorization: authorization.clone(),
            fields: fields.clone(),
            file: file.clone(),
            at: Instant::now(),
        });
        let index = state
            .faults
            .iter()
            .position(|f| f.method == method && path.contains(&f.path));
        index.and_then(|i| state.faults.remove(i))
    };
    if let Some(fault) = &fault {
        if !fault.delay.is_zero() {
            tokio::time::sleep(fault.delay).await;
        }
        if !fault.apply {
            return faulted(fault);
        }
    }
    let is_callback = path.starts_with("interactions/");
    let response = if !is_callback && authorization.as_deref() != Some(&format!("Bot {TOKEN}")) {
        reply(401, &json!({"message": "401: Unauthorized", "code": 0}))
    } else {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        route(&mut state, &method, &path, fields, file, gateway_url)
    };
    match fault {
        Some(fault) => faulted(&fault),
        None => Some(response),
    }
}

/// The fault's answer, or `None` when it drops the connection.
fn faulted(fault: &crate::Fault) -> Option<Response<Full<Bytes>>> {
    if fault.drop {
        return None;
    }
    let mut response = Response::new(Full::from(fault.body.clone()));
    *response.status_mut() = http::StatusCode::from_u16(fault.status).unwrap_or_default();
    for (name, value) in &fault.headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    Some(response)
}

fn id_at(parts: &[&str], index: usize) -> Option<u64> {
    parts.get(index).and_then(|p| p.parse().ok())
}

fn route(
    state: &mut State,
    method: &str,
    path: &str,
    fields: Option<Value>,
    file: Option<(String, Vec<u8>)>,
    gateway_url: &str,
) -> Response<Full<Bytes>> {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let parts: Vec<&str> = path.split('/').collect();
    let unknown = || reply(404, &json!({"message": "Unknown Message", "code": 10008}));
    match (method, parts.as_slice()) {
        ("GET", ["users", "@me"]) => reply(
            200,
            &json!({"id": BOT_ID.to_string(), "username": "yetibot", "discriminator": "0",
                    "avatar": null, "bot": true, "mfa_enabled": false}),
        ),
        ("GET", ["gateway", "bot"]) => reply(
            200,
            &json!({"url": gateway_url, "shards": state.shards,
                    "session_start_limit": {"total": 1000, "remaining": 999,
                                            "reset_after": 1000, "max_concurrency": 16}}),
        ),
        ("POST", ["channels", _, "messages"]) => {
            let Some(channel) = id_at(&parts, 1) else {
                return unknown();
            };
            let fields = fields.unwrap_or(Value::Null);
            let nonce = fields["nonce"].as_str().map(str::to_owned);
            if fields["enforce_nonce"] == Value::Bool(true)
                && let Some(nonce) = &nonce
                && let Some(id) = state.nonces.get(&(channel, nonce.clone()))
            {
                return reply(
                    200,
                    &json!({"id": id.to_string(), "channel_id": channel.to_string()}),
                );
            }
            state.next_id += 1;
            let id = state.next_id;
            if let Some(nonce) = nonce {
                state.nonces.insert((channel, nonce), id);
            }
            state.messages.push(Stored {
                id,
                channel,
                fields,
                file,
                edits: 0,
                deleted: false,
            });
            reply(
                200,
                &json!({"id": id.to_string(), "channel_id": channel.to_string()}),
            )
        }
        ("PATCH", ["channels", _, "messages", _]) => {
            let (Some(channel), Some(id)) = (id_at(&parts, 1), id_at(&parts, 3)) else {
                return unknown();
            };
            match state
                .messages
                .iter_mut()
                .find(|m| m.id == id && m.channel == channel && !m.deleted)
            {
                Some(message) => {
                    message.fields = fields.unwrap_or(Value::Null);
                    message.file = file;
                    message.edits += 1;
                    reply(
                        200,
                        &json!({"id": id.to_string(), "channel_id": channel.to_string()}),
                    )
                }
                None => unknown(),
            }
        }
        ("DELETE", ["channels", _, "messages", _]) => {
            let (Some(channel), Some(id)) = (id_at(&parts, 1), id_at(&parts, 3)) else {
                return unknown();
            };
            match state
                .messages
                .iter_mut()
                .find(|m| m.id == id && m.channel == channel && !m.deleted)
            {
                Some(message) => {
                    message.deleted = true;
                    empty()
                }
                None => unknown(),
            }
        }
        ("PUT", ["channels", _, "messages", _, "reactions", _, "@me"]) => empty(),
        ("POST", ["channels", _, "typing"]) => empty(),
        ("POST", ["channels", _, "messages", _, "threads"]) => {
            let Some(channel) = id_at(&parts, 1) else {
                return unknown();
            };
            state.next_id += 1;
            let id = state.next_id;
            reply(200, &crate::payload::thread(id, channel))
        }
        ("GET", ["channels", _, "messages"]) => {
            let Some(channel) = id_at(&parts, 1) else {
                return unknown();
            };
            if state.forbidden.contains(&channel) {
                return reply(403, &json!({"message": "Missing Access", "code": 50001}));
            }
            let mut before = u64::MAX;
            let mut limit = 50usize;
            for pair in query.split('&') {
                match pair.split_once('=') {
                    Some(("before", v)) => before = v.parse().unwrap_or(before),
                    Some(("limit", v)) => limit = v.parse().unwrap_or(limit),
                    _ => {}
                }
            }
            let mut page: Vec<Value> = state
                .history
                .get(&channel)
                .into_iter()
                .flatten()
                .filter(|m| {
                    m["id"]
                        .as_str()
                        .and_then(|id| id.parse::<u64>().ok())
                        .is_some_and(|id| id < before)
                })
                .cloned()
                .collect();
            page.sort_by_key(|m| {
                std::cmp::Reverse(m["id"].as_str().and_then(|id| id.parse::<u64>().ok()))
            });
            page.truncate(limit);
            reply(200, &Value::Array(page))
        }
        ("POST", ["interactions", _, _, "callback"]) => empty(),
        _ => reply(404, &json!({"message": "404: Not Found", "code": 0})),
    }
}
