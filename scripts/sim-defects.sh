#!/usr/bin/env bash
# make sim-defects: shows that the simulation (make sim) catches real
# defects. Each defect is put back into a copy of one source file, given
# to the build with go build -overlay (the tree is never touched); the
# simulation runs seeds until one fails, and the defect counts as caught
# when that failure is the one it should cause. Prints the seed of each.
#
# Defects:
#   resubmit-blind    a submit attempted before is submitted again without
#                     asking the vendor what became of it     -> paid twice,
#                     or paid while another process expires it (lost)
#   unguarded-move    a move updates the row whatever status it is in now,
#                     not only the status it was read in      -> money moved twice
#   resubmit-early    a submit the vendor does not know is submitted again
#                     before the lease is over, while the first may still
#                     be on its way                           -> paid twice
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
SEEDS=${SEEDS:-300}
STEPS=${STEPS:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# patch NAME FILE OLD NEW: the overlay that replaces OLD (a literal line
# fragment that must occur exactly once) with NEW in FILE.
patch_overlay() {
	local name=$1 file=$2 old=$3 new=$4
	local copy="$work/$name.go"
	OLD="$old" NEW="$new" python3 - "$file" "$copy" <<'PY'
import os, sys
src = open(sys.argv[1]).read()
old, new = os.environ["OLD"], os.environ["NEW"]
if src.count(old) != 1:
    sys.exit(f"{sys.argv[1]}: the fragment to patch occurs {src.count(old)} times, not once: update scripts/sim-defects.sh")
open(sys.argv[2], "w").write(src.replace(old, new))
PY
	printf '{"Replace":{"%s":"%s"}}' "$PWD/$file" "$copy" >"$work/$name.json"
}

# run NAME WANT: builds payoutsim with NAME's overlay, runs seeds until one
# fails, and checks the failure mentions WANT.
run() {
	local name=$1 want=$2
	"$GO" build -overlay "$work/$name.json" -o "$work/payoutsim-$name" ./cmd/payoutsim
	local out
	out=$("$work/payoutsim-$name" -seeds "$SEEDS" -steps "$STEPS" -determinism-every 0 -out "$work" 2>&1 || true)
	local line
	line=$(grep -m1 ' FAILED at step ' <<<"$out" || true)
	if [ -z "$line" ]; then
		echo "defect=$name NOT CAUGHT in $SEEDS seeds"
		return 1
	fi
	if ! grep -q -- "$want" <<<"$line"; then
		echo "defect=$name caught by another invariant than expected ($want): $line"
		return 1
	fi
	echo "defect=$name caught: $line"
}

patch_overlay resubmit-blind payouts/process.go \
	$'\tcase d.SubmitAttempts > 0:\n\t\treturn s.resolveAttempted(ctx, d)\n' ''
patch_overlay unguarded-move internal/database/sqlitedriver/payouts.go \
	'Where("id IN ? AND status = ?", m.IDs, m.From)' 'Where("id IN ?", m.IDs)'
patch_overlay resubmit-early payouts/process.go \
	'case asked.Sub(*d.SubmitAttemptedAt) < s.submitLease:' 'case asked.Sub(*d.SubmitAttemptedAt) < 0:'
status=0
run resubmit-blind "paid twice\|lost" || status=1
run unguarded-move "reconcile\|twice\|lost" || status=1
run resubmit-early "paid twice" || status=1
exit $status
