# scripts/lib.sh - shared by scripts/run.sh and scripts/test.sh: install what is missing
# (Debian packages), build, and start/stop a throwaway PostgreSQL on a free loopback port.
# Sourced, not run.

VD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VD_PG_BIN=${VD_PG_BIN:-/usr/lib/postgresql/15/bin}

vd_log() { printf '[verdict] %s\n' "$*" >&2; }

vd_sudo() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Install the Debian packages named, if any is missing.
vd_apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  vd_log "installing: ${missing[*]}"
  # wait for another apt/dpkg run (a parallel build, unattended-upgrades) instead of failing
  vd_sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive vd_sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends \
    "${missing[@]}" >/dev/null
}

VD_BUILD_PACKAGES=(build-essential cmake pkg-config libmicrohttpd-dev libpq-dev libcjson-dev
  libcmocka-dev libpcre2-dev libcurl4-openssl-dev postgresql-15 ca-certificates curl)

# vd_build DIR [cmake args...]
vd_build() {
  local dir=$1; shift
  cmake -S "$VD_ROOT" -B "$dir" -DVERDICT_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)" >/dev/null
}

# The range 20000-32767 lies below Linux's ephemeral ports (32768-60999), so a port picked
# here cannot be in use as the local end of some outgoing connection when we bind it.
vd_free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$(( (RANDOM % 12000) + 20000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"; return 0
    fi
  done
  return 1
}

# Run a PostgreSQL binary as the postgres user when we are root (initdb refuses root).
vd_pg_as() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# vd_pg_start DIR [SERVER_OPTION...]: initdb DIR/data on first use, start it on a free
# loopback port, and export VD_PG_PORT and VD_PG_URL (a libpq keyword string for database
# "postgres"). The cluster is durable (fsync, synchronous_commit and full_page_writes keep their
# PostgreSQL defaults: on) unless the caller passes options that say otherwise; scripts/test.sh
# passes its fast, throwaway ones. Extra words are handed to postgres as they are ("-c k=v").
vd_pg_start() {
  local dir=$1; shift
  local extra="$*"
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; chmod 700 "$dir"; fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    vd_pg_as "$VD_PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
      --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  fi
  VD_PG_PORT=$(vd_free_port)
  vd_pg_as "$VD_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-p $VD_PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir -c max_connections=300 $extra" \
    start >/dev/null || { cat "$dir/postgres.log" >&2; return 1; }
  VD_PG_URL="host=127.0.0.1 port=$VD_PG_PORT user=postgres dbname=postgres"
  export VD_PG_PORT VD_PG_URL
}

vd_pg_stop() {
  local dir=$1
  [ -f "$dir/data/postmaster.pid" ] || return 0
  vd_pg_as "$VD_PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}
