//! The tool loop's model turn over `yetibot-ai-providers`: one provider request per turn,
//! on either wire API, with the budget guidance as a closing host message.

use yetibot_ai_providers::{Client, Ending, Provider, TurnEvent, TurnRequest};
use yetibot_command::LiveText;
use yetibot_conversation::{Conversation, Message, ModelResponse, ToolDefinition};
use yetibot_redaction::StreamRedactor;
use yetibot_tool_policy::{BudgetGuidance, ModelTurn};

use crate::cost::CostTally;
use crate::meta::UsageSum;

/// Sends each turn of one request to its provider and model, summing usage.
pub(crate) struct ProviderTurn<'a> {
    pub(crate) client: &'a Client,
    pub(crate) provider: &'a Provider,
    pub(crate) model: &'a str,
    pub(crate) max_output_tokens: Option<u32>,
    /// Whether the request allows tools at all (no `--no-tools`, not a text-only command).
    /// The provider's server-side tools (`:native-tools`) go with every turn that offers
    /// function tools, and with every turn of a request that has none to offer; the final
    /// turn after the budget is spent or an outcome is unknown has all of them removed.
    pub(crate) tools_on: bool,
    /// Whether the request's catalog of function tools is empty.
    pub(crate) catalog_empty: bool,
    pub(crate) usage: UsageSum,
    pub(crate) cost: CostTally,
    /// How the latest turn's answer ended.
    pub(crate) ending: Ending,
    /// Where a turn's text that comes with tool calls goes at once (live Grok replies),
    /// redacted with these secrets; `None` when the adapter shows only the final answer.
    pub(crate) live: Option<(
        &'a dyn yetibot_command::Platform,
        &'a yetibot_redaction::Secrets,
    )>,
    /// Where the answer's text goes while the model writes it (the web console), through a
    /// streaming redactor with these secrets, so a credential split across pieces never
    /// shows; `None` when the platform shows only finished answers or the text is not the
    /// caller's answer (a stage whose output is piped on).
    pub(crate) live_text: Option<(
        &'a dyn yetibot_command::Platform,
        &'a yetibot_redaction::Secrets,
    )>,
}

/// The guidance a tool-offering turn ends with. It advises; preflight enforces.
pub(crate) fn guidance_text(guidance: BudgetGuidance) -> String {
    format!(
        "Tool budget for this request: {} calls in total, {} used, {} remaining. Keep your \
         whole next batch of calls within the remaining {}; when none remain, answer with \
         the evidence you have.",
        guidance.total, guidance.used, guidance.remaining, guidance.remaining
    )
}

impl ModelTurn for ProviderTurn<'_> {
    type Error = yetibot_ai_providers::Error;

    async fn turn(
        &mut self,
        conversation: &Conversation,
        tools: &[ToolDefinition],
        guidance: Option<BudgetGuidance>,
    ) -> Result<ModelResponse, Self::Error> {
        let mut messages = conversation.messages.clone();
        if let Some(guidance) = guidance {
            messages.push(Message::System(guidance_text(guidance)));
        }
        let request = TurnRequest {
            model: Some(self.model.to_owned()),
            messages,
            tools: tools.to_vec(),
            tools_enabled: self.tools_on && (!tools.is_empty() || self.catalog_empty),
            max_output_tokens: self.max_output_tokens,
            stream: self.provider.streams(),
        };
        let live_text = self.live_text;
        let mut redactor = live_text.map(|(_, secrets)| StreamRedactor::new(secrets));
        let mut on_event = |event: TurnEvent| {
            if let (TurnEvent::TextDelta(piece), Some((platform, _)), Some(redactor)) =
                (&event, live_text, redactor.as_mut())
            {
                let safe = redactor.push(piece);
                if !safe.is_empty() {
                    platform.live_text(LiveText::Append(&safe));
                }
            }
        };
        let turn = self
            .client
            .turn(self.provider, &request, &mut on_event)
            .await;
        if let Some((platform, _)) = live_text
            && turn.as_ref().is_ok_and(|turn| !turn.calls.is_empty())
        {
            // That text came with tool calls: the answer is in a later turn.
            platform.live_text(LiveText::Restart);
        }
        let turn = turn?;
        self.usage.add(turn.usage.as_ref());
        self.ending = turn.ending();
        self.cost.add_turn(self.model, turn.usage.as_ref());
        // A completed message that comes with tool calls is not the answer: more turns
        // follow, and a live adapter shows it now rather than never.
        if let Some((platform, secrets)) = &self.live
            && !turn.calls.is_empty()
            && !turn.text.trim().is_empty()
        {
            platform.interim(secrets.redact_text(turn.text.trim()).into_owned());
        }
        Ok(turn.into())
    }
}

/// A tool loop's progress snapshot as the platform shows it: each call's tool and outcome,
/// and the budget; nothing else of the loop leaves it.
pub(crate) fn progress_report(
    progress: &yetibot_tool_policy::Progress,
) -> yetibot_command::Progress {
    use yetibot_command::StepOutcome;
    use yetibot_tool_policy::Outcome;
    yetibot_command::Progress {
        steps: progress
            .calls
            .iter()
            .map(|call| yetibot_command::Step {
                name: call.tool.clone(),
                outcome: match call.outcome {
                    Outcome::Success => StepOutcome::Succeeded,
                    Outcome::ToolError => StepOutcome::Failed,
                    Outcome::Unconfirmed => StepOutcome::Unknown,
                    Outcome::Refused => StepOutcome::Refused,
                    Outcome::Skipped => StepOutcome::Skipped,
                },
            })
            .collect(),
        budget: Some((progress.used, progress.total)),
    }
}
