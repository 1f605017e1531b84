#!/usr/bin/env bash
# scripts/package-wordpress.sh [OUT.zip] - the verdict-pipeline WordPress plugin as an
# installable zip (Plugins -> Add New -> Upload Plugin, or Plugin_Upgrader), with the PHP
# client (clients/php/src) bundled in verdict-pipeline/lib/client/src, where the plugin's
# loader looks when no Composer autoloader provides Verdict\Client.
# Default output: build/verdict-pipeline-<version>.zip. Needs zip.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PLUGIN="$ROOT/clients/wordpress/verdict-pipeline"
version=$(sed -n 's/^ \* Version: *//p' "$PLUGIN/verdict-pipeline.php")
[ -n "$version" ] || { echo "package-wordpress: no Version in the plugin header" >&2; exit 1; }
OUT=${1:-$ROOT/build/verdict-pipeline-$version.zip}
command -v zip >/dev/null || { echo "package-wordpress: zip is not installed (apt-get install zip)" >&2; exit 1; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cp -a "$PLUGIN" "$STAGE/verdict-pipeline"
rm -rf "$STAGE/verdict-pipeline/lib" "$STAGE/verdict-pipeline/vendor"
mkdir -p "$STAGE/verdict-pipeline/lib/client"
cp -a "$ROOT/clients/php/src" "$STAGE/verdict-pipeline/lib/client/"
cp "$ROOT/clients/php/composer.json" "$STAGE/verdict-pipeline/lib/client/"
[ -f "$ROOT/LICENSE" ] && cp "$ROOT/LICENSE" "$STAGE/verdict-pipeline/"
find "$STAGE" -name '*.php' -print0 | xargs -0 -n1 php -l >/dev/null
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
(cd "$STAGE" && find verdict-pipeline -type f | LC_ALL=C sort | TZ=UTC zip -q -X -D "$OUT" -@)
echo "$OUT"
