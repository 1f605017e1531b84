#!/usr/bin/env bash
# docker/test-image.sh - build the verdictd image with podman and test it for real
# (/work/shared/CONTAINERS.md has the recipe): a Debian 12 base made with debootstrap and
# `podman import` (no registry), a chroot-isolated build, then the container run with runc on
# the host network against the PostgreSQL named by VERDICT_TEST_DATABASE_URL (a libpq keyword
# string or URI for a superuser, e.g. "host=127.0.0.1 port=5432 user=postgres dbname=postgres").
#
# Checks: /healthz 200; /readyz 200 (serve migrated a fresh database); /ui/ 200 (the console
# is embedded); GET /metrics with the
# bearer token is 200 with `verdict_up 1`, without it 401; the image's HEALTHCHECK passes; the
# process runs as a non-root user; SIGTERM (`podman stop`) makes it exit 0 quickly.
# Always removes the container, the test database and its temp dirs. Exits non-zero on failure.
#
# Environment: VERDICT_TEST_DATABASE_URL (required); VERDICT_IMAGE (default localhost/verdict);
# VERDICT_TEST_CACHE (default /var/cache/verdict-test: the debootstrap rootfs tarball);
# VERDICT_DEBIAN_MIRROR (default http://deb.debian.org/debian, for debootstrap).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/../scripts/lib.sh"
cd "$VD_ROOT"

IMAGE=${VERDICT_IMAGE:-localhost/verdict}
BASE=localhost/debian:bookworm
CACHE=${VERDICT_TEST_CACHE:-/var/cache/verdict-test}
BASE_TAR=$CACHE/debian-bookworm-minbase.tar
MIRROR=${VERDICT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
TOKEN="image-test-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
STOP_LIMIT=5 # seconds SIGTERM may take before we call it slow

log() { printf '[image] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; } # since T0: seconds
T_ALL=$(now)
T_PHASE=
PHASE=
TIMINGS=()
phase() { # phase NAME: close the running phase (printing its time) and open NAME
  local dt
  if [ -n "$PHASE" ]; then
    dt=$(since "$T_PHASE")
    TIMINGS+=("$(printf '%-8s %6ss' "$PHASE" "$dt")")
    log "$PHASE: done in ${dt}s"
  fi
  PHASE=$1
  T_PHASE=$(now)
  [ -n "$PHASE" ] && log "$PHASE: ..."
  return 0
}

TMP=
CID=
DB=
cleanup() {
  local rc=$?
  set +e
  if [ -n "$CID" ]; then
    if [ $rc -ne 0 ]; then
      log "container logs:"
      podman logs "$CID" 2>&1 | tail -n 25 | sed 's/^/[image]   /' >&2
    fi
    podman rm -f -t 0 "$CID" >/dev/null 2>&1
  fi
  if [ -n "$DB" ]; then
    psql "$VERDICT_TEST_DATABASE_URL" -qAt -v ON_ERROR_STOP=1 \
      -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1 \
      || log "warning: could not drop database $DB"
  fi
  [ -n "$TMP" ] && rm -rf "$TMP"
  if [ $rc -eq 0 ]; then
    log "all image checks passed in $(since "$T_ALL")s"
  else
    log "FAILED (in phase ${PHASE:-?})"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -n "${VERDICT_TEST_DATABASE_URL:-}" ] || die "VERDICT_TEST_DATABASE_URL is not set"

# --- (a) tools --------------------------------------------------------------------------------
phase tools
vd_apt_install podman runc debootstrap curl
command -v psql >/dev/null 2>&1 || vd_apt_install postgresql-client
TMP=$(mktemp -d /var/tmp/verdict-image.XXXXXX)

# --- (c) podman configuration: this sandbox needs runc, cgroupfs and no default ulimits -------
cat >"$TMP/containers.conf" <<'CONF'
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
CONF
export CONTAINERS_CONF=$TMP/containers.conf
podman() { command podman --runtime runc "$@"; }

# --- (b) base image: debootstrap once per machine, rootfs tarball cached ----------------------
phase base
if podman image exists "$BASE"; then
  log "base: $BASE present"
else
  if [ ! -s "$BASE_TAR" ]; then
    log "base: debootstrap --variant=minbase bookworm (a few minutes, once per machine)"
    mkdir -p "$CACHE"
    debootstrap --variant=minbase bookworm "$TMP/rootfs" "$MIRROR" \
      >"$TMP/debootstrap.log" 2>&1 || { tail -n 30 "$TMP/debootstrap.log" >&2; die "debootstrap"; }
    rm -rf "$TMP/rootfs/var/cache/apt/archives/"*.deb "$TMP/rootfs/var/lib/apt/lists/"*
    tar --numeric-owner -C "$TMP/rootfs" -cf "$BASE_TAR.tmp" . && mv "$BASE_TAR.tmp" "$BASE_TAR"
    rm -rf "$TMP/rootfs"
  else
    log "base: importing cached rootfs $BASE_TAR"
  fi
  podman import -q --change 'CMD ["/bin/bash"]' "$BASE_TAR" "$BASE" >/dev/null
fi

# --- (d) build ----------------------------------------------------------------------------------
# --format docker: the OCI format has no HEALTHCHECK; podman would drop it with a warning.
phase build
podman build --isolation chroot --format docker --build-arg BASE_IMAGE="$BASE" \
  -t "$IMAGE" -f docker/Dockerfile . >"$TMP/build.log" 2>&1 \
  || { tail -n 60 "$TMP/build.log" >&2; die "podman build (full log above)"; }
log "build: $IMAGE $(podman image inspect --format '{{.Id}}' "$IMAGE" | cut -c1-12)," \
  "$(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1/1e6}')"
[ "$(podman image inspect --format '{{.Config.User}}' "$IMAGE")" = verdict ] \
  || die "image USER is not verdict"
podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE" | grep -q healthz \
  || die "image has no HEALTHCHECK"

# --- (e) database and container -----------------------------------------------------------------
phase run
db="verdict_image_$$_$RANDOM"
psql "$VERDICT_TEST_DATABASE_URL" -qAt -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$db\"" >/dev/null
DB=$db # from here on, cleanup drops it
case "$VERDICT_TEST_DATABASE_URL" in
  postgres://* | postgresql://*) # URI: replace the path (the database), keep the query
    base=${VERDICT_TEST_DATABASE_URL%%\?*}
    query=${VERDICT_TEST_DATABASE_URL#"$base"}
    rest=${base#*://}
    [[ $rest == */* ]] && base=${base%/*}
    DB_URL="$base/$DB$query" ;;
  *) DB_URL="$VERDICT_TEST_DATABASE_URL dbname=$DB" ;; # a later keyword wins in libpq
esac
# --no-healthcheck: podman runs HEALTHCHECKs from systemd timers, and there is no systemd here
# (it would log errors even with --health-interval=disable); the image's own HEALTHCHECK
# command is run once by hand below.
start_container() {
  PORT=$(vd_free_port)
  URL="http://127.0.0.1:$PORT"
  CID=$(podman run -d --network host --no-healthcheck \
    -e VERDICT_DATABASE_URL="$DB_URL" \
    -e VERDICT_LISTEN="127.0.0.1:$PORT" \
    -e VERDICT_API_KEYS="ops:admin:$TOKEN" \
    "$IMAGE")
  log "run: container ${CID:0:12} on $URL, database $DB"
}
code() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 10 "$@" || true; }
wait_healthy() { # 0 once /healthz answers 200; 1 if the container exited first
  for _ in $(seq 1 120); do
    [ "$(code "$URL/healthz")" = 200 ] && return 0
    [ "$(podman inspect --format '{{.State.Running}}' "$CID")" = true ] || return 1
    sleep 0.5
  done
  return 0 # still running but not healthy: the check below reports it
}
start_container

# --- (f) HTTP checks ------------------------------------------------------------------------------
phase http
# A port picked free can still be taken by someone else before the container binds it; that
# (and only that: the log says "cannot listen") earns one more try on another port.
if ! wait_healthy && podman logs "$CID" 2>&1 | grep -q "cannot listen"; then
  log "http: the container could not bind port $PORT; its log:"
  podman logs "$CID" 2>&1 | tail -n 5 | sed 's/^/[image]   /' >&2
  podman rm -f -t 0 "$CID" >/dev/null 2>&1
  start_container
  wait_healthy || true
fi
[ "$(podman inspect --format '{{.State.Running}}' "$CID")" = true ] \
  || die "the container exited (code $(podman inspect --format '{{.State.ExitCode}}' "$CID"))"
c=$(code "$URL/healthz"); [ "$c" = 200 ] || die "GET /healthz: $c, want 200"
log "http: GET /healthz 200 $(cat "$TMP/body")"
c=$(code "$URL/readyz"); [ "$c" = 200 ] || die "GET /readyz: $c, want 200 ($(cat "$TMP/body"))"
log "http: GET /readyz 200 $(cat "$TMP/body")"
c=$(code "$URL/ui/"); [ "$c" = 200 ] && grep -q '<title>' "$TMP/body" \
  || die "GET /ui/: $c, want 200 with the console's page (ui/ embedded in the image)"
log "http: GET /ui/ 200 (the console is embedded)"
c=$(code -H "Authorization: Bearer $TOKEN" "$URL/metrics")
[ "$c" = 200 ] || die "GET /metrics with token: $c, want 200"
grep -qx 'verdict_up 1' "$TMP/body" || die "GET /metrics: no 'verdict_up 1' line"
log "http: GET /metrics (bearer) 200, verdict_up 1"
c=$(code "$URL/metrics"); [ "$c" = 401 ] || die "GET /metrics without token: $c, want 401"
log "http: GET /metrics (no token) 401"
c=$(code -H "Authorization: Bearer wrong-token-123" "$URL/metrics")
[ "$c" = 401 ] || die "GET /metrics with a wrong token: $c, want 401"
log "http: GET /metrics (wrong token) 401"
[ "$(psql "$DB_URL" -qAt -c 'SELECT count(*) > 0 FROM information_schema.tables WHERE table_schema = current_schema()')" = t ] \
  || die "database $DB has no tables: serve did not migrate"
log "http: database $DB was migrated by serve"

# --- (g) process checks -----------------------------------------------------------------------------
phase process
uid=$(podman exec "$CID" id -u)
[[ -n "$uid" && "$uid" != 0 ]] || die "the container runs as uid '$uid'"
log "process: runs as uid $uid ($(podman exec "$CID" id -un))"
hc=$(podman image inspect --format '{{index .Config.Healthcheck.Test 1}}' "$IMAGE")
podman exec "$CID" /bin/sh -c "$hc" >/dev/null 2>&1 || die "HEALTHCHECK ($hc) fails"
log "process: HEALTHCHECK healthy"
t0=$(now)
podman stop -t 10 "$CID" >/dev/null
dt=$(since "$t0")
ec=$(podman inspect --format '{{.State.ExitCode}}' "$CID")
[ "$ec" = 0 ] || die "exit code $ec after SIGTERM, want 0"
awk -v d="$dt" -v l="$STOP_LIMIT" 'BEGIN { exit !(d < l) }' || die "SIGTERM took ${dt}s (limit ${STOP_LIMIT}s)"
podman logs "$CID" 2>&1 | grep -q stopped || die "no 'stopped' log line after SIGTERM"
log "process: SIGTERM -> exit 0 in ${dt}s"

phase ""
log "timings:"
for t in "${TIMINGS[@]}"; do log "  $t"; done
