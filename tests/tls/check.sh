#!/usr/bin/env bash
# tests/tls/check.sh VERDICTD_PATH - verdictd's own TLS and its secrets from files, end to end:
#   1. make a self-signed certificate for 127.0.0.1 (certtool, from gnutls-bin);
#   2. start verdictd with VERDICT_TLS_CERT_FILE/KEY_FILE, VERDICT_API_KEYS_FILE and
#      VERDICT_DATABASE_URL_FILE (no secret in its environment);
#   3. curl: HTTPS with the certificate as CA answers /healthz and an authenticated call with
#      a key from the file; 401 carries WWW-Authenticate: Bearer; plain HTTP to the port and
#      HTTPS without trusting the certificate both fail;
#   4. gnutls-cli handshakes against the default priorities: TLS 1.0 and 1.1, static-RSA key
#      exchange and CBC/SHA-1 suites fail; TLS 1.2 with ECDHE or DHE and an AEAD cipher, and
#      TLS 1.3, succeed (an RSA certificate, so that static RSA would be possible at all);
#      VERDICT_TLS_PRIORITY overrides the default (TLS 1.1 then succeeds) and a bad string
#      stops verdictd at start;
#   5. a TLS listener off loopback gives no "keys travel in clear" warning; a missing key file
#      stops verdictd at start naming VERDICT_TLS_KEY_FILE.
# Exit 0 all passed, 1 a check failed, 77 skipped (no database, certtool or curl).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERDICTD=${1:?usage: check.sh VERDICTD_PATH}
VERDICTD=$(cd "$(dirname "$VERDICTD")" && pwd)/$(basename "$VERDICTD")

skip() { echo "SKIP $*"; exit 77; }
[ -n "${VERDICT_TEST_DATABASE_URL:-}" ] || skip "VERDICT_TEST_DATABASE_URL is not set"
for tool in certtool gnutls-cli curl psql; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (Debian packages gnutls-bin, curl, postgresql-client)"
done

# shellcheck source=../../scripts/lib.sh
source "$ROOT/scripts/lib.sh"   # vd_free_port

TMP=$(mktemp -d /tmp/verdict-tls.XXXXXX)
DB="verdict_tls_$$_$RANDOM"
VPID=""
status=0
pass() { echo "PASS $*"; }
failc() { echo "FAIL $*"; status=1; }
die() { echo "FAIL $*"; exit 1; }
psql_admin() { psql "$VERDICT_TEST_DATABASE_URL" -XqAt -v ON_ERROR_STOP=1 -c "$1"; }
stop_verdictd() {
  if [ -n "$VPID" ]; then kill "$VPID" 2>/dev/null; wait "$VPID" 2>/dev/null || true; VPID=""; fi
}
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  set +e
  stop_verdictd
  psql_admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
  if [ "$rc" -ne 0 ] && [ -s "$TMP/verdictd.log" ]; then
    echo "--- last lines of verdictd.log"; tail -n 20 "$TMP/verdictd.log"
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- a certificate for 127.0.0.1 and the secret files ---------------------------------------
cat >"$TMP/cert.cfg" <<CFG
cn = "verdict test"
ip_address = "127.0.0.1"
dns_name = "localhost"
expiration_days = 2
tls_www_server
signing_key
encryption_key
CFG
certtool --generate-privkey --key-type=ecdsa --outfile "$TMP/key.pem" 2>/dev/null
certtool --generate-self-signed --load-privkey "$TMP/key.pem" --template "$TMP/cert.cfg" \
  --outfile "$TMP/cert.pem" 2>/dev/null
[ -s "$TMP/cert.pem" ] || die "certtool made no certificate"
TOKEN="tls-admin-$RANDOM$RANDOM$RANDOM"
printf 'ops:admin:%s\ndash:reader:%s-reader\n' "$TOKEN" "$TOKEN" >"$TMP/keys"
psql_admin "CREATE DATABASE $DB" >/dev/null || die "cannot create database $DB"
printf '%s dbname=%s\n' "$VERDICT_TEST_DATABASE_URL" "$DB" >"$TMP/dburl"
pass "self-signed certificate for 127.0.0.1 (certtool), API keys and database URL in files"

# start_tls HOST [extra env...]: verdictd with TLS on a free port; waits for HTTPS /healthz
# (trusting $CA, by default the ECDSA test certificate)
start_tls() {
  local host=$1; shift
  for _ in 1 2 3; do
    PORT=$(vd_free_port)
    env -u VERDICT_API_KEYS -u VERDICT_DATABASE_URL \
      VERDICT_DATABASE_URL_FILE="$TMP/dburl" VERDICT_API_KEYS_FILE="$TMP/keys" \
      VERDICT_TLS_CERT_FILE="$TMP/cert.pem" VERDICT_TLS_KEY_FILE="$TMP/key.pem" \
      VERDICT_LISTEN="$host:$PORT" VERDICT_THREADS=2 "$@" "$VERDICTD" serve >"$TMP/verdictd.log" 2>&1 &
    VPID=$!
    for _ in $(seq 1 150); do
      curl -fs --cacert "${CA:-$TMP/cert.pem}" "https://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0
      kill -0 "$VPID" 2>/dev/null || break
      sleep 0.1
    done
    stop_verdictd
  done
  return 1
}

start_tls 127.0.0.1 || die "verdictd did not answer HTTPS /healthz"
BASE="https://127.0.0.1:$PORT"
pass "verdictd answers HTTPS on $BASE"

code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/cert.pem" \
  -H "Authorization: Bearer $TOKEN" "$BASE/v1/stats")
[ "$code" = 200 ] && pass "GET /v1/stats over TLS with a key from VERDICT_API_KEYS_FILE: 200" \
  || failc "GET /v1/stats over TLS with the file's key answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/cert.pem" \
  -H "Authorization: Bearer $TOKEN-reader" "$BASE/metrics")
[ "$code" = 200 ] && pass "the second line of the keys file is a key too (reader, /metrics 200)" \
  || failc "GET /metrics with the file's reader key answered $code"
hdr=$(curl -s -D - -o /dev/null --cacert "$TMP/cert.pem" "$BASE/v1/stats" | tr -d '\r')
grep -qi '^HTTP/[0-9.]* 401' <<<"$hdr" && grep -qi '^WWW-Authenticate: Bearer$' <<<"$hdr" \
  && pass "401 without a key carries WWW-Authenticate: Bearer" \
  || failc "401 headers: $hdr"
if curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$PORT/healthz"; then
  failc "plain HTTP to the TLS port answered"
else pass "plain HTTP to the TLS port fails"; fi
if curl -s -o /dev/null --max-time 5 "$BASE/healthz"; then
  failc "HTTPS without trusting the self-signed certificate succeeded (is it TLS at all?)"
else pass "HTTPS without the certificate as CA fails verification"; fi
subject=$(curl -sv --cacert "$TMP/cert.pem" "$BASE/healthz" 2>&1 >/dev/null | grep -i 'subject:' || true)
grep -q 'verdict test' <<<"$subject" && pass "the server presents the test's certificate ($subject)" \
  || failc "certificate subject: $subject"
stop_verdictd

# ---- protocol versions and suites (gnutls-cli, an RSA certificate) -------------------------
certtool --generate-privkey --key-type=rsa --bits=2048 --outfile "$TMP/rsakey.pem" 2>/dev/null
certtool --generate-self-signed --load-privkey "$TMP/rsakey.pem" --template "$TMP/cert.cfg" \
  --outfile "$TMP/rsacert.pem" 2>/dev/null
# hello PRIORITY: the negotiated description ("(TLS1.2-X.509)-(ECDHE-...)-...") or nothing
hello() {
  echo | timeout 10 gnutls-cli --no-ca-verification --priority "$1" -p "$PORT" 127.0.0.1 2>&1 \
    | sed -n 's/^- Description: //p' | head -n 1 || true
}
CA="$TMP/rsacert.pem" start_tls 127.0.0.1 VERDICT_TLS_CERT_FILE="$TMP/rsacert.pem" VERDICT_TLS_KEY_FILE="$TMP/rsakey.pem" \
  || die "verdictd with an RSA certificate did not answer"
grep -q 'TLS priorities: SECURE:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2' "$TMP/verdictd.log" \
  && pass "the default priorities are logged at start" || failc "no default priorities in the log"
V12="NORMAL:-VERS-ALL:+VERS-TLS1.2"
refused=("NORMAL:-VERS-ALL:+VERS-TLS1.0" "NORMAL:-VERS-ALL:+VERS-TLS1.1"
  "$V12:-KX-ALL:+RSA" "$V12:-CIPHER-ALL:+AES-128-CBC:+AES-256-CBC:-MAC-ALL:+SHA1"
  "$V12:-CIPHER-ALL:+AES-128-CBC:+AES-256-CBC:-MAC-ALL:+SHA256:+SHA384"
  "$V12:-CIPHER-ALL:+3DES-CBC:+ARCFOUR-128:-MAC-ALL:+SHA1:+MD5")
for p in "${refused[@]}"; do
  got=$(hello "%COMPAT:$p")
  [ -z "$got" ] && pass "refused: $p" || failc "accepted $p: $got"
done
accepted=("$V12:-CIPHER-ALL:+AES-128-GCM:-KX-ALL:+ECDHE-RSA"
  "$V12:-CIPHER-ALL:+AES-256-GCM:-KX-ALL:+ECDHE-RSA"
  "$V12:-CIPHER-ALL:+CHACHA20-POLY1305:-KX-ALL:+ECDHE-RSA"
  "$V12:-CIPHER-ALL:+AES-256-GCM:-KX-ALL:+DHE-RSA" "NORMAL:-VERS-ALL:+VERS-TLS1.3")
for p in "${accepted[@]}"; do
  got=$(hello "$p")
  [ -n "$got" ] && pass "accepted: $p ($got)" || failc "refused $p"
done
got=$(hello "NORMAL")
grep -q '^(TLS1.3' <<<"$got" && pass "a client offering everything gets TLS 1.3 ($got)" \
  || failc "a default client negotiated: $got"
stop_verdictd
CA="$TMP/rsacert.pem" start_tls 127.0.0.1 VERDICT_TLS_PRIORITY="NORMAL:+VERS-TLS1.1" \
  VERDICT_TLS_CERT_FILE="$TMP/rsacert.pem" VERDICT_TLS_KEY_FILE="$TMP/rsakey.pem" \
  || die "verdictd with VERDICT_TLS_PRIORITY did not answer"
got=$(hello "%COMPAT:NORMAL:-VERS-ALL:+VERS-TLS1.1")
grep -q '^(TLS1.1' <<<"$got" && pass "VERDICT_TLS_PRIORITY overrides the default (TLS 1.1: $got)" \
  || failc "VERDICT_TLS_PRIORITY=NORMAL:+VERS-TLS1.1: TLS 1.1 gave '$got'"
stop_verdictd
set +e
env -u VERDICT_API_KEYS VERDICT_DATABASE_URL_FILE="$TMP/dburl" VERDICT_API_KEYS_FILE="$TMP/keys" \
  VERDICT_TLS_CERT_FILE="$TMP/cert.pem" VERDICT_TLS_KEY_FILE="$TMP/key.pem" \
  VERDICT_TLS_PRIORITY="NORMAL:+NO-SUCH-THING" VERDICT_LISTEN="127.0.0.1:$(vd_free_port)" \
  timeout 20 "$VERDICTD" serve >"$TMP/bad.log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'priorities' "$TMP/bad.log"; then
  pass "a bad VERDICT_TLS_PRIORITY stops verdictd at start (exit $rc)"
else failc "bad VERDICT_TLS_PRIORITY: exit $rc, log: $(tail -n 3 "$TMP/bad.log")"; fi

# ---- off loopback with TLS: no warning; without the key: no start -------------------------
start_tls 0.0.0.0 || die "verdictd with TLS on 0.0.0.0 did not answer"
if grep -q 'travel in clear' "$TMP/verdictd.log"; then failc "warned about keys in clear although TLS is on"
else pass "TLS on 0.0.0.0: no 'travel in clear' warning"; fi
stop_verdictd

set +e
env -u VERDICT_API_KEYS VERDICT_DATABASE_URL_FILE="$TMP/dburl" VERDICT_API_KEYS_FILE="$TMP/keys" \
  VERDICT_TLS_CERT_FILE="$TMP/cert.pem" VERDICT_TLS_KEY_FILE="$TMP/missing.pem" \
  VERDICT_LISTEN="127.0.0.1:$(vd_free_port)" VERDICT_AUTO_MIGRATE=0 \
  timeout 20 "$VERDICTD" serve >"$TMP/bad.log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'VERDICT_TLS_KEY_FILE' "$TMP/bad.log"; then
  pass "a missing key file stops verdictd at start (exit $rc, names VERDICT_TLS_KEY_FILE)"
else failc "missing key file: exit $rc, log: $(tail -n 3 "$TMP/bad.log")"; fi

if [ $status -eq 0 ]; then echo "tls check: all passed"; else echo "tls check: FAILED"; fi
exit $status
