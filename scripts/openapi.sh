#!/usr/bin/env bash
# scripts/openapi.sh gen|check - openapi/verdict.yaml is the source; openapi/verdict.json is
# generated from it (the server embeds both). `gen` rewrites the JSON; `check` fails when the
# JSON is stale and lints the YAML with Redocly CLI. Tools come from npm (tests/openapi).
set -euo pipefail
cd "$(dirname "$0")/.."
tools=tests/openapi
if [ ! -x "$tools/node_modules/.bin/redocly" ] || [ ! -d "$tools/node_modules/js-yaml" ]; then
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
case "${1:-check}" in
  gen)
    node "$tools/tojson.mjs" openapi/verdict.yaml > openapi/verdict.json
    ;;
  check)
    tmp=$(mktemp)
    node "$tools/tojson.mjs" openapi/verdict.yaml > "$tmp"
    if ! cmp -s "$tmp" openapi/verdict.json; then
      echo "openapi/verdict.json is stale: run scripts/openapi.sh gen" >&2
      rm -f "$tmp"; exit 1
    fi
    rm -f "$tmp"
    NO_UPDATE_NOTIFIER=1 REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
      "$tools/node_modules/.bin/redocly" lint --config "$tools/redocly.yaml" openapi/verdict.yaml
    ;;
  *) echo "usage: $0 gen|check" >&2; exit 2 ;;
esac
