#!/usr/bin/env bash
# scripts/layers.sh [ROOT] - the layers' one-way rule (CONTRIBUTING.md, Layers) over the C of
# ROOT/src (default: this checkout): common < store < service < http < main.c. Fails on
#  - an include that runs upward: "verdict/x.h" owned by a higher layer (the header's owner is
#    the src/<layer>/include/ it lives in), or a private header ("x.h", "../y/x.h") that is not
#    beside the including file;
#  - a name that runs upward: a file naming a function defined (not static) in a higher layer.
# Comments are ignored; strings are not parsed. The build enforces the same (each layer's
# library sees only its own and lower layers' headers); this check says it without a build and
# names the line. scripts/check.sh runs it as `layers`; tests/scripts/test_layers.sh proves it
# fails on each kind of violation.
set -uo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root/src" || exit 2

rank() {
  case $1 in
  common) echo 1 ;; store) echo 2 ;; service) echo 3 ;; http) echo 4 ;; *) echo 5 ;;
  esac
}

# header -> owner, function -> owner (one "name layer rank" per line)
owners=$(mktemp)
trap 'rm -f "$owners" "$owners.fn" "$owners.files"' EXIT
for l in common store service http; do
  [ -d "$l/include" ] || continue
  (cd "$l/include" && find . -name '*.h' | sed "s|^\./||; s|\$| $l $(rank $l)|")
done >"$owners"
for l in common store service http; do
  find "$l" -name '*.c' -print0 | xargs -0 -r awk -v L="$l" -v R="$(rank $l)" '
    /^(static|typedef|extern)[[:space:]]/ { next }
    /^[A-Za-z_][A-Za-z0-9_ \t*]*[ \t*](vd_[a-z0-9_]+)\(/ && $0 !~ /;[[:space:]]*$/ {
      if (match($0, /vd_[a-z0-9_]+\(/)) print substr($0, RSTART, RLENGTH - 1), L, R
    }'
done | sort -u >"$owners.fn"

find . -type f | sed 's|^\./||' >"$owners.files"
find . \( -name '*.c' -o -name '*.h' \) | sed 's|^\./||' | sort |
  xargs awk -v HDR="$owners" -v FN="$owners.fn" -v FILES="$owners.files" '
    function rank(l) { return l == "common" ? 1 : l == "store" ? 2 : l == "service" ? 3 : l == "http" ? 4 : 5 }
    BEGIN {
      while ((getline line < HDR) > 0) { split(line, a, " "); hown[a[1]] = a[2]; hrank[a[1]] = a[3] }
      while ((getline line < FN) > 0) { split(line, a, " "); fown[a[1]] = a[2]; frank[a[1]] = a[3] }
      while ((getline line < FILES) > 0) exists[line] = 1
      bad = 0
    }
    function report(what) { printf "src/%s:%d: %s\n", FILENAME, FNR, what; bad = 1 }
    FNR == 1 {
      L = FILENAME ~ /^(common|store|service|http)\// ? substr(FILENAME, 1, index(FILENAME, "/") - 1) : "main"
      R = rank(L); DIR = FILENAME; sub(/\/[^\/]*$/, "", DIR); if (DIR == FILENAME) DIR = "."
      incomment = 0; delete seen
    }
    {
      line = $0
      # drop comments: the rest of an open block comment, whole ones, then a // tail
      if (incomment) {
        e = index(line, "*/")
        if (!e) next
        line = substr(line, e + 2); incomment = 0
      }
      while ((s = index(line, "/*")) > 0) {
        rest = substr(line, s + 2); e = index(rest, "*/")
        if (!e) { line = substr(line, 1, s - 1); incomment = 1; break }
        line = substr(line, 1, s - 1) " " substr(rest, e + 2)
      }
      sub(/\/\/.*/, "", line)
    }
    line ~ /^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
      inc = line; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
      if (inc ~ /^verdict\//) {
        if ((inc in hown) && hrank[inc] + 0 > R + 0)
          report("includes " inc ", a header of " hown[inc] " (" L " may include only its own and lower layers)")
      } else if (inc ~ /\// || !((DIR == "." ? inc : DIR "/" inc) in exists)) {
        report("includes \"" inc "\": a private header that is not its own (" L ")")
      }
      next
    }
    {
      rest = line
      while (match(rest, /vd_[a-z0-9_]+/)) {
        name = substr(rest, RSTART, RLENGTH)
        before = RSTART > 1 ? substr(rest, RSTART - 1, 1) : ""
        rest = substr(rest, RSTART + RLENGTH)
        if (before ~ /[A-Za-z0-9_]/) continue
        if ((name in fown) && frank[name] + 0 > R + 0 && !seen[name]++)
          report("names " name " of " fown[name] " (" L " may call only its own and lower layers)")
      }
    }
    END { exit bad }'
status=$?
[ $status -eq 0 ] || echo "layers: common < store < service < http < main.c (CONTRIBUTING.md, Layers)"
exit $status
