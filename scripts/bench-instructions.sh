#!/usr/bin/env bash
# Instructions per record of the single-threaded cycle, counted by callgrind: the difference
# between a run of 200,000 and one of 100,000 records, divided by 100,000 (so set-up and the
# key table cancel out). Repeatable on a noisy machine, unlike nanoseconds.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh
command -v valgrind >/dev/null || { echo "error: valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --locked -q -p streamshard-core --example cycle_count
bin=target/release/examples/cycle_count
count() {
  local out
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$@" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  rm -f "$out"
}
printf '%-12s %-8s %-8s %s\n' style dist keys instructions/record
for style in per-call worker-style; do
  for spec in "uniform 1" "uniform 1000" "zipf 1000" "uniform 100000" "zipf 100000"; do
    set -- $spec
    small=$(count "$1" "$2" 100000 "$style")
    large=$(count "$1" "$2" 200000 "$style")
    printf '%-12s %-8s %-8s %d\n' "$style" "$1" "$2" $(( (large - small) / 100000 ))
  done
done
