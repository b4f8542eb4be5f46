#!/usr/bin/env bash
# Checks that the domain stays free of transport and infrastructure
# (`make lint`). The domain packages below must not
# depend, even transitively, on the HTTP framework, the queue or the
# metrics library, nor on the database layer (internal/database and its
# drivers: the domain reaches its driver through models.DriverOf), nor on
# the packages above them (nothing imports upward). Each violation is
# printed with the import chain that brings it in, from the domain package
# to the edge to cut.
#
# A listed path stands for itself and everything under it
# (github.com/prometheus: every Prometheus package). One `go list -deps`
# does all the work, so the check takes about a second.
#
# --self-test proves the gate can fail: it adds, through a `go list
# -overlay` (the tree is never touched), a file to models that imports
# internal/database and one to payouts that imports gin, and checks that
# the check reports each. IMPORTCHECK_OVERLAY passes an overlay file to the
# check itself.
set -euo pipefail

GO=${GO:-go}
MODULE=github.com/payoutd/payoutd

# The domain: these packages exactly, not their subpackages (vendors is the
# vendor interface package; vendors/sandbox and the rest are adapters).
# dispatch, which decides when payouts' submits run, sits above payouts
# (it is on UPWARD too: no other domain package imports it) but is held to
# the same rule: it declares what it needs (a queue, a due signal, a
# notifier) and the worker and internal/app supply them over asynq and
# Redis.
DOMAIN="models payouts payments webhooks ledger vendors dispatch"
# No domain package depends on these, not even transitively.
FORBIDDEN="github.com/gin-gonic/gin github.com/hibiken/asynq github.com/prometheus"
# Nor on the database layer (module-relative): the SQL that differs
# between PostgreSQL and SQLite is the drivers', behind models.Driver.
DATABASE="internal/database"
# Nor on the layers above it (module-relative).
UPWARD="api worker tasks cmd internal/app dispatch"

cd "$(dirname "$0")/.."

if [ "${1:-}" = "--self-test" ]; then
	# Each probe: the package it joins, the import it adds, and the line
	# the check must print for it.
	probes=(
		"models|$MODULE/internal/database|importcheck: models: models -> internal/database (database layer)"
		"payouts|github.com/gin-gonic/gin|importcheck: payouts: payouts -> github.com/gin-gonic/gin (transport/infrastructure)"
	)
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	failed=0
	for probe in "${probes[@]}"; do
		IFS='|' read -r pkg import want <<<"$probe"
		printf 'package %s\n\nimport _ "%s"\n' "$pkg" "$import" >"$dir/$pkg.go"
		printf '{"Replace":{"%s/%s/zz_importcheck_probe.go":"%s/%s.go"}}\n' "$PWD" "$pkg" "$dir" "$pkg" >"$dir/$pkg.json"
		if out=$(IMPORTCHECK_OVERLAY="$dir/$pkg.json" GO="$GO" "$0" 2>&1); then
			echo "importcheck: self-test: FAIL: $pkg importing $import passed the check"
			failed=1
		elif ! grep -qxF "$want" <<<"$out"; then
			echo "importcheck: self-test: FAIL: $pkg importing $import failed, but without the line: $want"
			echo "$out"
			failed=1
		fi
	done
	if [ "$failed" = 1 ]; then
		exit 1
	fi
	echo "importcheck: self-test: ok: the check fails when models imports internal/database and when payouts imports gin"
	exit 0
fi

overlay=()
if [ -n "${IMPORTCHECK_OVERLAY:-}" ]; then
	overlay=(-overlay "$IMPORTCHECK_OVERLAY")
fi

roots=()
for p in $DOMAIN; do roots+=("$MODULE/$p"); done
# >>> layers inside internal/ (roots)
LAYER_ROOTS="internal/metrics internal/inquirybudget internal/ratelimit internal/config"
for p in $LAYER_ROOTS; do roots+=("$MODULE/$p"); done
# <<< layers inside internal/ (roots)
# -e: a probe in models that imports internal/database is also an import
# cycle (the drivers import models); the graph still says who imports what
# (and go vet fails on a real cycle).
graph=$($GO list -e "${overlay[@]}" -deps -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' "${roots[@]}")

bad=0
awk -v module="$MODULE" -v domain="$DOMAIN" -v forbidden="$FORBIDDEN" -v database="$DATABASE" -v upward="$UPWARD" '
function short(p) { return index(p, module "/") == 1 ? substr(p, length(module) + 2) : p }
function under(p, prefix) { return p == prefix || index(p, prefix "/") == 1 }
# why(p): the rule p breaks as a dependency of the domain, or "".
function why(p,    i) {
	for (i = 1; i <= nf; i++) if (under(p, f[i])) return "transport/infrastructure"
	for (i = 1; i <= nd; i++) if (under(p, module "/" db[i])) return "database layer"
	for (i = 1; i <= nu; i++) if (under(p, module "/" u[i])) return "imports upward"
	return ""
}
function chain(root, p,    s) {
	s = short(p)
	while (p != root) { p = parent[p]; s = short(p) " -> " s }
	return s
}
{ imports[$1] = substr($0, length($1) + 2) }
END {
	nf = split(forbidden, f, " "); nd = split(database, db, " "); nu = split(upward, u, " ")
	nr = split(domain, r, " ")
	bad = 0
	for (i = 1; i <= nr; i++) {
		root = module "/" r[i]
		# Breadth first from root: shortest chains. A forbidden package is
		# reported at the edge that enters it and not walked into.
		split("", parent); split("", seen)
		head = tail = 0; queue[tail++] = root; seen[root] = 1
		while (head < tail) {
			p = queue[head++]
			n = split(imports[p], deps, " ")
			for (j = 1; j <= n; j++) {
				d = deps[j]
				if (d in seen) continue
				seen[d] = 1; parent[d] = p
				if ((reason = why(d)) != "") {
					printf "importcheck: %s: %s (%s)\n", r[i], chain(root, d), reason
					bad = 1
					continue
				}
				queue[tail++] = d
			}
		}
	}
	exit bad
}' <<<"$graph" || bad=1

# >>> layers inside internal/
# Each rule: a package (exactly), the paths it must not depend on, even
# transitively (module-relative, or a module path; each stands for itself
# and everything under it), and why. Its package must be in LAYER_ROOTS.
#   internal/metrics implements the sinks and observers the domain
#   declares (payouts.Metrics, vendors.CallObserver...): internal/app
#   wires them, so metrics never imports the domain.
#   The inquiry budget and the local limits it shares with the API are
#   the payout service's, not HTTP's.
#   The configuration is read by api and worker, never the reverse.
LAYER_RULES=(
	"internal/metrics|models payouts payments webhooks ledger vendors dispatch|metrics implements the interfaces the domain declares; internal/app wires them"
	"internal/inquirybudget|api github.com/gin-gonic/gin|the inquiry budget is the payout service's, composed by internal/app"
	"internal/ratelimit|api github.com/gin-gonic/gin|the local limits serve the inquiry budget as well as the API"
	"internal/config|api worker|the configuration is read by the processes, it does not build them"
)
awk -v module="$MODULE" -v rules="$(printf '%s\n' "${LAYER_RULES[@]}")" '
function short(p) { return index(p, module "/") == 1 ? substr(p, length(module) + 2) : p }
function under(p, prefix) { return p == prefix || index(p, prefix "/") == 1 }
function full(p) { return index(p, ".") > 0 && index(p, "/") > 0 && index(p, ".") < index(p, "/") ? p : module "/" p }
function chain(root, p,    s) {
	s = short(p)
	while (p != root) { p = parent[p]; s = short(p) " -> " s }
	return s
}
{ imports[$1] = substr($0, length($1) + 2) }
END {
	nrules = split(rules, rule, "\\n")
	bad = 0
	for (i = 1; i <= nrules; i++) {
		if (rule[i] == "") continue
		split(rule[i], part, "|")
		root = module "/" part[1]
		if (!(root in imports)) {
			printf "importcheck: %s: not in LAYER_ROOTS, so not checked\n", part[1]
			bad = 1
			continue
		}
		nf = split(part[2], f, " ")
		split("", parent); split("", seen)
		head = tail = 0; queue[tail++] = root; seen[root] = 1
		while (head < tail) {
			p = queue[head++]
			n = split(imports[p], deps, " ")
			for (j = 1; j <= n; j++) {
				d = deps[j]
				if (d in seen) continue
				seen[d] = 1; parent[d] = p
				hit = 0
				for (k = 1; k <= nf; k++) if (under(d, full(f[k]))) hit = 1
				if (hit) {
					printf "importcheck: %s: %s (%s)\n", part[1], chain(root, d), part[3]
					bad = 1
					continue
				}
				queue[tail++] = d
			}
		}
	}
	exit bad
}' <<<"$graph" || bad=1
# <<< layers inside internal/

if [ "$bad" = 1 ]; then
	echo "importcheck: FAIL: the domain ($DOMAIN) must stay free of transport, infrastructure and the database layer (see scripts/importcheck.sh)"
	exit 1
fi
echo "importcheck: ok: $DOMAIN"
