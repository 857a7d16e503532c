//! What automatic routing asks Clef about a chat request, and how its answers are read:
//! the two questions ([`intent_questions`]), the strict reading of the reply ([`decision`])
//! and the approved repositories a request names ([`named_repositories`]). Deciding what to
//! do with them, and calling Clef, is the caller's.

use serde_json::{Map, Value, json};

/// The questions Clef answers about a request: `intent`, a choice of `code_change`,
/// `answer` or `unclear`, and `explicit_change`, a yes/no score.
pub fn intent_questions() -> Map<String, Value> {
    let questions = json!({
        "intent": {
            "type": "choice",
            "instructions": "What does this chat request ask the assistant to do?",
            "criteria": {
                "code_change": "Make a change to files in a code repository: fix, edit, add or update code, tests or documentation.",
                "answer": "Answer, explain, review, search or discuss, without changing any repository.",
                "unclear": "It cannot be told whether a repository change is wanted."
            }
        },
        "explicit_change": {
            "type": "noul",
            "instructions": "Does the request explicitly ask for the change to be made now, rather than describe, explain, suggest or ask about one?",
            "criteria": {
                "true": "It directly asks to make the change (fix this, change that, add this).",
                "false": "It asks a question, wants an explanation or a suggestion, or is hypothetical."
            }
        }
    });
    match questions {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// What Clef decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// The chosen option is `code_change`.
    pub chose_change: bool,
    /// The chosen option is `answer`.
    pub chose_answer: bool,
    /// P(`code_change`).
    pub change: f64,
    /// `explicit_change.noul`.
    pub explicit: f64,
}

/// Reads Clef's answers strictly: a missing or out-of-range score is unusable, never zero.
pub fn decision(answers: &Map<String, Value>) -> Option<Decision> {
    let intent = answers.get("intent")?;
    let choice = intent.get("choice")?.as_str()?;
    let score = |value: Option<&Value>| {
        value
            .and_then(Value::as_f64)
            .filter(|p| (0.0..=1.0).contains(p))
    };
    let change = score(intent.pointer("/probabilities/code_change"))?;
    let explicit = score(answers.get("explicit_change")?.get("noul"))?;
    if !matches!(choice, "code_change" | "answer" | "unclear") {
        return None;
    }
    Some(Decision {
        chose_change: choice == "code_change",
        chose_answer: choice == "answer",
        change,
        explicit,
    })
}

/// The approved repositories `text` names as `owner/repo` (compared without case), each
/// once, in the toolset's order.
pub fn named_repositories<'r>(text: &str, repositories: &'r [String]) -> Vec<&'r str> {
    let words: Vec<String> = text
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '`' | '\'' | '"' | '<' | '>')
        })
        .map(|w| {
            let w = w
                .trim_end_matches(['.', ':', '!', '?'])
                .to_ascii_lowercase();
            w.trim_start_matches("https://github.com/").to_owned()
        })
        .collect();
    repositories
        .iter()
        .filter(|repository| {
            let wanted = repository.to_ascii_lowercase();
            words.contains(&wanted)
        })
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn answers(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn decisions_are_read_strictly() {
        let ok = answers(json!({
            "intent": {"type": "choice", "choice": "code_change",
                       "probabilities": {"code_change": 0.97, "answer": 0.02, "unclear": 0.01},
                       "confidence": 0.5},
            "explicit_change": {"type": "noul", "noul": 0.96}
        }));
        assert_eq!(
            decision(&ok),
            Some(Decision {
                chose_change: true,
                chose_answer: false,
                change: 0.97,
                explicit: 0.96
            })
        );
        for broken in [
            json!({"intent": {"choice": "code_change", "probabilities": {"code_change": 1.5}},
                   "explicit_change": {"noul": 0.99}}),
            json!({"intent": {"choice": "code_change", "probabilities": {"code_change": "0.99"}},
                   "explicit_change": {"noul": 0.99}}),
            json!({"intent": {"choice": "code_change", "probabilities": {"code_change": 0.99}}}),
            json!({"intent": {"choice": "merge_it", "probabilities": {"code_change": 0.99}},
                   "explicit_change": {"noul": 0.99}}),
            json!({}),
        ] {
            assert_eq!(decision(&answers(broken.clone())), None, "{broken}");
        }
    }

    #[test]
    fn only_approved_repositories_named_in_full_count() {
        let list = vec!["your-org/your-repo".to_owned(), "your-org/docs".to_owned()];
        assert_eq!(
            named_repositories("In your-org/your-repo, fix the typo", &list),
            ["your-org/your-repo"]
        );
        assert_eq!(
            named_repositories("fix https://github.com/Your-Org/Your-Repo.", &list),
            ["your-org/your-repo"]
        );
        assert!(named_repositories("fix your-repo please", &list).is_empty());
        assert!(named_repositories("fix your-org/your-repo-2", &list).is_empty());
        assert_eq!(
            named_repositories("your-org/docs and your-org/your-repo", &list).len(),
            2
        );
    }

    proptest! {
        /// Whatever Clef returns, a change decision needs both scores within 0..=1.
        #[test]
        fn any_reply_reads_without_panicking(choice in "[a-z_]{0,12}", p in -2.0f64..2.0, q in -2.0f64..2.0) {
            let reply = answers(json!({
                "intent": {"choice": choice, "probabilities": {"code_change": p}},
                "explicit_change": {"noul": q}
            }));
            if let Some(d) = decision(&reply) {
                prop_assert!((0.0..=1.0).contains(&d.change) && (0.0..=1.0).contains(&d.explicit));
            }
        }
    }
}
