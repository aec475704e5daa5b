#!/usr/bin/env bash
# Reproduces every number of docs/benchmarks.md for the scheduler core: criterion benchmarks
# (cycle, threads), heap allocations per record, instructions per record (callgrind) and the
# repeated-run throughput medians. Takes about 10 minutes on 2 cores; run on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh
cargo bench --locked -p streamshard-core -- --noplot 2>&1 |
  grep -E '^(allocations|cycle|threads)|time:|thrpt:' | grep -v '%\]'
bash scripts/bench-instructions.sh
cargo build --release --locked -q -p streamshard-core --example throughput
for batch in 1 16; do
  target/release/examples/throughput uniform 100000 "$batch" 21
  target/release/examples/throughput zipf 10000 "$batch" 21
done
