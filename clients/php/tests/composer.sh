#!/usr/bin/env bash
# clients/php/tests/composer.sh - the two Composer repository entries clients/php/README.md
# documents, tried for real with Debian's composer and no network (packagist.org off): a
# "path" entry to clients/php, and a "vcs" entry to this git repository (the root
# composer.json; the branch checked out now, as dev-<branch>). Each project autoloads
# Verdict\Client and reads its VERSION. Run by tests/run.sh; skips (77) without composer.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
command -v composer >/dev/null || { echo "skip: composer is not installed (scripts/test.sh installs it)"; exit 77; }
TMP=$(mktemp -d /tmp/verdict-composer.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export COMPOSER_HOME="$TMP/home" COMPOSER_NO_INTERACTION=1 COMPOSER_ALLOW_SUPERUSER=1
want=$(sed -n "s/.*VERSION = '\(.*\)';/\1/p" "$ROOT/clients/php/src/Client.php")

try() { # NAME REPOSITORY-JSON CONSTRAINT
  mkdir -p "$TMP/$1"
  cat >"$TMP/$1/composer.json" <<JSON
{"require": {"verdict/client": "$3"}, "repositories": [$2, {"packagist.org": false}]}
JSON
  (cd "$TMP/$1" && composer install --quiet) || { echo "composer: the $1 entry did not install"; exit 1; }
  got=$(cd "$TMP/$1" && php -r 'require "vendor/autoload.php"; echo \Verdict\Client::VERSION;')
  [ "$got" = "$want" ] || { echo "composer: the $1 entry autoloads Verdict\\Client $got, not $want"; exit 1; }
  echo "composer: the $1 entry installs verdict/client $got"
}
try path "{\"type\": \"path\", \"url\": \"$ROOT/clients/php\", \"options\": {\"symlink\": false}}" '*@dev'
branch=$(git -C "$ROOT" symbolic-ref --quiet --short HEAD || true)
if [ -n "$branch" ] && git -C "$ROOT" cat-file -e "HEAD:composer.json" 2>/dev/null; then
  try vcs "{\"type\": \"vcs\", \"url\": \"$ROOT\"}" "dev-$branch"
else
  echo "composer: the vcs entry is not tried (no branch checked out, or composer.json not committed)"
fi
