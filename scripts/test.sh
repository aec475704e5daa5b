#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + property + stress tests, and one pass of every
# benchmark in test mode (so the harness cannot rot). Speed is never asserted here.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh

step() { printf '\n==> %s\n' "$*"; }

step "rustfmt"
cargo fmt --all -- --check
step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "tests (unit, model-based property tests, multi-threaded stress, allocation count)"
cargo test --workspace --locked
step "loom model check of the wake-up and hand-off path"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test --release --locked -p streamshard-core --test loom
step "benchmarks, once each in test mode"
cargo test --workspace --benches --locked
step "local Kafka broker for the integration tests"
. scripts/lib/broker.sh
step "Java: unit tests, the agent jar, integration tests on the broker with -javaagent"
mvn -B --no-transfer-progress verify
step "load tool end to end on the broker (produce, wait, verify)"
cargo test --locked -p streamshard-load --test broker
step "benchmark harness, quick mode: every engine and scenario runs and is verified; speed not asserted"
python3 -c 'import matplotlib' 2>/dev/null || pip3 install --quiet matplotlib
cargo build --locked -q -p streamshard-load
STREAMSHARD_LOAD=target/debug/streamshard-load python3 bench/run.py --quick --brokers "$STREAMSHARD_BOOTSTRAP"
step "scheduler demo, short run"
cargo run --release --locked -q -p streamshard-core --example demo -- 400 64 2
