#!/usr/bin/env bash
# Checks that every relative link of README.md and docs/*.md resolves inside
# the repository (`make lint`): the file or folder it names exists, and a
# #fragment names a heading of the page it points at (GitHub's anchors:
# lower case, punctuation dropped, spaces as hyphens, "-1" and up for
# repeats). Links to the web (http:, https:, mailto:) are not followed.
# Links inside code blocks and `code spans` are not links and are skipped.
# Each broken link is printed as file:line: target: why.
set -euo pipefail

cd "$(dirname "$0")/.."
pages=(README.md docs/*.md)

# One awk pass over every page prints its headings' anchors
# ("A<TAB>page<TAB>anchor") and its links ("L<TAB>page<TAB>line<TAB>target").
records=$(awk '
	FNR == 1 { fenced = 0; delete seen }
	/^[ \t]*```/ { fenced = !fenced; next }
	fenced { next }
	/^#+[ \t]/ {
		h = $0
		sub(/^#+[ \t]+/, "", h)
		sub(/[ \t]+#*[ \t]*$/, "", h)
		h = tolower(h)
		gsub(/[^a-z0-9 _-]/, "", h)
		gsub(/ /, "-", h)
		a = h
		if (h in seen) { seen[h]++; a = h "-" seen[h] } else { seen[h] = 0 }
		print "A\t" FILENAME "\t" a
	}
	{
		line = $0
		gsub(/`[^`]*`/, "", line)
		while (match(line, /\]\([^)]*\)/)) {
			target = substr(line, RSTART + 2, RLENGTH - 3)
			line = substr(line, RSTART + RLENGTH)
			print "L\t" FILENAME "\t" FNR "\t" target
		}
	}
' "${pages[@]}")

declare -A anchors=()
while IFS=$'\t' read -r kind page anchor _; do
	if [ "$kind" = A ]; then anchors["$page#$anchor"]=1; fi
done <<<"$records"

# normalize sets rel to path (relative to the repository) with . and ..
# resolved, or fails when it climbs out of the repository. No subshell: it
# runs once per link.
normalize() {
	local part out=()
	local IFS=/
	for part in $1; do
		case "$part" in
		"" | .) ;;
		..)
			[ ${#out[@]} -gt 0 ] || return 1
			unset 'out[${#out[@]}-1]'
			;;
		*) out+=("$part") ;;
		esac
	done
	rel="${out[*]}"
}

broken=0
complain() {
	echo "$1: $2: $3"
	broken=1
}
while IFS=$'\t' read -r kind page line target; do
	[ "$kind" = L ] || continue
	where="$page:$line"
	case "$target" in
	http://* | https://* | mailto:*) continue ;;
	"") complain "$where" "()" "empty link"; continue ;;
	esac
	dir=.
	[[ "$page" == */* ]] && dir=${page%/*}
	path=${target%%#*}
	fragment=
	[ "$path" != "$target" ] && fragment=${target#*#}
	if [ -z "$path" ]; then
		rel=$page
	elif [[ "$path" == /* ]] || ! normalize "$dir/$path"; then
		complain "$where" "$target" "points outside the repository"
		continue
	fi
	if [ ! -e "${rel:-.}" ]; then
		complain "$where" "$target" "no such file"
		continue
	fi
	case "$fragment:$rel" in
	:*) ;;         # no fragment
	*.md) [ -n "${anchors["$rel#$fragment"]:-}" ] || complain "$where" "$target" "no heading with that anchor in $rel" ;;
	*) ;;          # anchors of other files (yaml, code) are not checked
	esac
done <<<"$records"

if [ "$broken" -ne 0 ]; then
	echo "doclinks: fix the links above (README.md and docs/*.md must link only inside the repository)"
	exit 1
fi
