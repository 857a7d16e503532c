//! The bot's [`Outbox`] on Slack: messages posted in the thread of the message that asked,
//! edited and deleted by their timestamps, reactions, long answers' files, and complete
//! thread histories from `conversations.replies`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::api::{Api, ApiError, is_gone};
use super::blocks::{Rendered, render};
use super::inbound::{BotIdentity, decode, micros};
use super::names::Names;
use crate::event::Place;
use crate::fit::Limits;
use crate::outbox::{HistoryError, HistoryLimits, HistoryMessage, Outbox, Posted, SendError};
use crate::reply::{Attachment, Outgoing};

/// How many messages one `conversations.replies` page asks for.
pub const HISTORY_PAGE: usize = 200;

/// The prefix that marks a posted file's ID among message timestamps.
const FILE: &str = "file:";

/// The Slack outbox of one connection.
#[derive(Debug)]
pub(crate) struct SlackOutbox {
    pub(crate) api: Api,
    pub(crate) names: Arc<Names>,
    pub(crate) me: BotIdentity,
}

enum Item {
    Message(Value),
    File(Attachment),
}

fn items(messages: &[Outgoing]) -> Vec<Item> {
    let mut out = Vec::new();
    for message in messages {
        let Rendered { payloads, file } = render(message);
        // An image with no text of its own (a generated one) goes up before the buttons
        // under it, so that they stay the last thing of the answer.
        if message.text.is_empty() && file.as_ref().is_some_and(Attachment::is_image) {
            out.extend(file.map(Item::File));
            out.extend(payloads.into_iter().map(Item::Message));
        } else {
            out.extend(payloads.into_iter().map(Item::Message));
            out.extend(file.map(Item::File));
        }
    }
    out
}

fn send_error(error: &ApiError) -> SendError {
    match error {
        ApiError::Refused { code, .. } => SendError::Refused(match code.as_str() {
            "not_in_channel" => "the bot is not in this channel; invite it first",
            "channel_not_found" => "the channel is unknown or the bot cannot see it",
            "missing_scope" => {
                "the bot lacks a Slack scope it needs (chat:write, files:write or reactions:write)"
            }
            "msg_too_long" => "the message is too long for Slack",
            "invalid_blocks" => "Slack refused the message's layout",
            "is_archived" => "the channel is archived",
            "cant_update_message" | "cant_delete_message" => "the bot cannot change that message",
            "invalid_name" => "Slack knows no emoji of that name",
            _ => "Slack refused the request",
        }),
        ApiError::RateLimited => {
            SendError::Refused("Slack is rate limiting the bot; try again in a minute")
        }
        ApiError::Unconfirmed(reason) => SendError::Unconfirmed(reason),
    }
}

fn history_error(error: &ApiError) -> HistoryError {
    match error {
        ApiError::Refused { code, needed } if code == "missing_scope" => {
            HistoryError::Unavailable(missing_scope(needed.as_deref()))
        }
        ApiError::Refused { code, .. }
            if code == "not_in_channel" || code == "channel_not_found" =>
        {
            HistoryError::Unavailable("the bot cannot read this conversation's history")
        }
        ApiError::Refused { .. } => HistoryError::Unavailable("Slack refused to read the thread"),
        ApiError::RateLimited => HistoryError::Unavailable("Slack is rate limiting the bot"),
        ApiError::Unconfirmed(_) => {
            HistoryError::Unavailable("a page of the thread could not be read")
        }
    }
}

/// The reason for a missing history scope, naming the scope.
fn missing_scope(needed: Option<&str>) -> &'static str {
    const SCOPES: [(&str, &str); 4] = [
        (
            "channels:history",
            "the Slack app lacks the scope channels:history",
        ),
        (
            "groups:history",
            "the Slack app lacks the scope groups:history",
        ),
        ("im:history", "the Slack app lacks the scope im:history"),
        ("mpim:history", "the Slack app lacks the scope mpim:history"),
    ];
    needed
        .and_then(|needed| SCOPES.iter().find(|(scope, _)| needed.contains(scope)))
        .map_or(
            "the Slack app lacks a history scope (channels:history, groups:history, im:history or mpim:history)",
            |(_, reason)| reason,
        )
}

impl SlackOutbox {
    async fn post_one(&self, place: &Place, payload: Value) -> Result<String, SendError> {
        let mut body = payload;
        body["channel"] = json!(place.room);
        if let Some(thread) = &place.thread {
            body["thread_ts"] = json!(thread);
        }
        // Nothing in the text may become a mention: names are never linked.
        body["link_names"] = json!(false);
        body["unfurl_links"] = json!(false);
        let answer = self
            .api
            .post("chat.postMessage", &body)
            .await
            .map_err(|e| send_error(&e))?;
        answer
            .get("ts")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(SendError::Unconfirmed(
                "Slack's answer had no message timestamp",
            ))
    }

    async fn update(&self, place: &Place, ts: &str, payload: Value) -> Result<(), ApiError> {
        let mut body = payload;
        body["channel"] = json!(place.room);
        body["ts"] = json!(ts);
        body["link_names"] = json!(false);
        self.api.post("chat.update", &body).await.map(|_| ())
    }

    async fn upload(&self, place: &Place, file: &Attachment) -> Result<String, SendError> {
        let length = file.content.len().to_string();
        let ticket = self
            .api
            .get(
                "files.getUploadURLExternal",
                &[
                    ("filename", file.name.as_str()),
                    ("length", length.as_str()),
                ],
            )
            .await
            .map_err(|e| send_error(&e))?;
        let (Some(url), Some(id)) = (
            ticket.get("upload_url").and_then(Value::as_str),
            ticket.get("file_id").and_then(Value::as_str),
        ) else {
            return Err(SendError::Unconfirmed(
                "Slack's answer had no upload address",
            ));
        };
        self.api
            .upload(url, &file.content)
            .await
            .map_err(|e| send_error(&e))?;
        let mut complete =
            json!({"files": [{"id": id, "title": file.name}], "channel_id": place.room});
        if let Some(thread) = &place.thread {
            complete["thread_ts"] = json!(thread);
        }
        self.api
            .post("files.completeUploadExternal", &complete)
            .await
            .map_err(|e| send_error(&e))?;
        Ok(format!("{FILE}{id}"))
    }

    async fn remove(&self, place: &Place, id: &str) -> Result<(), SendError> {
        let outcome = match id.strip_prefix(FILE) {
            Some(file) => self.api.post("files.delete", &json!({"file": file})).await,
            None => {
                self.api
                    .post("chat.delete", &json!({"channel": place.room, "ts": id}))
                    .await
            }
        };
        match outcome {
            Ok(_) => Ok(()),
            Err(error) if is_gone(&error) => Ok(()),
            Err(error) => Err(send_error(&error)),
        }
    }

    async fn post_items(&self, place: &Place, items: Vec<Item>) -> Result<Vec<String>, SendError> {
        let mut ids = Vec::with_capacity(items.len());
        for item in items {
            ids.push(match item {
                Item::Message(payload) => self.post_one(place, payload).await?,
                Item::File(file) => self.upload(place, &file).await?,
            });
        }
        Ok(ids)
    }

    async fn read_thread(
        &self,
        place: &Place,
        before: &str,
        limits: HistoryLimits,
    ) -> Result<Vec<HistoryMessage>, HistoryError> {
        let Some(thread) = place.thread.as_deref() else {
            return Ok(Vec::new());
        };
        let Some(before_at) = micros(before) else {
            return Err(HistoryError::Unavailable(
                "the message's timestamp is malformed",
            ));
        };
        // The message that starts a thread has nothing before it there.
        if thread == before {
            return Ok(Vec::new());
        }
        let page_limit = HISTORY_PAGE.to_string();
        let most_pages = limits.max_messages / HISTORY_PAGE + 2;
        let mut cursor = String::new();
        let mut out = Vec::new();
        let mut bytes = 0usize;
        // Every page of `conversations.replies` starts with the thread's parent message
        // again: each message counts once, by its timestamp.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..most_pages {
            let mut params = vec![
                ("channel", place.room.as_str()),
                ("ts", thread),
                ("limit", page_limit.as_str()),
            ];
            if !cursor.is_empty() {
                params.push(("cursor", cursor.as_str()));
            }
            let page = self
                .api
                .get("conversations.replies", &params)
                .await
                .map_err(|e| history_error(&e))?;
            let Some(messages) = page.get("messages").and_then(Value::as_array) else {
                return Err(HistoryError::Unavailable("Slack's answer had no messages"));
            };
            for message in messages {
                let Some(ts) = message.get("ts").and_then(Value::as_str).and_then(micros) else {
                    continue;
                };
                if ts >= before_at || !is_text_message(message) || !seen.insert(ts) {
                    continue;
                }
                let text = decode(
                    message
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                );
                if text.trim().is_empty() {
                    continue;
                }
                let user = message.get("user").and_then(Value::as_str);
                let from_bot = self
                    .me
                    .is_self(user, message.get("bot_id").and_then(Value::as_str));
                let author = match user {
                    _ if from_bot => self.me.name.clone(),
                    Some(user) => self
                        .names
                        .user(&self.api, user)
                        .await
                        .unwrap_or_else(|_| user.to_owned()),
                    None => message
                        .get("username")
                        .and_then(Value::as_str)
                        .unwrap_or("a bot")
                        .to_owned(),
                };
                bytes = bytes.saturating_add(text.len());
                out.push((
                    ts,
                    HistoryMessage {
                        author,
                        text,
                        from_bot,
                    },
                ));
                if out.len() > limits.max_messages || bytes > limits.max_bytes {
                    return Err(HistoryError::TooLong);
                }
            }
            let more = page.get("has_more").and_then(Value::as_bool) == Some(true);
            let next = page
                .pointer("/response_metadata/next_cursor")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if next.is_empty() {
                if more {
                    return Err(HistoryError::Unavailable(
                        "Slack said the thread goes on but gave no next page",
                    ));
                }
                out.sort_by_key(|(ts, _)| *ts);
                return Ok(out.into_iter().map(|(_, m)| m).collect());
            }
            cursor = next.to_owned();
        }
        Err(HistoryError::TooLong)
    }
}

/// Text messages people and bots wrote; joins, topic changes and the like are not part of
/// a conversation.
fn is_text_message(message: &Value) -> bool {
    matches!(
        message.get("subtype").and_then(Value::as_str),
        None | Some("thread_broadcast" | "file_share" | "bot_message" | "me_message")
    )
}

impl Outbox for SlackOutbox {
    fn limits(&self) -> Limits {
        Limits::SLACK
    }

    fn attachment_token(&self, url: &str) -> Option<yetibot_redaction::Secret> {
        self.api.file_token(url)
    }

    fn post<'a>(
        &'a self,
        place: &'a Place,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>> {
        Box::pin(async move {
            let ids = self.post_items(place, items(&messages)).await?;
            Ok(Posted {
                place: place.clone(),
                ids,
            })
        })
    }

    fn replace<'a>(
        &'a self,
        posted: &'a Posted,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>> {
        Box::pin(async move {
            let place = &posted.place;
            let (files, mut old): (Vec<&String>, Vec<&String>) =
                posted.ids.iter().partition(|id| id.starts_with(FILE));
            old.reverse();
            for file in files {
                self.remove(place, file).await?;
            }
            let mut ids = Vec::new();
            let mut rest = Vec::new();
            for item in items(&messages) {
                match item {
                    Item::Message(payload) if rest.is_empty() => match old.pop() {
                        Some(ts) => match self.update(place, ts, payload.clone()).await {
                            Ok(()) => ids.push(ts.clone()),
                            Err(error) if is_gone(&error) => rest.push(Item::Message(payload)),
                            Err(error) => return Err(send_error(&error)),
                        },
                        None => rest.push(Item::Message(payload)),
                    },
                    item => rest.push(item),
                }
            }
            for ts in old {
                self.remove(place, ts).await?;
            }
            ids.extend(self.post_items(place, rest).await?);
            Ok(Posted {
                place: place.clone(),
                ids,
            })
        })
    }

    fn delete<'a>(&'a self, posted: &'a Posted) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let mut outcome = Ok(());
            for id in &posted.ids {
                if let Err(error) = self.remove(&posted.place, id).await {
                    outcome = Err(error);
                }
            }
            outcome
        })
    }

    fn react<'a>(
        &'a self,
        place: &'a Place,
        message_id: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let name = emoji.trim().trim_matches(':');
            let body = json!({"channel": place.room, "timestamp": message_id, "name": name});
            match self.api.post("reactions.add", &body).await {
                Ok(_) => Ok(()),
                Err(error) if error.code() == Some("already_reacted") => Ok(()),
                Err(error) if is_gone(&error) => Err(SendError::Gone),
                Err(error) => Err(send_error(&error)),
            }
        })
    }

    fn thread_history<'a>(
        &'a self,
        place: &'a Place,
        before: &'a str,
        limits: HistoryLimits,
    ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>> {
        Box::pin(self.read_thread(place, before, limits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_scope_is_named() {
        assert_eq!(
            missing_scope(Some("groups:history")),
            "the Slack app lacks the scope groups:history"
        );
        assert!(missing_scope(None).contains("channels:history, groups:history"));
    }

    #[test]
    fn a_generated_image_goes_up_before_the_buttons_under_it() {
        use crate::reply::{Button, Role};
        let mut image = Outgoing::text(Role::Answer, "");
        image.attachment = Some(Attachment {
            name: "gi-1.png".into(),
            media_type: "image/png",
            content: vec![0x89, b'P', b'N', b'G'].into(),
        });
        image.buttons = vec![Button {
            action: crate::event::Action::RunAgain,
            token: "t".into(),
        }];
        let order: Vec<bool> = items(&[image])
            .iter()
            .map(|item| matches!(item, Item::File(_)))
            .collect();
        assert_eq!(order, [true, false]);
        // A long answer's excerpt still comes before its answer.md.
        let mut long = Outgoing::text(Role::Answer, "excerpt");
        long.attachment = Some(Attachment::text("answer.md", "text/markdown", "all".into()));
        let order: Vec<bool> = items(&[long])
            .iter()
            .map(|item| matches!(item, Item::File(_)))
            .collect();
        assert_eq!(order, [false, true]);
    }
}
