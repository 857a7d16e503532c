#!/usr/bin/env bash
# Interoperability of yetibot-mcp-host with the official reference server
# @modelcontextprotocol/server-everything, over stdio and Streamable HTTP.
#
# Installs the server into a temporary folder (npm registry only), runs discovery and calls
# through the mcp-cli example, and checks the outcomes. The HTTP server is forced onto
# 127.0.0.1 by scripts/mcp/loopback.cjs. Needs node >= 18, npm, cargo.
#
#   scripts/mcp/interop.sh            # pinned version below
#   EVERYTHING_VERSION=latest scripts/mcp/interop.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${EVERYTHING_VERSION:-2026.8.31}
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if ! npm install --silent --prefix "$WORK" --no-audit --no-fund \
  "@modelcontextprotocol/server-everything@$VERSION" >/dev/null; then
  # The npm registry is the one outside dependency. CI sets MCP_INTEROP_OPTIONAL_INSTALL=1 so
  # that an unreachable registry is reported rather than failing the build; a failing
  # interop check always fails.
  if [ "${MCP_INTEROP_OPTIONAL_INSTALL:-0}" = 1 ]; then
    echo "SKIPPED: could not install @modelcontextprotocol/server-everything@$VERSION from npm"
    exit 0
  fi
  echo "FAIL: npm install of @modelcontextprotocol/server-everything@$VERSION" >&2
  exit 1
fi
EVERYTHING="$WORK/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

(cd "$ROOT" && cargo build --quiet -p yetibot-mcp-host --example mcp-cli)
CLI="$ROOT/target/debug/examples/mcp-cli"

fail() { echo "FAIL: $*" >&2; exit 1; }

check_transport() {
  local label=$1; shift
  local out
  out=$("$CLI" "$@" list) || fail "$label: list"
  grep -q '^`cli/echo` — ' <<<"$out" || fail "$label: echo not listed"
  grep -q '"supported": false' <<<"$out" || fail "$label: skills record missing"

  out=$("$CLI" "$@" call echo '{"message":"interop"}') || fail "$label: call echo"
  grep -q '"outcome": "success"' <<<"$out" || fail "$label: echo outcome: $out"
  grep -q 'interop' <<<"$out" || fail "$label: echo text: $out"

  out=$("$CLI" "$@" call get-sum '{"a":2,"b":40}') || fail "$label: call get-sum"
  grep -q '42' <<<"$out" || fail "$label: get-sum text: $out"

  out=$("$CLI" "$@" call get-tiny-image '{}') || fail "$label: call get-tiny-image"
  grep -q '"mediaOmitted": 1' <<<"$out" || fail "$label: image not omitted: $out"

  out=$("$CLI" "$@" --tools echo,get-sum list) || fail "$label: allowlisted list"
  [ "$(grep -c '^`cli/' <<<"$out")" = 2 ] || fail "$label: allowlist not applied"

  if "$CLI" "$@" --tools echo,no-such-tool list >/dev/null 2>&1; then
    fail "$label: a missing allowlisted tool must fail"
  fi
  echo "ok: $label"
}

# --stdio splits on whitespace, so the temporary path must not contain spaces (mktemp's do not).
check_transport stdio --stdio "node $EVERYTHING stdio"

PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
PORT=$PORT node --require "$ROOT/scripts/mcp/loopback.cjs" "$EVERYTHING" streamableHttp \
  >/dev/null 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  if node -e "require('net').connect($PORT,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then
    break
  fi
done
check_transport "streamable http" --http "http://127.0.0.1:$PORT/mcp"
echo "interop with @modelcontextprotocol/server-everything@$VERSION passed"
