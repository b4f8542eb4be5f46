#!/usr/bin/env bash
# make soak: the soak of internal/faults (TestSoak, PAYOUTD_SOAK=1): the
# service under half its measured capacity for SOAK_DURATION (default 30m)
# with faults at random times, on a PostgreSQL and a Redis of its own on
# loopback ports (the machine's servers are not used). Installs what it
# needs from Debian's packages when run as root, as .ci/run does. The soak
# stops by itself; go test's timeout is SOAK_DURATION plus 20 minutes for
# the build, the setup, the capacity measurement and the drain.
# SOAK_SEED replays a run's fault times; SOAK_PLOT is where the PNG goes.
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:${PATH}"
export DEBIAN_FRONTEND=noninteractive

GO=${GO:-go}
export SOAK_DURATION=${SOAK_DURATION:-30m}
# shellcheck source=backends.sh
. scripts/backends.sh

# seconds DURATION: a Go duration of hours, minutes and seconds (30m,
# 1h30m, 240s) in whole seconds.
seconds() {
	local rest=$1 total=0
	while [[ $rest =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
		case ${BASH_REMATCH[2]} in
		h) total=$((total + BASH_REMATCH[1] * 3600)) ;;
		m) total=$((total + BASH_REMATCH[1] * 60)) ;;
		s) total=$((total + BASH_REMATCH[1])) ;;
		esac
		rest=${BASH_REMATCH[3]}
	done
	[ -z "$rest" ] && [ "$1" != "" ] || die "SOAK_DURATION=$1: want whole hours, minutes and seconds such as 30m, 4m or 1h30m"
	echo "$total"
}
timeout="$(($(seconds "$SOAK_DURATION") + 1200))s"

phase "packages"
if [ "$(id -u)" = 0 ]; then
	ensure_pkg pg_ctlcluster postgresql
	ensure_pkg redis-server redis-server
else
	command -v redis-server >/dev/null 2>&1 || die "redis-server is missing: run as root to install it (apt-get install redis-server)"
fi
# The soak runs a PostgreSQL of its own with initdb and pg_ctl, which
# Debian keeps off PATH: the test looks in pg_config --bindir, then
# /usr/lib/postgresql/*/bin, as here.
pg_bin=$(pg_config --bindir 2>/dev/null || true)
if [ ! -x "$pg_bin/initdb" ]; then
	pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
for cmd in initdb pg_ctl; do
	[ -n "$pg_bin" ] && [ -x "$pg_bin/$cmd" ] || die "$cmd not found in pg_config --bindir or /usr/lib/postgresql/*/bin: apt-get install postgresql"
done

phase "soak for $SOAK_DURATION (go test timeout $timeout)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
PAYOUTD_SOAK=1 "$GO" test -count=1 -v -timeout "$timeout" -run '^TestSoak$' ./internal/faults/ 2>&1 | tee "$log" || status=$?

phase "summary"
grep -E '^(fault=soak|soak seed=|soak: plot written)' "$log" || echo "the soak printed no summary line"
grep -E '^--- (FAIL|PASS|SKIP)' "$log" || true
exit "$status"
