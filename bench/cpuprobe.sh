#!/bin/bash
# bench/cpuprobe.sh [VERDICTD] [N]: PostgreSQL instructions per statement of the single-item
# cycle (claim_many of one, job_lock, job_finish; jobs_lock and jobs_finish of one row), counted
# by callgrind, with WAL bytes and
# records per item. Makes a throwaway cluster, migrates it with VERDICTD (registers 3N + 50
# items in flow step bench_0 over HTTP, VACUUM ANALYZE), stops it, then runs
# bench/cpuprobe.py on it (see there: statements replayed in `postgres --single`, each phase
# in a callgrind dump of its own). OUT (default /tmp/cpuprobe) keeps the callgrind files and
# annotate-*.txt. Needs valgrind, curl and python3; about a minute for N = 200.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VD=${1:-$ROOT/build/verdictd}; N=${2:-200}
source "$ROOT/scripts/lib.sh"
D=$(mktemp -d /tmp/cpuprobe-pg.XXXXXX)
VP=
cleanup() { [ -n "$VP" ] && kill "$VP" 2>/dev/null; vd_pg_stop "$D"; rm -rf "$D"; }
trap cleanup EXIT
vd_pg_start "$D" -c fsync=off -c synchronous_commit=off
psql -X -qAt "$VD_PG_URL" -c "CREATE DATABASE seed"
PORT=$(vd_free_port)
VERDICT_DATABASE_URL="$VD_PG_URL dbname=seed" VERDICT_LISTEN="127.0.0.1:$PORT" \
  VERDICT_LOG_LEVEL=error "$VD" serve >"$D/verdictd.log" 2>&1 &
VP=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
python3 - "http://127.0.0.1:$PORT" "$((3 * N + 50))" <<'PY'
import json, sys, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
items = [{"flow_step_id": "bench_0", "source_type": "bench",
          "item_identifier": "https://bench.example/bench_0/%d" % i,
          "payload": {"title": "bench item %d" % i}} for i in range(1, n + 1)]
for b in range(0, n, 500):
    req = urllib.request.Request(url + "/v1/items", json.dumps({"items": items[b:b + 500]}).encode(),
                                 {"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
PY
kill "$VP"; wait "$VP" 2>/dev/null || true; VP=
psql -X -qAt "$VD_PG_URL dbname=seed" -c "VACUUM ANALYZE"
vd_pg_stop "$D"
rm -f "$D/data/postmaster.pid"
python3 "$ROOT/bench/cpuprobe.py" "$D/data" "$N" "${OUT:-/tmp/cpuprobe}"
