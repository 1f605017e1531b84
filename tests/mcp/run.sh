#!/usr/bin/env bash
# tests/mcp/run.sh <verdictd> - install the MCP TypeScript SDK (npm ci, from the committed
# package-lock.json) when it is missing, then run the SDK-driven MCP test (mcp.mjs). Exits 77
# (skipped) without VERDICT_TEST_DATABASE_URL, like the other integration tests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ -n "${VERDICT_TEST_DATABASE_URL:-}" ] || { echo "VERDICT_TEST_DATABASE_URL is not set: skipping"; exit 77; }
if [ ! -f "$here/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
exec node "$here/mcp.mjs" --verdictd "$1"
