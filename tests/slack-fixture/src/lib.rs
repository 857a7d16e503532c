//! A fake Slack.
