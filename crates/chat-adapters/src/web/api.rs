//! The console's routes: the page and its assets, the JSON API, attachments and the event
//! stream. [`handle`] runs the guard's checks before it looks at the path.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, LOCATION, SET_COOKIE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{Value, json};

use super::guard::{self, Refusal};
use super::{BODY_TIMEOUT, Shared, assets, sse};
use crate::event::{Action, Event, EventKind};
use crate::outbox::{IntakeError, Outbox};

/// Every response's body.
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Answers one request.
pub(crate) async fn handle(shared: &Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let bootstrap = (path == "/" && request.method() == Method::GET)
        .then(|| query_value(&query, "token"))
        .flatten();
    if let Err(refusal) = guard::check(
        request.headers(),
        &shared.token,
        shared.port,
        bootstrap.as_deref(),
    ) {
        // A person opening the page without the token (an old link, a new browser) gets a
        // page that says how to open the console; scripts and the page's own requests get
        // JSON.
        if refusal.status == StatusCode::UNAUTHORIZED
            && request.method() == Method::GET
            && !path.starts_with("/api/")
            && accepts(request.headers(), "text/html")
        {
            return locked();
        }
        return refused(&refusal);
    }
    if bootstrap.is_some() {
        return enter(shared);
    }
    let method = request.method().clone();
    if method == Method::POST && path == "/api/uploads" {
        return match upload(shared, &query, request).await {
            Ok(response) | Err(response) => response,
        };
    }
    if path.starts_with("/api/")
        && let Err(refusal) =
            guard::check_body(&method, request.headers(), shared.bounds.max_body_bytes)
    {
        return refused(&refusal);
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method.clone(), segments.as_slice()) {
        (Method::GET, [""]) => asset(assets::INDEX_HTML, "text/html; charset=utf-8"),
        (Method::GET, ["assets", "app.js"]) => {
            asset(assets::APP_JS, "text/javascript; charset=utf-8")
        }
        (Method::GET, ["assets", "style.css"]) => {
            asset(assets::STYLE_CSS, "text/css; charset=utf-8")
        }
        (Method::GET, ["api", "state"]) => {
            let room = query_value(&query, "room").unwrap_or_else(|| super::DEFAULT_ROOM.into());
            restore(shared, &room).await;
            match shared.state.snapshot(&room) {
                Ok(mut snapshot) => {
                    snapshot["operator"] =
                        json!({"id": shared.operator.id, "name": shared.operator.name});
                    json_response(StatusCode::OK, &snapshot)
                }
                Err(error) => error_response(StatusCode::NOT_FOUND, &error.to_string()),
            }
        }
        (Method::GET, ["api", "events"]) => {
            let after = request
                .headers()
                .get("last-event-id")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .or_else(|| query_value(&query, "after").and_then(|v| v.parse().ok()));
            let browser = accepts(request.headers(), "text/event-stream");
            sse::stream(shared, after, browser)
        }
        (Method::GET, ["api", "messages", id, name]) => match shared
            .state
            .attachment(id)
            .filter(|file| file.name == *name)
        {
            Some(file) => {
                let mut response = asset_owned(file.content.to_vec(), file.media_type);
                // An image is shown on the page; anything else is downloaded.
                let kind = if file.is_image() {
                    "inline"
                } else {
                    "attachment"
                };
                let disposition = format!("{kind}; filename=\"{}\"", file.name);
                if let Ok(value) = HeaderValue::try_from(disposition) {
                    response.headers_mut().insert(CONTENT_DISPOSITION, value);
                }
                response
            }
            None => error_response(StatusCode::NOT_FOUND, "that message has no attachment"),
        },
        (Method::POST, ["api", "messages"]) => match read_json::<Send>(shared, request).await {
            Ok(send) => send_message(shared, &send),
            Err(refusal) => refused(&refusal),
        },
        (Method::POST, ["api", "messages", id, "edit"]) => {
            let id = (*id).to_owned();
            match read_json::<Edit>(shared, request).await {
                Ok(edit) => edit_message(shared, &id, &edit.text),
                Err(refusal) => refused(&refusal),
            }
        }
        (Method::POST, ["api", "messages", id, "react"]) => {
            let id = (*id).to_owned();
            match read_json::<React>(shared, request).await {
                Ok(react) => react_to(shared, &id, &react.emoji),
                Err(refusal) => refused(&refusal),
            }
        }
        (Method::POST, ["api", "press"]) => match read_json::<Press>(shared, request).await {
            Ok(press) => press_button(shared, &press),
            Err(refusal) => refused(&refusal),
        },
        (Method::POST, ["api", "rooms"]) => match read_json::<NewRoom>(shared, request).await {
            Ok(room) => match shared.state.create_room(&room.name) {
                Ok(()) => json_response(StatusCode::CREATED, &json!({"name": room.name})),
                Err(error) => error_response(StatusCode::BAD_REQUEST, &error.to_string()),
            },
            Err(refusal) => refused(&refusal),
        },
        (_, ["" | "api" | "assets", ..]) if known_path(&segments) => {
            error_response(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
        }
        _ => error_response(StatusCode::NOT_FOUND, "not found"),
    }
}

/// The first time a page opens `room` in this process, shows its earlier conversation from
/// the transcript. A transcript that fails or is slow leaves the room as it is: the page
/// still opens, and the room is not looked up again.
async fn restore(shared: &Shared, room: &str) {
    let Some(transcript) = &shared.transcript else {
        return;
    };
    if !shared.state.needs_seed(room) {
        return;
    }
    let earlier = tokio::time::timeout(
        super::TRANSCRIPT_TIMEOUT,
        transcript.recent(room, super::RESTORED_MESSAGES),
    )
    .await;
    shared
        .state
        .seed(room, earlier.ok().and_then(Result::ok).unwrap_or_default());
}

fn known_path(segments: &[&str]) -> bool {
    matches!(
        segments,
        [""] | ["assets", "app.js" | "style.css"]
            | [
                "api",
                "state" | "events" | "messages" | "press" | "rooms" | "uploads"
            ]
            | ["api", "messages", _, _]
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Send {
    room: String,
    #[serde(default)]
    thread: Option<String>,
    text: String,
    /// The IDs of images uploaded for this message (`POST /api/uploads`).
    #[serde(default)]
    attachments: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Press {
    message: String,
    action: String,
    token: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct React {
    emoji: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewRoom {
    name: String,
}

fn send_message(shared: &Arc<Shared>, send: &Send) -> Response<Body> {
    let reservation = match shared.intake.reserve() {
        Ok(reservation) => reservation,
        Err(error) => return busy(error),
    };
    let files = match shared.uploads.attachments(&send.attachments) {
        Ok(files) => files,
        Err(error) => return error_response(StatusCode::BAD_REQUEST, &error.to_string()),
    };
    match shared.state.add_user_with(
        &shared.operator,
        &send.room,
        send.thread.as_deref(),
        &send.text,
        files.clone(),
    ) {
        Ok((id, place)) => {
            reservation.send(
                Event {
                    place,
                    author: shared.operator.clone(),
                    message_id: id.clone(),
                    revision: 0,
                    attachments: files,
                    kind: EventKind::Message {
                        text: send.text.clone(),
                    },
                },
                outbox(shared),
            );
            json_response(StatusCode::ACCEPTED, &json!({"id": id}))
        }
        Err(error) => error_response(StatusCode::BAD_REQUEST, &error.to_string()),
    }
}

fn edit_message(shared: &Arc<Shared>, id: &str, text: &str) -> Response<Body> {
    let reservation = match shared.intake.reserve() {
        Ok(reservation) => reservation,
        Err(error) => return busy(error),
    };
    match shared.state.edit_user(&shared.operator, id, text) {
        Ok((place, revision)) => {
            reservation.send(
                Event {
                    place,
                    author: shared.operator.clone(),
                    message_id: id.to_owned(),
                    revision,
                    attachments: shared.state.files_of(id),
                    kind: EventKind::Edited {
                        text: text.to_owned(),
                    },
                },
                outbox(shared),
            );
            json_response(
                StatusCode::ACCEPTED,
                &json!({"id": id, "revision": revision}),
            )
        }
        Err(error) => error_response(StatusCode::BAD_REQUEST, &error.to_string()),
    }
}

fn press_button(shared: &Arc<Shared>, press: &Press) -> Response<Body> {
    let Some(action) = Action::parse(&press.action) else {
        return error_response(StatusCode::BAD_REQUEST, "unknown button action");
    };
    // Only a button the console showed can be pressed: the page cannot invent one.
    let Some(place) = shared.state.has_button(&press.message, &press.token) else {
        return error_response(
            StatusCode::NOT_FOUND,
            "that button is no longer shown; send the command again",
        );
    };
    let reservation = match shared.intake.reserve() {
        Ok(reservation) => reservation,
        Err(error) => return busy(error),
    };
    reservation.send(
        Event {
            place,
            author: shared.operator.clone(),
            message_id: press.message.clone(),
            revision: 0,
            attachments: Vec::new(),
            kind: EventKind::Pressed {
                action,
                token: press.token.clone(),
            },
        },
        outbox(shared),
    );
    json_response(StatusCode::ACCEPTED, &json!({}))
}

fn react_to(shared: &Arc<Shared>, id: &str, emoji: &str) -> Response<Body> {
    let emoji = emoji.trim();
    if emoji.is_empty()
        || emoji.chars().count() > super::MAX_EMOJI_CHARS
        || emoji.chars().any(char::is_control)
    {
        return error_response(
            StatusCode::BAD_REQUEST,
            "an emoji is 1 to 64 characters without control characters",
        );
    }
    let Some((place, on_bot_message)) = shared.state.reaction_target(id) else {
        return error_response(StatusCode::NOT_FOUND, "there is no message with that ID");
    };
    let reservation = match shared.intake.reserve() {
        Ok(reservation) => reservation,
        Err(error) => return busy(error),
    };
    reservation.send(
        Event {
            place,
            author: shared.operator.clone(),
            message_id: id.to_owned(),
            revision: 0,
            attachments: Vec::new(),
            kind: EventKind::Reacted {
                emoji: emoji.to_owned(),
                on_bot_message,
            },
        },
        outbox(shared),
    );
    json_response(StatusCode::ACCEPTED, &json!({}))
}

fn outbox(shared: &Arc<Shared>) -> Arc<dyn Outbox> {
    Arc::clone(&shared.outbox) as Arc<dyn Outbox>
}

fn busy(error: IntakeError) -> Response<Body> {
    error_response(StatusCode::SERVICE_UNAVAILABLE, &error.to_string())
}

/// Reads a JSON body of at most the console's bound, within [`BODY_TIMEOUT`].
async fn read_json<T: serde::de::DeserializeOwned>(
    shared: &Shared,
    request: Request<Incoming>,
) -> Result<T, Refusal> {
    let bytes = read_body(request, shared.bounds.max_body_bytes, guard::too_large()).await?;
    serde_json::from_slice(&bytes).map_err(|_| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            "the body is not the JSON object this endpoint takes",
        )
    })
}

/// A whole request body of at most `limit` bytes, sent within [`BODY_TIMEOUT`]; `too_large`
/// is the refusal past the bound.
async fn read_body(
    request: Request<Incoming>,
    limit: usize,
    too_large: Refusal,
) -> Result<Bytes, Refusal> {
    let limited = Limited::new(request.into_body(), limit);
    match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Err(_) => Err(Refusal::new(
            StatusCode::REQUEST_TIMEOUT,
            "the request body was not sent in time",
        )),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => Err(too_large),
        Ok(Err(_)) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// `POST /api/uploads?name=<file name>`: one image the operator attaches to the next
/// message, its raw bytes under its media type (PNG, JPEG or WebP), at most
/// [`MAX_UPLOAD_BYTES`](super::MAX_UPLOAD_BYTES). Answers its ID; the image is checked again
/// (magic bytes, dimensions) by whatever command reads it.
async fn upload(
    shared: &Shared,
    query: &str,
    request: Request<Incoming>,
) -> Result<Response<Body>, Response<Body>> {
    let media_type = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| super::uploads::UPLOAD_TYPES.contains(&v.as_str()))
        .ok_or_else(|| {
            error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "attach PNG, JPEG or WebP images only",
            )
        })?;
    let too_large = Refusal::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "an attached image is limited to 4 MiB",
    );
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > super::MAX_UPLOAD_BYTES as u64) {
        return Err(refused(&too_large));
    }
    let name = query_value(query, "name")
        .and_then(|name| super::uploads::percent_decoded(&name))
        .unwrap_or_else(|| "image".to_owned());
    let bytes = read_body(request, super::MAX_UPLOAD_BYTES, too_large)
        .await
        .map_err(|refusal| refused(&refusal))?;
    match shared.uploads.add(&name, &media_type, bytes.to_vec()) {
        Ok(id) => Ok(json_response(StatusCode::CREATED, &json!({"id": id}))),
        Err(error) => Err(error_response(StatusCode::BAD_REQUEST, &error.to_string())),
    }
}

/// The first visit: the token moves into the cookie and out of the address bar.
fn enter(shared: &Shared) -> Response<Body> {
    let mut response = empty(StatusCode::SEE_OTHER);
    response
        .headers_mut()
        .insert(LOCATION, HeaderValue::from_static("/"));
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        guard::cookie_name(shared.port),
        shared.token.expose()
    );
    if let Ok(value) = HeaderValue::try_from(cookie) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    response
}

/// The value of `name` in a query string, as written (console values need no decoding).
fn query_value(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

/// Headers every response carries: no caching, no sniffing, no framing, no referrer.
pub(crate) fn secure(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: http: data:; \
             media-src https: http:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    response
}

pub(crate) fn body(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(body(Bytes::new()));
    *response.status_mut() = status;
    secure(response)
}

fn asset(content: &'static str, media_type: &'static str) -> Response<Body> {
    let mut response = Response::new(body(content));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(media_type));
    secure(response)
}

fn asset_owned(content: Vec<u8>, media_type: &'static str) -> Response<Body> {
    let mut response = Response::new(body(content));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(media_type));
    secure(response)
}

pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(body(value.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    secure(response)
}

pub(crate) fn error_response(status: StatusCode, message: &str) -> Response<Body> {
    json_response(status, &json!({"error": message}))
}

/// Whether the request's `Accept` names `media`: how a browser's page load or `EventSource`
/// tells itself apart from a script.
fn accepts(headers: &http::HeaderMap, media: &str) -> bool {
    headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains(media))
}

/// The page for a browser without the token, with the refusal's status.
fn locked() -> Response<Body> {
    let mut response = asset(assets::LOCKED_HTML, "text/html; charset=utf-8");
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response
        .headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A refused request's response. The connection closes after it, so that a client without
/// the token cannot keep connection slots by staying connected.
fn refused(refusal: &Refusal) -> Response<Body> {
    let mut response = error_response(refusal.status, refusal.message);
    response
        .headers_mut()
        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    response
}
