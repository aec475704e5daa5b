#!/usr/bin/env bash
# The side-by-side benchmark (stock Kafka Streams vs streamshard vs Parallel Consumer) on a local
# broker it starts itself. Usage: bash scripts/bench.sh [--quick] [--only io,noop,...]
# Full run: results in docs/benchmarks/ (results.md, results.json, results.png); --quick: target/bench-quick/.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }
. scripts/lib/toolchain.sh
step "build: the load tool (Rust, rdkafka), the agent jar, the benchmark apps"
cargo build --release -p streamshard-load
mvn -B -q --no-transfer-progress package -DskipTests
python3 -c 'import matplotlib' 2>/dev/null || pip3 install --quiet matplotlib
# OpenTelemetry's Java agent for the otel scenario's +otel engines (bench/run.py: OTEL_AGENT).
mvn -B -q --no-transfer-progress dependency:get -Dartifact=io.opentelemetry.javaagent:opentelemetry-javaagent:2.21.0
step "local Kafka broker"
export BROKER_PORT="${BROKER_PORT:-19192}"
. scripts/lib/broker.sh
step "benchmark"
python3 bench/run.py --brokers "$STREAMSHARD_BOOTSTRAP" "$@"
