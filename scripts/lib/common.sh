# shellcheck shell=bash
# Shared helpers for scripts/up and scripts/test. Source this file from the
# repository root; it only defines functions. Every helper is idempotent and
# prints nothing when there is nothing to do: it speaks (on stderr) only when
# it installs or starts something, or when it has to stop.
#
# Variables read here (all optional):
#   REDIS_URL          use this Redis as is (must be reachable)
#   REDIS_PORT         local port for the "reuse or start a local Redis" path (6379)
#   TEST_DATABASE_URL  use this PostgreSQL server for tests as is
#   WAIT_TIMEOUT       seconds to wait for a started service to answer (30)

[[ -n "${_WCR_COMMON_SH:-}" ]] && return 0
_WCR_COMMON_SH=1

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

is_root() { [[ $(id -u) -eq 0 ]]; }

# port_open HOST PORT [SECONDS]: true when a TCP connection succeeds in time.
port_open() {
  local host=$1 port=$2 secs=${3:-2}
  # shellcheck disable=SC2016  # $1 and $2 expand in the inner shell
  timeout "$secs" bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null
}

# wait_for_port HOST PORT [SECONDS]: poll until the port answers.
wait_for_port() {
  local host=$1 port=$2 secs=${3:-${WAIT_TIMEOUT:-30}} start=$SECONDS
  until port_open "$host" "$port" 1; do
    (( SECONDS - start >= secs )) && return 1
    sleep 0.2
  done
}

# url_answers URL DEFAULT_PORT: true when the URL's host:port accepts a TCP
# connection. A URL without a TCP host (a unix socket) is taken on trust.
url_answers() {
  local hp host port
  hp=$(node -e '
    const u = new URL(process.argv[1]);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    if (host) console.log(host, u.port || process.argv[2]);
  ' "$1" "$2" 2>/dev/null) || die "not a valid URL: $1"
  [[ -n $hp ]] || return 0
  read -r host port <<<"$hp"
  port_open "$host" "$port"
}

require_node() {
  command -v node >/dev/null 2>&1 || die "Node.js 20.19 or newer is required (node not found in PATH)"
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' \
    || die "Node.js 20.19 or newer is required (found $(node --version))"
}

# ensure_node_deps: npm ci when node_modules is missing or older than the lock file.
ensure_node_deps() {
  require_node
  [[ -f package-lock.json ]] || die "package-lock.json not found in $(pwd)"
  if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
    log "installing Node dependencies (npm ci)"
    if ! npm ci --no-audit --no-fund </dev/null; then
      # A registry mirror that lacks some optional platform packages (other
      # operating systems' builds of msgpackr-extract, say) leaves them out of
      # the lock file, and npm ci refuses such a lock. npm install resolves the
      # same versions and skips what this platform does not need.
      log "npm ci refused the lock file; installing with npm install instead"
      npm install --no-audit --no-fund </dev/null || die "npm install failed"
    fi
    touch node_modules/.package-lock.json
  fi
}

# apt_install PKG...: Debian packages, as root only; apt-get update once per run.
_WCR_APT_UPDATED=
apt_install() {
  (( $# )) || return 0
  command -v apt-get >/dev/null 2>&1 \
    || die "missing: $*; install it with your system's package manager"
  is_root || die "missing: $*; install it with: sudo apt-get update && sudo apt-get install -y $*"
  export DEBIAN_FRONTEND=noninteractive
  if [[ -z $_WCR_APT_UPDATED ]]; then
    log "apt-get update"
    apt-get update -qq >/dev/null </dev/null || die "apt-get update failed"
    _WCR_APT_UPDATED=1
  fi
  log "installing $* (apt-get)"
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null </dev/null \
    || die "apt-get install -y $* failed"
}

# ensure_redis DATA_DIR: make a Redis available and export REDIS_URL.
#   1. REDIS_URL set: use it (it must answer).
#   2. 127.0.0.1:$REDIS_PORT answers: use it.
#   3. redis-server installed (or installable as root): start it daemonized on
#      127.0.0.1:$REDIS_PORT with its data and log under DATA_DIR/redis.
ensure_redis() {
  local data_dir=${1:?ensure_redis needs a DATA_DIR}
  local port=${REDIS_PORT:-6379}
  if [[ -n ${REDIS_URL:-} ]]; then
    url_answers "$REDIS_URL" 6379 \
      || die "REDIS_URL=$REDIS_URL does not answer; start that Redis or unset REDIS_URL to use a local one"
    export REDIS_URL
    return 0
  fi
  if ! port_open 127.0.0.1 "$port"; then
    if ! command -v redis-server >/dev/null 2>&1; then
      if ! is_root || ! command -v apt-get >/dev/null 2>&1; then
        die "no Redis on 127.0.0.1:$port and redis-server is not installed. Install it (sudo apt-get install redis-server, or brew install redis), or set REDIS_URL=redis://host:port"
      fi
      apt_install redis-server
    fi
    # The package's own service may have started on the default port just now.
    port_open 127.0.0.1 "$port" || _start_local_redis "$data_dir" "$port"
  fi
  export REDIS_URL="redis://127.0.0.1:$port"
}

_start_local_redis() {
  local dir port=$2
  mkdir -p "$1/redis" || die "cannot create $1/redis"
  dir=$(cd "$1/redis" && pwd)
  log "starting redis-server on 127.0.0.1:$port (data and log in $dir)"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$dir" \
    --logfile "$dir/redis.log" --pidfile "$dir/redis.pid" --appendonly yes --maxmemory-policy noeviction >/dev/null </dev/null \
    || die "redis-server did not start; see $dir/redis.log"
  wait_for_port 127.0.0.1 "$port" \
    || die "redis-server did not answer on 127.0.0.1:$port within ${WAIT_TIMEOUT:-30}s; see $dir/redis.log"
}

# ensure_postgres: make a PostgreSQL server with a database for the tests and
# export TEST_DATABASE_URL (tests create their own schemas in it).
#   1. TEST_DATABASE_URL set: use it (it must answer).
#   2. 127.0.0.1:5432 answers: postgresql://postgres@127.0.0.1:5432/test,
#      creating database "test" when missing.
#   3. a Debian cluster exists: start it, then as 2.
#   4. root: apt-get install postgresql, trust 127.0.0.1 in pg_hba.conf, start, then as 2.
ensure_postgres() {
  if [[ -n ${TEST_DATABASE_URL:-} ]]; then
    url_answers "$TEST_DATABASE_URL" 5432 \
      || die "TEST_DATABASE_URL=$TEST_DATABASE_URL does not answer; start that server or unset TEST_DATABASE_URL"
    export TEST_DATABASE_URL
    return 0
  fi
  local port=5432
  if ! port_open 127.0.0.1 "$port"; then
    local cluster
    cluster=$(_pg_main_cluster)
    if [[ -z $cluster ]]; then
      apt_install postgresql postgresql-client
      cluster=$(_pg_main_cluster)
      if [[ -z $cluster ]]; then
        local ver
        ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -n | tail -n 1)
        [[ -n $ver ]] || die "postgresql was installed but no server version is in /usr/lib/postgresql"
        log "creating PostgreSQL cluster $ver/main"
        pg_createcluster "$ver" main >/dev/null || die "pg_createcluster $ver main failed"
        cluster=$(_pg_main_cluster)
      fi
      _pg_trust_localhost "${cluster%% *}"
    fi
    local ver=${cluster%% *} cport=${cluster##* }
    [[ $cport == 5432 ]] || die "PostgreSQL cluster $ver/main uses port $cport, not 5432; set TEST_DATABASE_URL=postgresql://user@127.0.0.1:$cport/test"
    _pg_start "$ver"
    wait_for_port 127.0.0.1 "$port" || die "PostgreSQL $ver/main did not answer on 127.0.0.1:$port within ${WAIT_TIMEOUT:-30}s; see /var/log/postgresql/postgresql-$ver-main.log"
  fi
  command -v psql >/dev/null 2>&1 || apt_install postgresql-client
  _pg_wait_ready "postgresql://postgres@127.0.0.1:$port/postgres"
  _pg_ensure_database "postgresql://postgres@127.0.0.1:$port" test
  export TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$port/test"
}

# "<version> <port>" of the newest Debian cluster named main, or nothing.
_pg_main_cluster() {
  command -v pg_lsclusters >/dev/null 2>&1 || return 0
  pg_lsclusters -h 2>/dev/null | awk '$2 == "main" { print $1, $3 }' | sort -n | tail -n 1
}

_pg_start() {
  local ver=$1
  # The package's own service may have started it already.
  pg_ctlcluster "$ver" main status >/dev/null 2>&1 && return 0
  is_root || die "PostgreSQL $ver/main is not running; start it with: sudo pg_ctlcluster --skip-systemctl-redirect $ver main start"
  log "starting PostgreSQL cluster $ver/main"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start </dev/null \
    || die "pg_ctlcluster $ver main start failed; see /var/log/postgresql/postgresql-$ver-main.log"
}

# Local tests connect as postgres over 127.0.0.1 without a password, as on the
# project's development machines. Only done for a cluster this script installed.
_pg_trust_localhost() {
  local ver=$1 line='host all all 127.0.0.1/32 trust'
  local hba=/etc/postgresql/$ver/main/pg_hba.conf
  [[ -f $hba ]] || die "$hba not found"
  grep -qxF "$line" "$hba" && return 0
  log "trusting 127.0.0.1 in $hba (local tests only)"
  sed -i "1i $line" "$hba" || die "cannot edit $hba"
  # Reload only matters when the package's service already started the cluster.
  pg_ctlcluster --skip-systemctl-redirect "$ver" main reload >/dev/null 2>&1 || true
}

# Wait until the server accepts this connection (it may still be starting up).
_pg_wait_ready() {
  local url=$1 secs=${WAIT_TIMEOUT:-30} start=$SECONDS err
  until err=$(psql "$url" -XqtAc 'select 1' 2>&1 >/dev/null </dev/null); do
    if [[ $err != *"starting up"* && $err != *"Connection refused"* ]] || (( SECONDS - start >= secs )); then
      die "cannot connect to ${url%/*}: ${err:-no answer}
  Local tests connect as user postgres without a password (trust on 127.0.0.1),
  or set TEST_DATABASE_URL=postgresql://user:password@host:5432/database"
    fi
    sleep 0.3
  done
}

_pg_ensure_database() {
  local base=$1 db=$2 found
  found=$(psql "$base/postgres" -XqtAc "select 1 from pg_database where datname = '$db'" </dev/null) \
    || die "cannot query databases on $base"
  [[ $found == 1 ]] && return 0
  log "creating database $db"
  psql "$base/postgres" -Xqc "create database \"$db\"" >/dev/null </dev/null \
    || die "cannot create database $db on $base"
}

# ensure_ipp_printer: what the IPP backend's tests run against: CUPS's
# ippeveprinter (Debian package cups-ipp-utils). It will not start without
# DNS-SD, even with advertising off (-r off): a system D-Bus and avahi-daemon
# (packages dbus, avahi-daemon) are installed and started here when missing.
# The tests start their own ippeveprinter on 127.0.0.1 and fail (never skip)
# when it cannot start.
ensure_ipp_printer() {
  local missing=()
  command -v ippeveprinter >/dev/null 2>&1 || missing+=(cups-ipp-utils)
  command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus)
  command -v avahi-daemon >/dev/null 2>&1 || missing+=(avahi-daemon)
  (( ${#missing[@]} )) && apt_install "${missing[@]}"
  if ! { [[ -S /run/dbus/system_bus_socket ]] && pgrep -x dbus-daemon >/dev/null 2>&1; }; then
    is_root || die "the IPP tests need a system D-Bus for avahi-daemon: start it (sudo dbus-daemon --system --fork)"
    log "starting the system D-Bus (dbus-daemon --system)"
    mkdir -p /run/dbus && rm -f /run/dbus/pid /run/dbus/system_bus_socket
    dbus-daemon --system --fork || die "dbus-daemon --system --fork failed"
  fi
  if ! avahi-daemon --check 2>/dev/null; then
    is_root || die "the IPP tests need avahi-daemon (DNS-SD for ippeveprinter): start it (sudo avahi-daemon -D)"
    log "starting avahi-daemon (DNS-SD for ippeveprinter)"
    avahi-daemon -D --no-drop-root --no-chroot || die "avahi-daemon -D failed"
  fi
}

# ensure_chromium: the headless browser the /docs test drives through
# puppeteer-core (test/api/docs-browser.test.ts): Debian's chromium package,
# never a browser download. The test fails (never skips) without it.
ensure_chromium() {
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || apt_install chromium
}
