#!/usr/bin/env bash
# The demo: builds Switchboard, starts mcp-service and runs-service on
# embedded SQLite, the bundled example MCP server and a model, registers the
# example server as an integration, creates an agent and a thread, and runs a
# conversation through the `switchboard` CLI, streamed in the terminal. Then
# everything keeps running and the commands to continue by hand are printed;
# Ctrl-C stops everything this script started.
#
# DEMO_NONINTERACTIVE=1 (`make demo-check`) runs the conversation on the
# scripted model with free ports and a temporary directory, checks the
# transcript and stops everything.
#
# The model: OPENAI_BASE_URL (with OPENAI_API_KEY and OPENAI_MODEL, default
# gpt-4.1-mini) selects an OpenAI-compatible endpoint; without it the scripted
# model answers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO=${CARGO:-cargo}
NONINTERACTIVE=${DEMO_NONINTERACTIVE:-0}
BIN=$PWD/target/debug
JWT_SECRET=${DEV_JWT_SECRET:-switchboard-dev-secret-change-me}
QUESTION=${DEMO_QUESTION:-"Which region earned the most? Use the sales data of the example MCP server."}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ "$NONINTERACTIVE" = 1 ]; then
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/switchboard-demo.XXXXXX")
  MCP_PORT=$(free_port) RUNS_PORT=$(free_port) EXAMPLE_PORT=$(free_port) MODEL_PORT=$(free_port)
  unset OPENAI_BASE_URL
else
  DIR=$PWD/.data/demo
  rm -rf "$DIR"
  MCP_PORT=${MCP_PORT:-50051} RUNS_PORT=${RUNS_PORT:-50052}
  EXAMPLE_PORT=${EXAMPLE_PORT:-8931} MODEL_PORT=${MODEL_PORT:-8090}
  for port in "$MCP_PORT" "$RUNS_PORT" "$EXAMPLE_PORT" "$MODEL_PORT"; do
    if port_in_use "$port"; then
      echo "port $port is in use (is \`make run\` or another demo running?); stop it, or set MCP_PORT, RUNS_PORT, EXAMPLE_PORT and MODEL_PORT" >&2
      exit 1
    fi
  done
fi
mkdir -p "$DIR/logs"

PIDS=()
stop_all() {
  trap - EXIT INT TERM
  if [ ${#PIDS[@]} -gt 0 ]; then
    kill -TERM "${PIDS[@]}" 2>/dev/null || true
    wait "${PIDS[@]}" 2>/dev/null || true
  fi
  if [ "$NONINTERACTIVE" = 1 ]; then rm -rf "$DIR"; fi
}
trap stop_all EXIT
trap 'echo; echo "stopping everything the demo started"; exit 130' INT TERM

start() { # name, then the command; logs go to $DIR/logs/name.log
  local name=$1; shift
  "$@" >"$DIR/logs/$name.log" 2>&1 &
  PIDS+=($!)
}

wait_for_port() { # name, port
  for _ in $(seq 1 300); do
    if port_in_use "$2"; then return 0; fi
    sleep 0.1
  done
  echo "$1 did not start listening on port $2; its log:" >&2
  tail -n 30 "$DIR/logs/$1.log" >&2
  exit 1
}

say "Building"
if [ "$NONINTERACTIVE" = 1 ]; then
  # The binaries `make test` builds (each package's integration tests build
  # its binaries): after it, nothing is compiled again.
  $CARGO test --workspace --locked --no-run --quiet
else
  $CARGO build --locked --quiet \
    -p switchboard-mcp-service --bin mcp-service \
    -p switchboard-runs-service --bin runs-service \
    -p switchboard-example-mcp-server --bin example-mcp-server \
    -p switchboard-scripted-model --bin scripted-model \
    -p switchboard-auth --bin switchboard-token \
    -p switchboard-cli --bin switchboard
fi

if [ -n "${OPENAI_BASE_URL:-}" ]; then
  PROVIDER=openai
  MODEL=${OPENAI_MODEL:-gpt-4.1-mini}
  PROVIDERS="openai=openai,$OPENAI_BASE_URL,api_key_env=OPENAI_API_KEY"
  MODEL_NOTE="Model: $MODEL at $OPENAI_BASE_URL (OPENAI_BASE_URL is set)."
else
  PROVIDER=scripted
  MODEL=demo-plan
  PROVIDERS="scripted=openai,http://127.0.0.1:$MODEL_PORT/v1"
  MODEL_NOTE="No model configured: the SCRIPTED model answers (it replays a fixed plan of tool calls, it does not think).
Set OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL to run the same demo on a real OpenAI-compatible model."
  start scripted-model "$BIN/scripted-model" --listen "127.0.0.1:$MODEL_PORT" \
    --step 'mcp_list_resources={}' \
    --step 'retrieve_mcp_resource={"resourceName":"sales"}' \
    --step 'source_query={"query":"SELECT region, SUM(units * price) AS revenue FROM sales GROUP BY region ORDER BY revenue DESC"}' \
    --step 'example__add={"a":185.25,"b":99.75}' \
    --answer $'Revenue by region, from the example server\'s sales.csv:\n\n{result:3}\n\nThe south region earned the most; both regions together took {result:4}.'
fi

say "Starting the example MCP server, mcp-service and runs-service (SQLite under $DIR)"
DEV=(env SWITCHBOARD_JWT_SECRET="$JWT_SECRET" SWITCHBOARD_LOG_FORMAT=pretty SWITCHBOARD_DEV_MODE=true
  SWITCHBOARD_OUTBOUND_ALLOW=127.0.0.1/32,::1/128)
start example-mcp-server "$BIN/example-mcp-server" --transport http --listen "127.0.0.1:$EXAMPLE_PORT"
start mcp-service "${DEV[@]}" SWITCHBOARD_DATA_DIR="$DIR/mcp" "$BIN/mcp-service" --listen "127.0.0.1:$MCP_PORT"
start runs-service "${DEV[@]}" SWITCHBOARD_DATA_DIR="$DIR/runs" \
  SWITCHBOARD_MCP_SERVICE_URL="http://127.0.0.1:$MCP_PORT" SWITCHBOARD_MODEL_PROVIDERS="$PROVIDERS" \
  "$BIN/runs-service" --listen "127.0.0.1:$RUNS_PORT"
wait_for_port example-mcp-server "$EXAMPLE_PORT"
wait_for_port mcp-service "$MCP_PORT"
wait_for_port runs-service "$RUNS_PORT"
if [ "$PROVIDER" = scripted ]; then wait_for_port scripted-model "$MODEL_PORT"; fi
echo "$MODEL_NOTE"

# The CLI reads its addresses and token from this file. It holds an admin
# token, so it is created readable by its owner only (umask, not a chmod
# after the fact: the file is never readable by others, not even briefly).
TOKEN=$(SWITCHBOARD_JWT_SECRET="$JWT_SECRET" "$BIN/switchboard-token" --org demo-org --user demo-user --role admin)
(
  umask 077
  rm -f "$DIR/cli.toml"
  cat >"$DIR/cli.toml" <<EOF
mcp_addr = "http://127.0.0.1:$MCP_PORT"
runs_addr = "http://127.0.0.1:$RUNS_PORT"
token = "$TOKEN"
EOF
)
export SWITCHBOARD_CONFIG=$DIR/cli.toml
sb() { echo "\$ switchboard $*" >&2; "$BIN/switchboard" "$@"; }
json_id() { python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'; }

say "Registering the example MCP server as an integration"
sb integrations create --slug example --name "Example MCP server" --url "http://127.0.0.1:$EXAMPLE_PORT/mcp" >/dev/null
sb integrations validate example
sb integrations discover example

say "Creating an agent and a thread"
AGENT=$(sb agents create --json --name demo --provider "$PROVIDER" --model "$MODEL" --integration example \
  --instructions "You answer questions about sales. Find the data among the MCP resources, import it, and compute with source_query." | json_id)
THREAD=$(sb threads create --json demo --title "demo" | json_id)
echo "agent $AGENT, thread $THREAD"

say "The conversation"
TRANSCRIPT=$DIR/transcript.txt
sb chat --thread "$THREAD" -m "$QUESTION" | tee "$TRANSCRIPT"

if [ "$NONINTERACTIVE" = 1 ]; then
  say "Checking the token file and the transcript"
  mode=$(stat -c %a "$DIR/cli.toml")
  if [ "$mode" != 600 ]; then
    echo "demo-check: $DIR/cli.toml holds a token and is mode $mode, not 600" >&2
    exit 1
  fi
  for expected in '✓ mcp_list_resources' '✓ retrieve_mcp_resource' 'CSV resource imported' \
    '✓ source_query' '✓ example__add → 285' '185.25' 'together took 285'; do
    if ! grep -qF -- "$expected" "$TRANSCRIPT"; then
      echo "demo-check: the transcript lacks: $expected" >&2
      exit 1
    fi
  done
  sb sources list --thread "$THREAD" | grep -q sales
  echo "demo-check: the conversation discovered, called a tool, imported the CSV and answered with source_query"
  exit 0
fi

say "Everything keeps running; continue in another terminal"
cat <<EOF
  export SWITCHBOARD_CONFIG=$SWITCHBOARD_CONFIG
  alias switchboard=$BIN/switchboard

  switchboard chat --thread $THREAD                 # continue this conversation
  switchboard chat demo                             # a new conversation with the agent
  switchboard threads messages $THREAD              # the thread as the model saw it
  switchboard sources list --thread $THREAD         # the imported CSV
  switchboard runs list --thread $THREAD
  switchboard integrations discover example         # tools, resources, templates, prompts
  switchboard --help

Logs: $DIR/logs/. Press Ctrl-C here to stop everything.
EOF
wait
