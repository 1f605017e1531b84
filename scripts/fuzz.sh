#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] - build the libFuzzer target for the stdout parser + adjudicator
# (tests/fuzz/fuzz_adjudicator.c) with clang, ASan and UBSan, seed it from the adjudication
# vectors, and run it for a bounded time (default 60 s); then the request-line and header
# parsers' targets (fuzz_claim_header, fuzz_parse_int, fuzz_url_unescape: src/http/input.c and
# vd_parse_i64) for VERDICT_FUZZ_INPUT_SECONDS each (default 10); then the failure-template
# miner (fuzz_templates) for VERDICT_FUZZ_TEMPLATE_SECONDS (default 10). Exits non-zero on any
# crash, leak or broken invariant. Called by scripts/test.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$VD_ROOT"
seconds=${1:-${VERDICT_FUZZ_SECONDS:-60}}
vd_apt_install clang libclang-rt-14-dev libcjson-dev libpcre2-dev
out=$(mktemp -d /tmp/verdict-fuzz.XXXXXX)
trap 'rm -rf "$out"' EXIT
clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Isrc/common/include -Isrc/store/include -Isrc/service/include -Isrc/http/include -Isrc tests/fuzz/fuzz_adjudicator.c \
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
# the parsers of what a request carries outside its body: one target each, seeded by hand
input_seconds=${VERDICT_FUZZ_INPUT_SECONDS:-10}
uuid=0b7e3f0e-6a43-4c1b-9a53-8f5d2b9c1d2e
passed=1
for t in claim_header parse_int url_unescape; do
  clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Isrc/common/include -Isrc/store/include -Isrc/service/include -Isrc/http/include -Isrc "tests/fuzz/fuzz_$t.c" \
    src/http/input.c src/common/util.c src/common/redact.c src/common/buf.c -lpcre2-8 \
    -lpthread -lm -o "$out/fuzz_$t"
  mkdir -p "$out/corpus_$t"
  case $t in
  claim_header) seeds=("1:$uuid" "999999999999999999:$uuid" "9223372036854775808:$uuid" "01:$uuid") ;;
  parse_int) seeds=("9223372036854775807" "-9223372036854775808" "18446744073709551616" "+1") ;;
  url_unescape) seeds=("/v1/flow-steps/a%00b" "/v1/items?state=%0A%09%7F" "a%%41%2" "%C3%A9") ;;
  esac
  for i in "${!seeds[@]}"; do printf '%s' "${seeds[$i]}" >"$out/corpus_$t/seed$i"; done
  vd_log "fuzzing $t for ${input_seconds}s"
  "$out/fuzz_$t" -max_total_time="$input_seconds" -max_len=512 -timeout=10 -rss_limit_mb=1024 \
    -print_final_stats=1 "$out/corpus_$t" 2>"$out/log_$t" || {
    tail -n 40 "$out/log_$t" >&2
    echo "fuzz: $passed passed, 1 failed ($t)"
    exit 1
  }
  grep -E "stat::number_of_executed_units" "$out/log_$t" >&2 || true
  passed=$((passed + 1))
done
# the failure-template miner and the evidence classifier (src/service/templates.c,
# template_class.c), seeded from the labelled corpus's error texts
template_seconds=${VERDICT_FUZZ_TEMPLATE_SECONDS:-10}
clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -Isrc/common/include -Isrc/store/include -Isrc/service/include -Isrc/http/include -Isrc tests/fuzz/fuzz_templates.c \
  src/service/templates.c src/service/template_class.c -lm -o "$out/fuzz_templates"
mkdir -p "$out/corpus_templates"
awk -F '\t' -v dir="$out/corpus_templates" 'NR % 40 == 2 { f = dir "/seed" NR; printf "%s", $NF > f; close(f) }' \
  tests/corpus/failures.tsv
vd_log "fuzzing the template miner for ${template_seconds}s ($(ls "$out/corpus_templates" | wc -l) seeds)"
"$out/fuzz_templates" -max_total_time="$template_seconds" -max_len=4096 -timeout=10 \
  -rss_limit_mb=1024 -print_final_stats=1 "$out/corpus_templates" 2>"$out/log_templates" || {
  tail -n 40 "$out/log_templates" >&2
  echo "fuzz: $passed passed, 1 failed (templates)"
  exit 1
}
grep -E "stat::number_of_executed_units" "$out/log_templates" >&2 || true
passed=$((passed + 1))
echo "fuzz: $passed passed, 0 failed"
