#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit + property + stress tests, and one pass of every
# benchmark in test mode (so the harness cannot rot). Speed is never asserted here.
#
#   bash scripts/test.sh               everything (CI runs this)
#   bash scripts/test.sh --fast        the inner loop, no broker (a few minutes): rustfmt, clippy,
#                                      the Rust tests, the Java unit tests on this platform's library
#   bash scripts/test.sh --kafka 4.1.2 the Java unit and integration tests on that Kafka Streams only
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh
. scripts/lib/stages.sh

# The integration tests that run again on the oldest and newest supported Kafka Streams (of the
# coverage matrix, the foreign-key join cases only: MATRIX_CASES).
VERSION_ITS="ParallelIT,CachedStoreIT,CrashIT,EosSerialRegionIT,ForeignKeyJoinIT,CoverageMatrixIT,ErrorsIT,BadInputIT,InteractiveQueriesIT,PunctuatorIT,RebalanceIT,RetryIT,DeadLetterQueueIT,RevivalIT,StockSettingsIT,StockMetricsIT,StreamShardMetricsIT,StatusIT,TwoLoadersIT"
OTHER_VERSIONS="3.9.2 4.4.0"
MATRIX_CASES="c10,c14,c15"

its_on() { # its_on VERSION [ITS]: the agent built once, the examples and ITs on that Kafka Streams
  local v="$1" its="${2:-}"
  step "Java: integration tests on Kafka Streams $v${its:+ ($its)}"
  mvn -B --no-transfer-progress -pl java-shim,examples verify -Dstreams.version="$v" \
    -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dmatrix.cases="$MATRIX_CASES" ${its:+-Dit.test="$its"}
}

if [ "${1:-}" = "--kafka" ]; then
  [ -n "${2:-}" ] || { echo "usage: scripts/test.sh --kafka VERSION" >&2; exit 2; }
  step "local Kafka broker for the integration tests"
  . scripts/lib/broker.sh
  . scripts/lib/browser.sh
  step "Java: unit tests, the agent jar, every integration test on Kafka Streams $2"
  exec mvn -B --no-transfer-progress -pl java-shim,examples verify -Dstreams.version="$2"
fi

step "rustfmt"
cargo fmt --all -- --check
step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "tests (unit, model-based property tests, multi-threaded stress, allocation count)"
cargo test --workspace --locked
if [ "${1:-}" = "--fast" ]; then
  step "Java: unit tests (the native library for this platform only; no broker)"
  exec mvn -B -q --no-transfer-progress -pl java-shim test -Dnative.platforms=host
fi
step "loom model check of the wake-up and hand-off path"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test --release --locked -p streamshard-core --test loom
step "cargo deny: licences, security advisories, duplicate crates, crate sources"
bash scripts/deny.sh
step "benchmarks, once each in test mode"
cargo test --workspace --benches --locked
step "local Kafka broker for the integration tests"
. scripts/lib/broker.sh
step "Chromium for the status page test"
. scripts/lib/browser.sh
step "Java: unit tests, the agent jar, integration tests on the broker with -javaagent"
mvn -B --no-transfer-progress verify
step "the jar's other platforms: linux-aarch64 in an emulated aarch64 JVM, the musl builds under musl's loader"
bash tests/platforms/smoke.sh
for v in $OTHER_VERSIONS; do its_on "$v" "$VERSION_ITS"; done
# The dead-letter queue's first version (4.2): its parity with stock, and retries beside it.
its_on 4.2.2 "RetryIT,DeadLetterQueueIT"
step "the jars again on the default Kafka Streams, for the benchmark and the torture test"
mvn -B -q --no-transfer-progress -pl java-shim,examples,bench/apps package -DskipTests
step "Kafka Streams' own integration tests (conformance/ci-classes.txt) under the agent, hand-off forced on"
bash scripts/conformance.sh --no-build --subset conformance/ci-classes.txt --rerun 1
step "load tool end to end on the broker (produce, wait, verify)"
cargo test --locked -p streamshard-load --test broker
step "benchmark harness, quick mode: every engine and scenario runs and is verified; speed not asserted"
python3 -c 'import matplotlib' 2>/dev/null || pip3 install --quiet matplotlib
cargo build --locked -q -p streamshard-load
STREAMSHARD_LOAD=target/debug/streamshard-load python3 bench/run.py --quick --brokers "$STREAMSHARD_BOOTSTRAP"
step "torture test, short form: overlapping faults under load, every check must pass"
STREAMSHARD_LOAD=target/debug/streamshard-load bash scripts/torture.sh --short --no-build --guarantee alos --protocol classic
STREAMSHARD_LOAD=target/debug/streamshard-load bash scripts/torture.sh --short --no-build --guarantee eos --protocol streams
step "release build: the jar with its notices, its SHA-256, the CycloneDX SBOM (dist/)"
bash scripts/release.sh --no-build
step "scheduler demo, short run"
cargo run --release --locked -q -p streamshard-core --example demo -- 400 64 2
