#!/usr/bin/env bash
# tests/mcp-hosts/run.sh VERDICTD - the per-claim MCP pattern, with the two host configs in this
# directory run for real: a worker claims two items over HTTP and starts one agent process per
# claim (agent.mjs), the first configured by .mcp.json (Claude Code: Streamable HTTP, headers
# from ${VAR}s), the second by claude_desktop_config.json (a desktop host: stdio through the
# mcp-remote bridge, started with npx). Each agent reads its own claim's item and decides it
# with a tool; verdict is then asked over HTTP that each job got that decision, and that a
# claim's headers cannot decide the other job. Owns its PostgreSQL (vd_pg_start) and verdictd.
# Needs node and npm (npm ci installs the SDK and mcp-remote from package-lock.json).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../../scripts/lib.sh"
VERDICTD=$(realpath "$1")
command -v node >/dev/null && command -v npm >/dev/null || { echo "skip: node and npm are needed"; exit 77; }
if [ ! -x "$HERE/node_modules/.bin/mcp-remote" ] || [ ! -d "$HERE/node_modules/@modelcontextprotocol/sdk" ]; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
TMP=$(mktemp -d /tmp/verdict-mcp-hosts.XXXXXX)
chmod 755 "$TMP"
VD_PID=
cleanup() {
  [ -n "$VD_PID" ] && kill "$VD_PID" 2>/dev/null && wait "$VD_PID" 2>/dev/null || true
  vd_pg_stop "$TMP/pg" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "mcp-hosts: $*" >&2; tail -20 "$TMP/verdictd.log" >&2; exit 1; }

vd_pg_start "$TMP/pg" >/dev/null
PORT=$(vd_free_port)
WK="wk-$RANDOM$RANDOM$RANDOM"
VERDICT_DATABASE_URL="$VD_PG_URL" VERDICT_LISTEN="127.0.0.1:$PORT" VERDICT_THREADS=2 VERDICT_LOG_LEVEL=warn \
  VERDICT_API_KEYS="agent-worker:worker:$WK" "$VERDICTD" serve >"$TMP/verdictd.log" 2>&1 &
VD_PID=$!
URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -fsS "$URL/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
api() { curl -fsS -H "Authorization: Bearer $WK" -H 'Content-Type: application/json' "$URL$1" ${2:+-d "$2"}; }

# the worker: register two items and claim both
api /v1/items '{"items":[{"flow_step_id":"mcp-hosts","source_type":"rss","item_identifier":"a"},{"flow_step_id":"mcp-hosts","source_type":"rss","item_identifier":"b"}]}' >/dev/null ||
  fail "registration"
claims=$(api /v1/claims '{"flow_step_id":"mcp-hosts","worker_id":"mcp-hosts@test","limit":2}') || fail "claim"
[ "$(jq '.claims | length' <<<"$claims")" = 2 ] || fail "two claims expected: $claims"
job() { jq -r ".claims[$1].job_id" <<<"$claims"; }
tok() { jq -r ".claims[$1].claim_token" <<<"$claims"; }
ident() { jq -r ".claims[$1].item.item_identifier" <<<"$claims"; }

# one agent process per claim, each with its own claim's values in its environment
export VERDICT_URL="$URL" VERDICT_WORKER_KEY="$WK"
out1=$(VERDICT_JOB_ID=$(job 0) VERDICT_CLAIM_TOKEN=$(tok 0) node "$HERE/agent.mjs" http complete_item) || fail "the .mcp.json agent failed"
echo "claude code (.mcp.json): $out1"
out2=$(VERDICT_JOB_ID=$(job 1) VERDICT_CLAIM_TOKEN=$(tok 1) npm_config_cache="$TMP/npm" node "$HERE/agent.mjs" desktop defer_item '{"reason_code":"tool_error","reason":"fetch failed"}') ||
  fail "the desktop (mcp-remote) agent failed"
echo "desktop host (mcp-remote): $out2"
jq -e --arg i "$(ident 0)" '.item_identifier == $i and (.tools | index("complete_item")) and (.tools | index("report_tool_failure"))' <<<"$out1" >/dev/null ||
  fail "the .mcp.json agent did not see its own item or the tools"
jq -e --arg i "$(ident 1)" '.item_identifier == $i' <<<"$out2" >/dev/null || fail "the desktop agent did not see its own item"

# verdict agrees; and a claim's headers cannot decide the other job (the first job's token on the second job)
[ "$(api "/v1/jobs/$(job 0)" | jq -r '.job.disposition')" = complete ] || fail "job $(job 0) is not complete"
[ "$(api "/v1/jobs/$(job 1)" | jq -r '.job.disposition + " " + .job.reason_code')" = "defer_item tool_error" ] || fail "job $(job 1) is not deferred as tool_error"
if VERDICT_JOB_ID=$(job 1) VERDICT_CLAIM_TOKEN=$(tok 0) node "$HERE/agent.mjs" http complete_item >/dev/null 2>&1; then
  fail "a claim token decided another job"
fi
echo "mcp-hosts: passed (each agent decided its own claim; a token cannot decide another job)"
