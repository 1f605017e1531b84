#!/usr/bin/env bash
# scripts/run.sh - build and serve verdictd on 127.0.0.1:8080 (or $VERDICT_LISTEN). Installs
# missing Debian packages; when VERDICT_DATABASE_URL is unset, starts an embedded PostgreSQL
# kept under .verdict/ in the checkout (initdb on first use) and stops it on exit.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$VD_ROOT"
vd_apt_install "${VD_BUILD_PACKAGES[@]}"
vd_log "building in build/"
vd_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVERDICT_TESTS=OFF
if [ -z "${VERDICT_DATABASE_URL:-}" ]; then
  vd_log "starting the embedded PostgreSQL in .verdict/pg"
  vd_pg_stop "$VD_ROOT/.verdict/pg"
  # durable (fsync, synchronous_commit, full_page_writes: PostgreSQL's defaults) with the
  # production settings of docs/operations.md ("PostgreSQL for production")
  vd_pg_start "$VD_ROOT/.verdict/pg" -c wal_compression=lz4
  vd_pg_as "$VD_PG_BIN/psql" -h 127.0.0.1 -p "$VD_PG_PORT" -U postgres -d postgres -qtAc \
    "SELECT 1 FROM pg_database WHERE datname = 'verdict'" | grep -q 1 ||
    vd_pg_as "$VD_PG_BIN/createdb" -h 127.0.0.1 -p "$VD_PG_PORT" -U postgres verdict
  export VERDICT_DATABASE_URL="host=127.0.0.1 port=$VD_PG_PORT user=postgres dbname=verdict"
  trap 'vd_pg_stop "$VD_ROOT/.verdict/pg"' EXIT
fi
export VERDICT_LISTEN=${VERDICT_LISTEN:-127.0.0.1:8080}
vd_log "serving on http://$VERDICT_LISTEN - try:"
vd_log "  curl -s http://$VERDICT_LISTEN/readyz"
vd_log "  curl -s -X POST http://$VERDICT_LISTEN/v1/items -H 'Content-Type: application/json' -d '{\"items\":[{\"flow_step_id\":\"12_7\",\"source_type\":\"rss\",\"item_identifier\":\"https://ex.org/a\"}]}'"
# verdictd runs as a child the script waits for: a SIGTERM or SIGINT sent to the script alone
# (a supervisor's stop, `kill <pid of run.sh>`) is passed on to verdictd, which finishes what
# it is doing and exits; then the EXIT trap stops the embedded PostgreSQL. (A foreground child
# would keep serving while bash waited for it, and bash would die without stopping either.)
build/verdictd serve & pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
if [ "${VERDICT_RUN_CHECK:-0}" = 1 ]; then
  # a check of this script: serve, answer one request, stop
  for _ in $(seq 1 100); do curl -fs "http://$VERDICT_LISTEN/readyz" && break; sleep 0.1; done
  echo; kill -TERM "$pid"
fi
rc=0
wait "$pid" || rc=$?
while kill -0 "$pid" 2>/dev/null; do # wait returns early when a trapped signal arrives
  rc=0
  wait "$pid" || rc=$?
done
exit "$rc"
