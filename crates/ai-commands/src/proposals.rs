//! The AI commands' side of the guarded pull-request workflow (`yetibot-pull-requests`):
//! automatic routing's settings, the one staging a request may make, and the requester of
//! a call.

use std::sync::{Mutex, PoisonError};

use yetibot_command::Caller;
use yetibot_conversation::AdapterKind;
use yetibot_pull_requests::Requester;

/// Whether the call comes from a new message exactly as its author sent it (not an edit, a
/// reaction or a rerun): what GitHub toolsets, routing and consent require.
pub(crate) fn is_original(caller: &Caller) -> bool {
    caller
        .platform
        .as_deref()
        .is_some_and(|platform| platform.is_original_message())
}

/// The requester of a call: only a trusted platform identity of Slack or Discord, bound to
/// the room's platform ID (a Slack channel's name can change or be learnt later) and the
/// thread.
pub(crate) fn requester_of(caller: &Caller) -> Option<Requester> {
    let platform = caller.platform.as_deref();
    (caller.trusted
        && matches!(caller.adapter, AdapterKind::Slack | AdapterKind::Discord)
        && !caller.user_id.trim().is_empty())
    .then(|| Requester {
        adapter: caller.adapter,
        connection: caller.connection.clone(),
        room: platform
            .and_then(|p| p.room_id())
            .unwrap_or(&caller.room)
            .to_owned(),
        thread: platform.and_then(|p| p.thread()).map(|t| t.key()),
        user_id: caller.user_id.clone(),
    })
}

/// Automatic routing's settings: the `github-pr` toolset whose policy governs it, and the
/// probability both change scores must reach.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Routing {
    pub(crate) toolset: String,
    pub(crate) min_probability: f64,
}

/// An automatic request's staging: the one repository it may change, and the branch its
/// execution creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AutomaticStaging {
    pub(crate) repository: String,
    pub(crate) branch: String,
}

/// What one request stages through: the one proposal it may stage, and whether staging is
/// automatic.
#[derive(Debug, Default)]
pub(crate) struct StagingSlot {
    staged: Mutex<Option<String>>,
    pub(crate) automatic: Option<AutomaticStaging>,
}

impl StagingSlot {
    /// A slot for an automatic request.
    pub(crate) fn automatic(automatic: AutomaticStaging) -> Self {
        Self {
            staged: Mutex::new(None),
            automatic: Some(automatic),
        }
    }

    /// The proposal staged through this slot, if any.
    pub(crate) fn staged(&self) -> Option<String> {
        self.staged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records the one staged proposal.
    pub(crate) fn set(&self, id: String) {
        *self.staged.lock().unwrap_or_else(PoisonError::into_inner) = Some(id);
    }
}
