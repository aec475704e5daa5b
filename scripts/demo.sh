#!/usr/bin/env bash
# The demo: the same records through stock-style serial tasks and through the streamshard
# scheduler with 64 workers; prints records/s for each and checks both processed everything in
# per-key order. Arguments: [records] [workers] [latency-ms].
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh
cargo run --release --locked -q -p streamshard-core --example demo -- "$@"
