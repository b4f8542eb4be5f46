#!/usr/bin/env bash
# Checks that the domain stays free of transport and infrastructure
# (`make lint`). The domain packages below must not
# depend, even transitively, on the HTTP framework, the queue or the
# metrics library, nor on the packages above them (nothing imports
# upward); and the lifecycle packages must not import the SQL dialect
# switch themselves. Each violation is printed with the import chain that
# brings it in, from the domain package to the edge to cut.
#
# A listed path stands for itself and everything under it
# (github.com/prometheus: every Prometheus package). One `go list -deps`
# does all the work, so the check takes about a second.
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
# Nor on the layers above it (module-relative).
UPWARD="api worker tasks cmd internal/app dispatch"
# These do not import DIALECT directly: the dialect switch belongs to the
# store (ledger, the money store, may know the dialect).
NO_DIALECT="models payouts payments webhooks dispatch"
DIALECT=internal/database
# Files that still import DIALECT, until the SQL that differs between
# PostgreSQL and SQLite moves behind a driver the domain declares. The list
# may only shrink: a file not on it that imports DIALECT fails, and so does
# a file on it that no longer does (take it off).
DIALECT_KNOWN="models/store.go payouts/transition.go webhooks/events.go"

cd "$(dirname "$0")/.."

roots=()
for p in $DOMAIN; do roots+=("$MODULE/$p"); done
# >>> layers inside internal/ (roots)
LAYER_ROOTS="internal/metrics internal/inquirybudget internal/ratelimit internal/config"
for p in $LAYER_ROOTS; do roots+=("$MODULE/$p"); done
# <<< layers inside internal/ (roots)
graph=$($GO list -deps -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' "${roots[@]}")

bad=0
awk -v module="$MODULE" -v domain="$DOMAIN" -v forbidden="$FORBIDDEN" -v upward="$UPWARD" '
function short(p) { return index(p, module "/") == 1 ? substr(p, length(module) + 2) : p }
function under(p, prefix) { return p == prefix || index(p, prefix "/") == 1 }
# why(p): the rule p breaks as a dependency of the domain, or "".
function why(p,    i) {
	for (i = 1; i <= nf; i++) if (under(p, f[i])) return "transport/infrastructure"
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
	nf = split(forbidden, f, " "); nu = split(upward, u, " ")
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

for p in $NO_DIALECT; do
	for f in $(grep -l "\"$MODULE/$DIALECT\"" "$p"/*.go 2>/dev/null | grep -v '_test\.go$' || true); do
		case " $DIALECT_KNOWN " in
		*" $f "*) ;;
		*)
			echo "importcheck: $f imports $DIALECT directly (the dialect switch belongs to the store)"
			bad=1
			;;
		esac
	done
done
for f in $DIALECT_KNOWN; do
	if ! grep -q "\"$MODULE/$DIALECT\"" "$f" 2>/dev/null; then
		echo "importcheck: $f no longer imports $DIALECT: take it off DIALECT_KNOWN"
		bad=1
	fi
done

if [ "$bad" = 1 ]; then
	echo "importcheck: FAIL: the domain ($DOMAIN) must stay free of transport and infrastructure (see scripts/importcheck.sh)"
	exit 1
fi
echo "importcheck: ok: $DOMAIN"
