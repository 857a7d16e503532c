#!/usr/bin/env bash
# Side-by-side benchmark: yetibot-mcp-host (benches/mcp.rs) against the official TypeScript SDK
# client (npm @modelcontextprotocol/sdk) and Python SDK client (PyPI mcp), all talking to the
# same fixture server (tests/mcp-fixture, release build) over stdio and Streamable HTTP (SSE
# bodies) on 127.0.0.1. Measures the median cost of opening a session plus tools/list over
# 20 sessions, and the mean round trip of 200 sequential echo calls in one session.
#
#   scripts/mcp/bench.sh
# Needs node >= 18, npm, python3 >= 3.10 with venv, cargo. Installs the SDKs into a
# temporary folder.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/scripts/mcp"
TS_SDK=${TS_SDK_VERSION:-1.32.2}
PY_SDK=${PY_SDK_VERSION:-2.3.0}
CALLS=200
SESSIONS=20
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

npm install --silent --prefix "$WORK" --no-audit --no-fund "@modelcontextprotocol/sdk@$TS_SDK" >/dev/null
cp "$HERE/bench_client.mjs" "$WORK/"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet "mcp==$PY_SDK"

(cd "$ROOT" && cargo build --quiet --release -p mcp-fixture)
FIXTURE="$ROOT/target/release/mcp-fixture"
RESULTS="$WORK/results.jsonl"

# yetibot-mcp-host starts its own fixture instances.
(cd "$ROOT" && cargo bench --quiet -p benches --bench mcp) | grep '^{' >>"$RESULTS"

"$FIXTURE" --http 127.0.0.1:0 >"$WORK/http.out" 2>/dev/null &
SERVER_PID=$!
until [ -s "$WORK/http.out" ]; do
  kill -0 "$SERVER_PID" || { echo "the HTTP fixture did not start" >&2; exit 1; }
  read -r -t 0.05 <> <(:) || true
done
URL=$(sed 's/^listening //' "$WORK/http.out")

for mode in stdio http; do
  target=$FIXTURE
  [ "$mode" = http ] && target=$URL
  (cd "$WORK" && node bench_client.mjs "$mode" "$target" "$CALLS" "$SESSIONS") >>"$RESULTS"
  "$WORK/venv/bin/python" "$HERE/bench_client.py" "$mode" "$target" "$CALLS" "$SESSIONS" \
    2>/dev/null >>"$RESULTS"
done

python3 - "$RESULTS" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
print("| client | transport | open + tools/list (median ms) | per echo call (mean ms) |")
print("|---|---|---:|---:|")
for transport in ("stdio", "http"):
    for row in rows:
        if row["transport"] == transport:
            print(f"| {row['client']} | {transport} | {row['open_list_ms']:.2f} | {row['per_call_ms']:.3f} |")
PY
