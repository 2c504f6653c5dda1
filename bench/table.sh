#!/usr/bin/env bash
# bench/table.sh FILE: the table `make bench` ends with: one row per measure
# the benchmarks appended to FILE (bench::row in bench/lib.sh), its goal, the
# measured ratio and whether it meets the goal. Exits 1 when a row misses its
# goal, so `make bench` fails loudly.
#
# Usage: bench/table.sh FILE
set -Eeuo pipefail
file=${1:?usage: bench/table.sh FILE}
[[ -s $file ]] || { echo "bench/table.sh: $file holds no rows; did every benchmark run?" >&2; exit 1; }
jq -rs '
  (["measure", "goal", "measured", "", "how"] | @tsv),
  (.[] | [.what, "<= \(.goal)x", "\(.ratio)x", (if .ratio <= .goal then "met" else "MISSED" end), .detail] | @tsv)
' "$file" | column -t -s $'\t'
jq -se 'all(.ratio <= .goal)' "$file" >/dev/null
