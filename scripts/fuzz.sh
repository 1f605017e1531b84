#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] - build the libFuzzer target for the stdout parser + adjudicator
# (tests/fuzz/fuzz_adjudicator.c) with clang, ASan and UBSan, seed it from the adjudication
# vectors, and run it for a bounded time (default 60 s). Exits non-zero on any crash, leak
# or broken invariant. Called by scripts/test.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$VD_ROOT"
seconds=${1:-${VERDICT_FUZZ_SECONDS:-60}}
vd_apt_install clang libclang-rt-14-dev libcjson-dev libpcre2-dev
out=$(mktemp -d /tmp/verdict-fuzz.XXXXXX)
trap 'rm -rf "$out"' EXIT
clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc tests/fuzz/fuzz_adjudicator.c \
  src/service/adjudicator.c src/service/adjudicator_text.c src/service/adjudicator_stream.c \
  src/service/adjudication_json.c src/http/adjudication_codec.c src/common/error.c \
  src/common/util.c src/common/buf.c \
  src/common/json_scan.c src/common/redact.c -lpthread \
  -lcjson -lpcre2-8 -lm -o "$out/fuzz_adjudicator"
mkdir -p "$out/corpus"
# seeds: every vector's stdout (mode byte 0) and whole session (mode byte 1)
node -e '
const fs = require("fs");
const lines = fs.readFileSync("tests/vectors/adjudication.jsonl", "utf8").split("\n").filter(Boolean);
lines.forEach((l, i) => {
  const v = JSON.parse(l);
  if (typeof v.session.stdout === "string")
    fs.writeFileSync(`${process.argv[1]}/s${i}`, Buffer.concat([Buffer.from([0]), Buffer.from(v.session.stdout)]));
  fs.writeFileSync(`${process.argv[1]}/j${i}`, Buffer.concat([Buffer.from([1]), Buffer.from(JSON.stringify(v.session))]));
});' "$out/corpus"
vd_log "fuzzing the adjudicator for ${seconds}s ($(ls "$out/corpus" | wc -l) seeds)"
"$out/fuzz_adjudicator" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 "$out/corpus" 2>"$out/log" || {
  tail -n 60 "$out/log" >&2
  echo "fuzz: 0 passed, 1 failed"
  exit 1
}
grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$out/log" >&2 || true
echo "fuzz: 1 passed, 0 failed"
