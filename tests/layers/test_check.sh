#!/usr/bin/env bash
# test_check.sh - scripts/layers.sh (scripts/check.sh layers) passes on this tree and fails, naming
# the line, on a copy of src/ with one violation each: a store file that includes a service
# header, an http file that includes the store's private header, a store file that calls a
# service function, and a common file that calls a store function.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAILED: $1"; fails=$((fails + 1)); }

if "$root/scripts/layers.sh" "$root" >"$tmp/out" 2>&1; then ok "the tree passes"; else
  cat "$tmp/out"; bad "the tree fails"
fi

# violation NAME FILE SED EXPECTED: copy src/, apply SED to FILE, expect a failure naming EXPECTED
violation() {
  rm -rf "$tmp/copy" && mkdir -p "$tmp/copy" && cp -r "$root/src" "$tmp/copy/"
  sed -i "$3" "$tmp/copy/src/$2"
  if "$root/scripts/layers.sh" "$tmp/copy" >"$tmp/out" 2>&1; then
    bad "$1: passed"
  elif grep -qF "$4" "$tmp/out"; then
    ok "$1: $(grep -F "$4" "$tmp/out" | head -n 1)"
  else
    cat "$tmp/out"; bad "$1: failed without naming $4"
  fi
}
first_include='0,/^#include/s//'
violation "store includes a service header" store/jobs.c \
  "${first_include}#include \"verdict\/jobs.h\"\n#include/" "src/store/jobs.c:"
violation "http includes the store's private header" http/h_items.c \
  "${first_include}#include \"..\/store\/store_internal.h\"\n#include/" "src/http/h_items.c:"
violation "store calls a service function" store/items.c \
  '$a static void layers_probe(void) { (void)vd_job_fence(NULL); }' \
  "names vd_job_fence of service"
violation "common calls a store function" common/util.c \
  '$a int layers_probe(void) { return vd_db_size(NULL); }' "names vd_db_size of store"
# a comment may name any function: it is not a call
allowed() {
  rm -rf "$tmp/copy" && mkdir -p "$tmp/copy" && cp -r "$root/src" "$tmp/copy/"
  sed -i "$3" "$tmp/copy/src/$2"
  if "$root/scripts/layers.sh" "$tmp/copy" >"$tmp/out" 2>&1; then ok "$1"; else
    cat "$tmp/out"; bad "$1: failed"
  fi
}
allowed "a comment may name a service function" store/items.c \
  '$a /* vd_job_fence (the service) reads what this answers */'
echo "layers check: $fails failed"
[ "$fails" -eq 0 ]
