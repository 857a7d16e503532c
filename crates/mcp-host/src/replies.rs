//! Exact reply matching: a server's reply is taken only if its `id` equals, type included,
//! the ID of a request this client sent and is still waiting for.
//!
//! `rmcp` matches a reply to a request when the reply's ID is the request's number written
//! as a string (`"1"` answers `1`; `RequestId::matches_response_id` and
//! `remove_pending_request` in `rmcp` 3.11). JSON-RPC requires the same value and type, so
//! this wrapper sits between `rmcp` and every transport and drops any reply that does not
//! match exactly before `rmcp` sees it. A dropped reply leaves its request waiting, so the
//! call ends as an unknown outcome at its deadline rather than with a forged answer.

use std::collections::HashSet;

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;

/// A client transport that forwards only exactly matching replies.
#[derive(Debug)]
pub(crate) struct ExactReplies<T> {
    inner: T,
    /// Requests sent and not yet answered or cancelled.
    outstanding: HashSet<RequestId>,
}

impl<T> ExactReplies<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            outstanding: HashSet::new(),
        }
    }

    /// Records what an outgoing message means for the replies to expect.
    fn note_sent(&mut self, message: &ClientJsonRpcMessage) {
        match message {
            JsonRpcMessage::Request(request) => {
                self.outstanding.insert(request.id.clone());
            }
            // A cancelled request's late reply is of no use to anyone.
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.outstanding.remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
    }

    /// Whether an incoming message may pass: anything but a reply, or a reply that answers
    /// an outstanding request exactly (which is then no longer outstanding). An error
    /// without an ID (a parse error) passes; `rmcp` never routes it to a request.
    fn accept(&mut self, message: &ServerJsonRpcMessage) -> bool {
        let id = match message {
            JsonRpcMessage::Response(response) => &response.id,
            JsonRpcMessage::Error(error) => match &error.id {
                Some(id) => id,
                None => return true,
            },
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => return true,
        };
        // `RequestId` equality compares the variant too: `Number(1) != String("1")`.
        self.outstanding.remove(id)
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ExactReplies<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.note_sent(&item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            // Nothing is awaited between receiving a message and deciding on it, so this is
            // as cancellation-safe as the inner transport's `receive`.
            let message = self.inner.receive().await?;
            if self.accept(&message) {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn request(id: RequestId) -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "ping"
        }))
        .expect("a ping request")
    }

    fn reply(id: serde_json::Value) -> ServerJsonRpcMessage {
        serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}}))
            .expect("a reply")
    }

    #[test]
    fn only_exact_replies_to_outstanding_requests_pass() {
        let mut exact = ExactReplies::new(());
        exact.note_sent(&request(NumberOrString::Number(1)));
        assert!(
            !exact.accept(&reply(serde_json::json!("1"))),
            "string for number"
        );
        assert!(!exact.accept(&reply(serde_json::json!(2))), "never sent");
        assert!(exact.accept(&reply(serde_json::json!(1))));
        assert!(
            !exact.accept(&reply(serde_json::json!(1))),
            "answered already"
        );

        exact.note_sent(&request(NumberOrString::String("7".into())));
        assert!(
            !exact.accept(&reply(serde_json::json!(7))),
            "number for string"
        );
        assert!(exact.accept(&reply(serde_json::json!("7"))));
    }

    #[test]
    fn a_cancelled_request_takes_no_reply() {
        let mut exact = ExactReplies::new(());
        exact.note_sent(&request(NumberOrString::Number(3)));
        let cancel: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 3, "reason": "timed out"}
        }))
        .expect("a cancellation");
        exact.note_sent(&cancel);
        assert!(!exact.accept(&reply(serde_json::json!(3))));
    }
}
