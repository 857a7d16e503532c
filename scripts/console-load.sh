#!/usr/bin/env bash
# Load on the web console: builds the release `yetibot` and runs `console_load` (a binary of
# the `benches` package, see benches/console_load.rs) against it. 200 prompts by default (8
# rooms, one event stream each, 25 prompts per room) are posted at once to a bot whose
# provider is the in-process fixture answering after 20 ms, and the same 200 requests are
# sent straight to the fixture in the same run as the peer. It prints a markdown report:
# start-to-ready beside `yetibot check-config`, idle RSS before and after the load, p50/p90/
# p99 latency of both and the bot's overhead, and every failed, lost or duplicated answer.
#
#   scripts/console-load.sh                          # the defaults
#   scripts/console-load.sh --per-room 50 --delay-ms 100
#   scripts/console-load.sh --post-connections 32    # cap the POSTs open at once
#
# Options are passed to the program (--rooms, --per-room, --delay-ms, --starts,
# --post-connections). Exits non-zero when any request failed or an answer was lost or
# duplicated. Talks to 127.0.0.1 only; needs cargo. Respects CARGO_TARGET_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

cargo build --release --quiet -p yetibot-bin
cargo build --release --quiet -p benches --bin console_load
exec "$TARGET/release/console_load" "$TARGET/release/yetibot" "$@"
