#!/usr/bin/env bash
# make faults: every fault scenario of internal/faults (PAYOUTD_FAULTS=all)
# on loopback, against a fresh database. Installs what the scenarios need
# from Debian's packages when run as root (as .ci/run does), starts
# PostgreSQL and Redis if they are not running, and ends with the summary
# line of each scenario. Every scenario stops by itself; the whole run is
# bounded by FAULTS_TIMEOUT (default 10m).
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:${PATH}"
export DEBIAN_FRONTEND=noninteractive

GO=${GO:-go}
FAULTS_DB=${FAULTS_DB:-payoutd_faults}
FAULTS_TIMEOUT=${FAULTS_TIMEOUT:-10m}
FAULTS_RUN=${FAULTS_RUN:-.}
# shellcheck source=backends.sh
. scripts/backends.sh

phase "packages"
if [ "$(id -u)" = 0 ]; then
	ensure_packages
	# The slow scenarios' only: TestPatroniFailover's cluster manager and
	# its store. CI runs the quick ones, so .ci/run does not install them.
	ensure_pkg patroni patroni
	ensure_pkg etcd etcd-server
else
	for cmd in redis-server redis-cli psql pg_ctlcluster pg_basebackup pgbouncer patroni etcd; do
		PATH="$PATH:/usr/sbin" command -v "$cmd" >/dev/null 2>&1 || die "$cmd is missing: run as root to install it (apt-get install postgresql redis-server redis-tools pgbouncer patroni etcd-server)"
	done
fi
# The PostgreSQL scenarios run clusters of their own with initdb and
# pg_ctl, which Debian keeps off PATH: they look in pg_config --bindir,
# then /usr/lib/postgresql/*/bin, as here.
pg_bin=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$pg_bin/initdb" ]; then
	pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
for cmd in initdb pg_ctl pg_basebackup; do
	[ -n "$pg_bin" ] && [ -x "$pg_bin/$cmd" ] || die "$cmd not found in pg_config --bindir or /usr/lib/postgresql/*/bin: apt-get install postgresql"
done

phase "PostgreSQL"
start_postgres

phase "Redis"
start_redis

phase "fault database"
prepare_database "$FAULTS_DB"

export TEST_DATABASE_URL="postgres://postgres@$PGHOST_ADDR:$PGPORT_NUM/$FAULTS_DB?sslmode=disable"
export TEST_REDIS_URL="redis://$REDIS_HOST:$REDIS_PORT/9"
export PAYOUTD_FAULTS=all

phase "fault scenarios (timeout $FAULTS_TIMEOUT)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$GO" test -count=1 -v -timeout "$FAULTS_TIMEOUT" -run "$FAULTS_RUN" ./internal/faults/ 2>&1 | tee "$log" || status=$?

phase "summary"
grep -E '^(fault|history)=' "$log" || echo "no scenario printed a summary line"
grep -E '^--- (FAIL|SKIP)' "$log" || true
exit "$status"
