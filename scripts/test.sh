#!/usr/bin/env bash
# The test suite: formatting, lints, unit + property + stress tests, the integration tests on a
# real broker with -javaagent, the other platforms, Kafka's own integration tests under the agent,
# and one pass of every benchmark in test mode (so the harness cannot rot). Speed is never
# asserted here. Every run ends with a table of its stages and their seconds.
#
#   bash scripts/test.sh               CI's run (.ci/run), about 33 minutes here: every guarantee on
#                                      the default Kafka Streams (4.3.1), the tests that exercise
#                                      each version's own hooks on the oldest and newest, a subset
#                                      of Kafka's own integration tests, the short torture test
#   bash scripts/test.sh --full        everything there is: every integration test on every other
#                                      tested version, the whole of Kafka's integration tests under
#                                      the agent, both torture forms (120 minutes here; a failed
#                                      stage is marked and the rest still run; docs/testing.md says
#                                      when it must be run)
#   bash scripts/test.sh --fast        the inner loop, no broker (a few minutes): rustfmt, clippy,
#                                      the Rust tests, the Java unit tests on this platform's library
#   bash scripts/test.sh --kafka 4.1.2 the Java unit and integration tests on that Kafka Streams only
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh
. scripts/lib/stages.sh

mode=ci
case "${1:-}" in
  --full) mode=full ;;
  --fast) mode=fast ;;
  --kafka) mode=kafka ;;
  "") ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac

# The integration tests run in two JVMs at once (failsafe forks): most of their time is spent
# waiting on the broker, the slow steps and child JVMs, not on the two cores.
IT_FORKS="${IT_FORKS:-2}"
# Of the coverage matrix, the foreign-key join cases only on the other versions.
MATRIX_CASES="c10,c14,c15"
# On the oldest and the newest supported Kafka Streams, the tests of what differs between
# versions (each names the hooks and variants it covers; docs/testing.md, "Which tests run where"):
# the record path and the raw key bytes (ParallelIT; 3.9 and 4.0 read them through
# RecordDeserializer), failures and dirty closes (ErrorsIT, RevivalIT, RebalanceIT; before 4.1
# told apart by TaskManager's hooks), settings that stay stock (StockSettingsIT: 3.x exactly_once,
# 4.4 transactional stores), the terminal latency accumulator of 4.2 and 4.4 (StockMetricsIT),
# the FK join's memo (ForeignKeyJoinIT, CoverageMatrixIT's FK cases), punctuation (PunctuatorIT),
# the interactive-query iterator (InteractiveQueriesIT), OpenTelemetry's Java agent beside the agent
# (OpenTelemetryIT: its hooks on StreamTask and PartitionGroup differ by version); on 4.4 also the
# dead-letter queue, retries and the caching layer.
OLDEST=3.9.2
NEWEST=4.4.0
OLDEST_ITS="ParallelIT,ErrorsIT,RevivalIT,RebalanceIT,StockSettingsIT,StockMetricsIT,ForeignKeyJoinIT,CoverageMatrixIT,PunctuatorIT,InteractiveQueriesIT,OpenTelemetryIT"
NEWEST_ITS="$OLDEST_ITS,DeadLetterQueueIT,RetryIT,CachedStoreIT"
# Virtual-thread workers (streamshard.worker.threads=virtual, JDK 25): the invariants again, on
# the default Kafka Streams: per-key order and no lost record (ParallelIT), kill -9 and restart
# (CrashIT), exactly-once with a serial region (EosSerialRegionIT), rebalances and dirty closes
# (RebalanceIT), retries waiting on their key's lane (RetryIT), drains before punctuation
# (PunctuatorIT), workers=auto against a service with a capacity (AdaptiveWorkersIT: virtual
# workers held records mid-run and settled higher), commits that wait for no record, with and
# without a serial region, whose runner waits for the commit on a virtual thread (PrefixCommitIT).
VIRTUAL_ITS="ParallelIT,CrashIT,EosSerialRegionIT,RebalanceIT,RetryIT,PunctuatorIT,AdaptiveWorkersIT,PrefixCommitIT"
JDK25="${STREAMSHARD_JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}"
# --full: every integration test on every other tested version.
FULL_VERSIONS="3.9.2 4.0.2 4.1.2 4.2.2 4.4.0"

# In --full, a stage that fails marks itself FAILED in the table and the run goes on to the rest
# (hours of stages should not end at the first one); CI's run stops at the first failure.
guarded() { if [ "$mode" = full ]; then keep_going "$@"; else "$@"; fi; }

its_on() { # its_on VERSION [ITS]: the examples' integration tests on that Kafka Streams
  local v="$1" its="${2:-}"
  step "Java: integration tests on Kafka Streams $v${its:+ ($(tr -cd , <<<"$its" | wc -c | awk '{print $1 + 1}') classes)}"
  guarded mvn -B --no-transfer-progress -pl java-shim,examples verify -Dstreams.version="$v" -Dit.forks="$IT_FORKS" \
    -Dnative.platforms=host -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false ${its:+-Dmatrix.cases="$MATRIX_CASES" -Dit.test="$its"}
}

virtual_its() { # the VIRTUAL_ITS with virtual workers: the failsafe JVM and the apps it starts on JDK 25
  step "Java: integration tests with virtual-thread workers on JDK 25 ($(tr -cd , <<<"$VIRTUAL_ITS" | wc -c | awk '{print $1 + 1}') classes)"
  local log=target/virtual-its.log
  # JAVA_TOOL_OPTIONS reaches the child JVMs the crash and exactly-once tests start, too.
  JAVA_TOOL_OPTIONS="-Dstreamshard.worker.threads=virtual" mvn -B --no-transfer-progress -pl java-shim,examples \
    verify -Dit.forks="$IT_FORKS" -Dnative.platforms=host -Djvm="$JDK25/bin/java" -Dit.jvm.args=--enable-native-access=ALL-UNNAMED \
    -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test="$VIRTUAL_ITS" 2>&1 | tee "$log"
  # Proof that the tests ran what they were meant to: the instances said their workers are virtual.
  grep -q "virtual workers for" "$log" || { echo "virtual_its: no instance had virtual workers" >&2; return 1; }
  ! grep -q "platform workers for" "$log" || { echo "virtual_its: an instance had platform workers" >&2; return 1; }
}

if [ "$mode" = kafka ]; then
  [ -n "${2:-}" ] || { echo "usage: scripts/test.sh --kafka VERSION" >&2; exit 2; }
  step "local Kafka broker for the integration tests"
  . scripts/lib/broker.sh
  . scripts/lib/browser.sh
  step "Java: unit tests, the agent jar, every integration test on Kafka Streams $2"
  mvn -B --no-transfer-progress -pl java-shim,examples verify -Dstreams.version="$2" -Dit.forks="$IT_FORKS"
  exit 0
fi

step "rustfmt"
cargo fmt --all -- --check
step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "Rust tests (unit, model-based property tests, multi-threaded stress, allocation count)"
cargo test --workspace --locked
if [ "$mode" = fast ]; then
  step "Java: unit tests (the native library for this platform only; no broker)"
  mvn -B -q --no-transfer-progress -pl java-shim test -Dnative.platforms=host
  exit 0
fi
step "loom model check of the wake-up and hand-off path"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test --release --locked -p streamshard-core --test loom
step "benchmarks, once each in test mode"
cargo test --workspace --benches --locked
# cargo-deny, cargo-about and cargo-cyclonedx compile from source (minutes of CPU): in the
# background at the lowest priority, on what the integration tests leave idle while they wait on
# the broker and the slow steps; the supply-chain check and the release build wait for it.
mkdir -p target
nice -n 19 bash -c '. scripts/lib/cargo-tools.sh && install_cargo_tools' >target/cargo-tools.log 2>&1 &
TOOLS_PID=$!
on_exit "kill $TOOLS_PID 2>/dev/null"
tools_ready() {
  wait "$TOOLS_PID" || { cat target/cargo-tools.log >&2; echo "error: installing the cargo tools failed" >&2; return 1; }
}
step "cross-linking tools (Zig, cargo-zigbuild, the six Rust targets), for the native libraries"
. scripts/lib/cross.sh
# The five native libraries for the other platforms (release cross builds, minutes of CPU) build in
# the background as well, at the lowest priority, into a target directory of their own (two cargo
# builds in one would wait on each other's lock). Every integration test runs on this machine's
# library only; the jar gets the other five before its platform smoke test (cross_ready).
OTHER_PLATFORMS="linux-aarch64,linux-x86_64-musl,linux-aarch64-musl,macos-aarch64,macos-x86_64"
nice -n 19 env CARGO_TARGET_DIR=target/cross bash scripts/native.sh --platforms "$OTHER_PLATFORMS" \
  >target/cross-native.log 2>&1 &
CROSS_PID=$!
on_exit "kill $CROSS_PID 2>/dev/null"
cross_ready() {
  wait "$CROSS_PID" || { cat target/cross-native.log >&2; echo "error: the other platforms' native libraries failed to build" >&2; return 1; }
  cat target/cross-native.log
  cp -R target/cross/native/. target/native/
}
step "local Kafka broker for the integration tests"
. scripts/lib/broker.sh
step "Chromium for the status page test"
. scripts/lib/browser.sh
step "Java: this platform's native library, unit tests, the agent jar, integration tests on Kafka Streams 4.3.1"
mvn -B --no-transfer-progress verify -Dit.forks="$IT_FORKS" -Dnative.platforms=host
if [ "$mode" = full ]; then
  for v in $FULL_VERSIONS; do its_on "$v"; done
else
  its_on "$OLDEST" "$OLDEST_ITS"
  its_on "$NEWEST" "$NEWEST_ITS"
fi
guarded virtual_its
step "the jars again on the default Kafka Streams, every platform's native library in the agent jar"
cross_ready
mvn -B -q --no-transfer-progress -pl java-shim,examples,bench/apps package -DskipTests -Dnative.platforms=host
step "the jar's other platforms: linux-aarch64 in an emulated aarch64 JVM, the musl builds under musl's loader"
bash tests/platforms/smoke.sh
if [ "$mode" = full ]; then
  step "Kafka Streams' own integration tests, all of them, under the agent, hand-off forced on"
  guarded bash scripts/conformance.sh --no-build --rerun 1 --jobs 3
else
  step "Kafka Streams' own integration tests (conformance/ci-classes.txt) under the agent, hand-off forced on"
  bash scripts/conformance.sh --no-build --subset conformance/ci-classes.txt --rerun 1 --jobs 2
fi
step "cargo deny: licences, security advisories, duplicate crates, crate sources (after the tools' install)"
tools_ready
bash scripts/deny.sh
step "load tool end to end on the broker (produce, wait, verify)"
cargo test --locked -p streamshard-load --test broker
step "benchmark harness, quick mode: every engine and scenario runs and is verified; speed not asserted"
python3 -c 'import matplotlib' 2>/dev/null || pip3 install --quiet matplotlib
cargo build --locked -q -p streamshard-load
guarded env STREAMSHARD_LOAD=target/debug/streamshard-load python3 bench/run.py --quick --brokers "$STREAMSHARD_BOOTSTRAP"
if [ "$mode" = full ]; then
  step "torture test, short form, at-least-once, classic protocol: overlapping faults under load"
  guarded env STREAMSHARD_LOAD=target/debug/streamshard-load bash scripts/torture.sh --short --no-build --guarantee alos --protocol classic
fi
step "torture test, short form, exactly-once v2, streams protocol: overlapping faults under load"
guarded env STREAMSHARD_LOAD=target/debug/streamshard-load bash scripts/torture.sh --short --no-build --guarantee eos --protocol streams
if [ "$mode" = full ]; then
  step "torture test, short form, at-least-once, streams protocol, virtual-thread workers on JDK 25"
  guarded env STREAMSHARD_LOAD=target/debug/streamshard-load bash scripts/torture.sh --short --no-build --guarantee alos \
    --protocol streams --virtual-workers "$JDK25/bin/java" --report-dir target/torture-virtual
fi
step "release build: the jar with its notices, its SHA-256, the CycloneDX SBOM (dist/)"
bash scripts/release.sh --no-build
step "scheduler demo, short run"
cargo run --locked -q -p streamshard-core --example demo -- 400 64 2
