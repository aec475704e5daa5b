#!/usr/bin/env bash
# The torture test: three instances with the agent under overlapping faults (kill -9, rolling
# restart, an instance joining and leaving, a stream thread removed and re-added, the broker
# stopped and resumed (under exactly-once with the apps paused for the stop), unpaced bursts),
# then a strict verification of the output by the Rust load tool. It starts and stops its own
# broker (on TORTURE_BROKER_PORT, default 19292).
#
#   bash scripts/torture.sh [--minutes N] [--guarantee alos|eos] [--protocol classic|streams|both]
#                           [--seed S] [--short] [--report-dir DIR] [--no-build]
#
# --minutes is the input time of the guarantee, split between the two rebalance protocols
# (default 20). --short is CI's form: 2 minutes, fewer and shorter faults. Reports go to
# target/torture/ unless --report-dir is given (the long runs: docs/reliability/).
# Exit 0 only if every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh

build=1
args=()
while (($# > 0)); do
  case "$1" in
    --no-build) build=0 ;;
    --short) args+=(--minutes 2 --fault-gap 14 --burst 6000 --broker-down-max 8
      --faults kill-9,thread-churn,burst,broker-restart,join-leave) ;;
    *) args+=("$1") ;;
  esac
  shift
done

if ((build)); then
  printf '\n== build: the load tool, the agent jar, the benchmark apps\n'
  cargo build --release --locked -q -p streamshard-load
  mvn -B -q --no-transfer-progress package -DskipTests
fi
python3 -c 'import matplotlib' 2>/dev/null || pip3 install --quiet matplotlib || echo 'torture.sh: no matplotlib: reports without the chart' >&2

# The JVMs start from a copy, so a rebuild during a long run cannot change what they run.
copy="${TMPDIR:-/tmp}/streamshard-torture-jars.$$"
rm -rf "$copy" && mkdir -p "$copy"
trap 'rm -rf "$copy"' EXIT
cp java-shim/target/streamshard-agent-0.1.0-SNAPSHOT.jar "$copy/agent.jar"
cp bench/apps/target/streamshard-bench-apps-0.1.0-SNAPSHOT.jar "$copy/apps.jar"
cp examples/target/streamshard-examples-0.1.0-SNAPSHOT.jar "$copy/examples.jar"
# The examples jar from the copy too (classpath.txt names the one in examples/target).
classpath="$copy/apps.jar:$copy/examples.jar:$(tr ':' '\n' <bench/apps/target/classpath.txt | grep -v '/examples/target/' | paste -sd:)"

python3 bench/torture.py --agent "$copy/agent.jar" --classpath "$classpath" \
  --broker-port "${TORTURE_BROKER_PORT:-19292}" "${args[@]}"
