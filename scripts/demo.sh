#!/usr/bin/env bash
# The demo: builds everything, starts a local Kafka broker, produces the input, and runs the
# enrichment app (examples/, plain Kafka Streams) stock and then with the streamshard agent, each
# in its own JVM on the same input; prints records/s for each and checks that both produced
# exactly the expected counts and totals per customer, in per-customer order.
# Arguments: [records (600000; stock gets a hundredth)] [remote-call-ms (5)] [workers (64)]. The app
# runs with Kafka Streams' default 30 s commit interval; rates are steady-state rates (10% to 90%
# of the output).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh
# The agent with this machine's native library only (the test suite and the release build all six),
# and the example app; nothing else of the build.
echo "==> building the agent and the example app (cargo + Maven)"
mvn -B -q --no-transfer-progress -pl java-shim,examples package -DskipTests -Dnative.platforms=host
echo "==> starting a local Kafka broker"
. scripts/lib/broker.sh
echo "==> running the demo"
cp="examples/target/streamshard-examples-0.1.0-SNAPSHOT.jar:$(cat examples/target/classpath.txt)"
java -Dorg.slf4j.simpleLogger.defaultLogLevel=error -cp "$cp" io.streamshard.examples.Demo \
  "$STREAMSHARD_BOOTSTRAP" "$PWD/java-shim/target/streamshard-agent-0.1.0-SNAPSHOT.jar" "${1:-600000}" "${2:-5}" "${3:-64}" |
  grep -vE '^\s+[a-z.]+ = |Config values:|^$'
