#!/usr/bin/env bash
# Functions shared by .ci/run and scripts/faults.sh: install what the tests
# need from Debian's packages, start PostgreSQL and Redis on 127.0.0.1 if
# they are not running, and prepare a fresh database. Source it; it sets no
# options of the caller's shell. Settings (override before sourcing):
# PGHOST_ADDR, PGPORT_NUM, REDIS_HOST, REDIS_PORT, WAIT_SECONDS.

PGHOST_ADDR=${PGHOST_ADDR:-127.0.0.1}
PGPORT_NUM=${PGPORT_NUM:-5432}
REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}
WAIT_SECONDS=${WAIT_SECONDS:-60}
BACKENDS_START=${BACKENDS_START:-$(date +%s)}

phase() {
	echo
	echo "=== [$(date -u +%H:%M:%S) +$(($(date +%s) - BACKENDS_START))s] $*"
}

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# --- packages ---------------------------------------------------------------

APT_UPDATED=0
apt_install() {
	if [ "$APT_UPDATED" = 0 ]; then
		apt-get update -qq
		APT_UPDATED=1
	fi
	apt-get install -y -qq --no-install-recommends "$@"
}

# ensure_pkg COMMAND PACKAGE: install the Debian PACKAGE when COMMAND is
# missing (looked for in the sbin directories too, where Debian puts
# servers such as pgbouncer). Optional tools the tests need are added in
# ensure_packages.
ensure_pkg() {
	local cmd=$1 pkg=$2
	if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$cmd" >/dev/null 2>&1; then
		echo "${0##*/}: $cmd not found, installing $pkg"
		apt_install "$pkg"
	fi
}

ensure_packages() {
	ensure_pkg make make
	ensure_pkg gcc gcc              # go test -race needs cgo
	ensure_pkg psql postgresql-client
	ensure_pkg pg_ctlcluster postgresql
	ensure_pkg redis-server redis-server
	ensure_pkg redis-cli redis-tools
	ensure_pkg curl curl            # the dev banner's pasted commands (cmd/payoutd/dev_test.go)
	ensure_pkg openssl openssl
	# --- optional packages for later tests: one line each -----------------
	ensure_pkg chromium chromium     # the browser tests (api/checkout_browser_test.go, api/ops_browser_test.go)
	ensure_pkg promtool prometheus   # the alert rules' check (internal/metrics/monitoring_test.go) and the
	                                 # dashboard's graphs, drawn from a real prometheus (api/ops_browser_test.go)
	ensure_pkg pgbouncer pgbouncer   # the scale-out fault scenario's pooler (internal/faults/scaleout_test.go)
	ensure_pkg spin spin             # the submit protocol's model (docs/model/model_test.go)
}

# --- PostgreSQL -------------------------------------------------------------

pg_accepting() {
	pg_isready -q -h "$PGHOST_ADDR" -p "$PGPORT_NUM" 2>/dev/null
}

pg_version() {
	ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1
}

pg_query() {
	psql -X -q -w -h "$PGHOST_ADDR" -p "$PGPORT_NUM" -U postgres -d postgres \
		-v ON_ERROR_STOP=1 "$@"
}

start_postgres() {
	local ver
	ver=$(pg_version)
	[ -n "$ver" ] || die "no PostgreSQL cluster under /etc/postgresql"
	if ! pg_accepting; then
		echo "${0##*/}: starting PostgreSQL $ver/main"
		pg_ctlcluster --skip-systemctl-redirect "$ver" main start ||
			echo "${0##*/}: pg_ctlcluster start returned non-zero; waiting anyway"
	fi
	wait_for "PostgreSQL on $PGHOST_ADDR:$PGPORT_NUM" pg_accepting

	# Tests connect over TCP as postgres without a password: trust 127.0.0.1.
	if ! pg_query -Atc 'select 1' >/dev/null 2>&1; then
		local hba="/etc/postgresql/$ver/main/pg_hba.conf"
		[ -f "$hba" ] || die "cannot log in as postgres and $hba is missing"
		echo "${0##*/}: configuring trust auth for $PGHOST_ADDR in $hba"
		sed -i "1i host all all $PGHOST_ADDR/32 trust" "$hba"
		pg_ctlcluster --skip-systemctl-redirect "$ver" main reload
		sleep 1
		pg_query -Atc 'select 1' >/dev/null ||
			die "still cannot connect as postgres@$PGHOST_ADDR after enabling trust auth"
	fi
}

# --- Redis ------------------------------------------------------------------

redis_up() {
	[ "$(redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]
}

start_redis() {
	if ! redis_up; then
		echo "${0##*/}: starting redis-server"
		redis-server --daemonize yes --bind "$REDIS_HOST" --port "$REDIS_PORT" \
			--save "" --appendonly no
	fi
	wait_for "Redis on $REDIS_HOST:$REDIS_PORT" redis_up
}

# wait_for WHAT CHECK...: run CHECK each second until it succeeds, at most
# WAIT_SECONDS times.
wait_for() {
	local what=$1
	shift
	local i
	for ((i = 0; i < WAIT_SECONDS; i++)); do
		if "$@"; then
			echo "${0##*/}: $what is up"
			return 0
		fi
		sleep 1
	done
	die "$what did not answer within ${WAIT_SECONDS}s"
}

# --- test database ----------------------------------------------------------

# prepare_database NAME: drop what killed earlier runs left and create NAME
# afresh.
prepare_database() {
	# Per-test and template databases a killed earlier run may have left.
	local stale db
	stale=$(pg_query -Atc "select datname from pg_database
		where datname like 'payoutd\_tpl\_%' or datname like 'payoutd\_test\_%'")
	for db in $stale; do
		echo "${0##*/}: dropping stale database $db"
		pg_query -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)"
	done
	pg_query -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)"
	pg_query -c "CREATE DATABASE $1"
	echo "${0##*/}: created database $1"
}

