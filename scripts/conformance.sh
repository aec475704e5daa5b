#!/usr/bin/env bash
# Kafka Streams' own integration tests, from the test jar Apache Kafka publishes on Maven Central
# (org.apache.kafka:kafka-streams-integration-tests:<version>:test; never copied into this repo),
# run with Surefire under -javaagent:streamshard.jar=inline.below.us=0 (every record of a
# streamshard task handed to the workers), and compared, test by test, with stock.
#
#   bash scripts/conformance.sh [--kafka V] [--tests V] [--classes PATTERN] [--subset FILE]
#                               [--stock | --stock-if-failed] [--resume] [--rerun N] [--no-build]
#                               [--jobs N] [--jar JAR] [--out DIR]
#
#   --kafka V        the Kafka Streams (and clients, and embedded broker) the tests run on (4.3.1)
#   --tests V        the version of the published test jar (4.3.1, the newest served here)
#   --classes P      test classes: comma-separated simple names, * as a wildcard (all)
#   --subset FILE    test classes listed in FILE, one per line (conformance/ci-classes.txt in CI)
#   --stock          run every class stock first too; without it, stock's results are the
#                    recorded ones, conformance/runs/<tests>-on-<kafka>/stock.tsv
#   --stock-if-failed  run a class stock only when a test of it failed with streamshard (after
#                    --rerun): half the time of --stock where nearly everything passes; a test
#                    that passes with streamshard needs no stock result to count as passed
#   --resume         skip classes that finished in the output directory before (a long run in
#                    pieces: --out conformance/runs/<tests>-on-<kafka> --stock --resume)
#   --rerun N        run a test that passes stock and failed with the agent up to N more times,
#                    each time in a new JVM (0); a pass after a failure is "flaky"
#   --jobs N         run N classes at a time, each in its own JVMs (1): the tests mostly wait on
#                    their embedded brokers, so two at once on two cores take little more than one
#   --jar JAR        the agent jar to run (default: java-shim's, built first unless --no-build)
#
# Writes --out (target/conformance/<kafka>): stock.tsv and streamshard.tsv (one row per test: result and
# how many records ran on the workers, in a serial region and inline during it), the Surefire
# reports of each mode, times.tsv, results.tsv (one row per test with its verdict) and summary.md.
# Exits 1 if a test that passes stock fails with streamshard and is not excluded by name, with
# its reason, in conformance/excluded.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

kafka=4.3.1 tests=4.3.1 classes="" subset="" stock=0 stock_if_failed=0 resume=0 rerun=0 jobs=1 build=1 out="" jar=""
while [ $# -gt 0 ]; do
  case "$1" in
    --kafka) kafka="$2"; shift 2 ;;
    --tests) tests="$2"; shift 2 ;;
    --classes) classes="$2"; shift 2 ;;
    --subset) subset="$2"; shift 2 ;;
    --stock) stock=1; shift ;;
    --stock-if-failed) stock_if_failed=1; shift ;;
    --resume) resume=1; shift ;;
    --rerun) rerun="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --out) out="$2"; shift 2 ;;
    --jar) jar="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; build=0; shift 2 ;;
    *) sed -n '2,32p' "$0" >&2; exit 2 ;;
  esac
done
out="${out:-target/conformance/$kafka}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [ "$resume" = 0 ]; then
  rm -rf "$out"/stock.tsv "$out"/streamshard.tsv "$out"/times.tsv "$out"/*-reports "$out"/*.log "$out"/parts
fi
. scripts/lib/toolchain.sh

jar="${jar:-$PWD/java-shim/target/streamshard-agent-0.1.0-SNAPSHOT.jar}"
if [ "$build" = 1 ] || [ ! -f "$jar" ]; then
  echo "==> the agent jar"
  mvn -B -q --no-transfer-progress -pl java-shim package -DskipTests
fi
# The forks run a copy: a build during a long run (the jar rewritten in place) would otherwise
# make a running JVM fail to load the agent's classes (ClassNotFoundException mid-test).
under_test="$out/agent-under-test.jar"
cp "$jar" "$under_test.tmp" && mv "$under_test.tmp" "$under_test"
jar="$under_test"

mvn_conf=(mvn -B -q --no-transfer-progress -f conformance/pom.xml -Dstreams.version="$kafka"
  -Dconformance.tests.version="$tests")
older() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }
if older "$tests" 4.4 && ! older "$kafka" 4.4; then
  mvn_conf+=(-Pcompat-4.4) # 4.4 moved a class the older test utilities call (conformance/src/compat-4.4)
fi
echo "==> Kafka's integration tests $tests (test jar) on Kafka $kafka: resolving"
"${mvn_conf[@]}" test-compile
testjar="$HOME/.m2/repository/org/apache/kafka/kafka-streams-integration-tests/$tests/kafka-streams-integration-tests-$tests-test.jar"

# Every concrete test class of the jar (Surefire skips abstract ones and finds the same list).
all=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$testjar" | sed -n 's#^org/apache/kafka/streams/integration/\([A-Za-z0-9]*Test\)\.class$#\1#p' | sort)
selected=$(ALL="$all" python3 - "$classes" "$subset" <<'PY'
import fnmatch, os, sys
pats = [p.strip() for p in sys.argv[1].split(",") if p.strip()]
if sys.argv[2]:
    pats += [l.split("#")[0].strip() for l in open(sys.argv[2]) if l.split("#")[0].strip()]
for c in os.environ["ALL"].split():
    if not pats or any(fnmatch.fnmatchcase(c, p) for p in pats):
        print(c)
PY
)
[ -n "$selected" ] || { echo "no test class matches '$classes$subset'" >&2; exit 2; }
n=$(wc -w <<<"$selected")

baseline="$PWD/conformance/runs/$tests-on-$kafka/stock.tsv"
if [ "$stock" = 1 ] && [ "$stock_if_failed" = 1 ]; then
  echo "--stock and --stock-if-failed: choose one" >&2
  exit 2
fi
if [ "$stock" = 0 ] && [ "$stock_if_failed" = 0 ] && [ ! -f "$baseline" ]; then
  echo "no recorded stock results for these tests on Kafka $kafka ($baseline): run with --stock" >&2
  exit 2
fi
{ [ "$stock" = 1 ] || [ "$stock_if_failed" = 1 ]; } && baseline=""
report() {
  python3 conformance/report.py "$out" --excluded conformance/excluded.tsv \
    ${baseline:+--baseline "$baseline"} --title "Kafka Streams $tests integration tests on Kafka $kafka" "$@"
}

# Each JVM writes its rows to a file of its own class (parts/MODE-CLASS.tsv); under a lock they
# replace that class's rows in MODE.tsv, so classes running at once never write the same file.
locked() { (flock 9 && "$@") 9>"$out/.lock"; }
merge() { # merge MODE CLASS: the class's rows in MODE.tsv become those of its part
  { grep -v "^$2	" "$out/$1.tsv" 2>/dev/null || true; cat "$out/parts/$1-$2.tsv" 2>/dev/null || true; } >"$out/$1.tsv.tmp"
  mv "$out/$1.tsv.tmp" "$out/$1.tsv"
}

run_class() { # run_class MODE CLASS
  local mode="$1" cls="$2" argline="" started rc part="$out/parts/$1-$2.tsv"
  if [ "$mode" = streamshard ]; then
    argline="-javaagent:$jar=inline.below.us=0"
  fi
  if [ "$resume" = 1 ] && grep -q "^$cls	$mode	" "$out/times.tsv" 2>/dev/null; then
    return 0 # finished in an earlier piece
  fi
  mkdir -p "$out/parts"
  rm -f "$part" # rows of a piece that did not finish
  started=$(date +%s)
  rc=0
  # Each run's Surefire boot files in a directory of its own: with --jobs, one run's clean-up
  # otherwise deleted the booter jar of another that was starting ("Unable to access jarfile").
  "${mvn_conf[@]}" test -Dtest="$cls" -Dsurefire.failIfNoSpecifiedTests=false -DtempDir="surefire-$mode-$cls" \
    -Dconformance.argLine="$argline" \
    -Dconformance.counts="$part" -Dconformance.reports="$out/$mode-reports" \
    >"$out/$mode-$cls.log" 2>&1 || rc=$?
  locked merge "$mode" "$cls"
  # Surefire's own rerun repeats a failed test in the same JVM, where the class's static embedded
  # cluster is already stopped ("Failed to start test Kafka cluster"); a new JVM for the failed
  # methods alone is what a flaky test needs.
  local attempt failed
  for ((attempt = 0; attempt < rerun; attempt++)); do
    [ "$mode" = streamshard ] || break
    failed=$(report --failed "$cls")
    [ -n "$failed" ] || break
    echo "   again, in a new JVM: $cls#$failed"
    "${mvn_conf[@]}" test -Dtest="$cls#$failed" -Dsurefire.failIfNoSpecifiedTests=false -DtempDir="surefire-$mode-$cls" \
      -Dconformance.argLine="$argline" \
      -Dconformance.counts="$part" -Dconformance.reports="$out/$mode-reports-rerun" \
      >>"$out/$mode-$cls.log" 2>&1 || true
    locked merge "$mode" "$cls"
  done
  if [ "$rc" != 0 ] && ! grep -q "^$cls	" "$part" 2>/dev/null; then
    echo "   $mode $cls: no test ran (see $out/$mode-$cls.log)"
    printf '%s\t(class)\tFAILED\t-\t-\t-\tno test ran: fork died or timed out (exit %s)\n' "$cls" "$rc" >>"$part"
    locked merge "$mode" "$cls"
  fi
  locked printf '%s\t%s\t%s\t%s\n' "$cls" "$mode" "$(( $(date +%s) - started ))" "$rc" >>"$out/times.tsv"
}

one_class() { # one_class CLASS: its runs in the chosen modes, then the report so far
  local cls="$1"
  if [ "$stock" = 1 ]; then run_class stock "$cls"; fi
  run_class streamshard "$cls"
  if [ "$stock_if_failed" = 1 ] && { [ -n "$(report --failed "$cls")" ] ||
    grep -q "^$cls	(class)	" "$out/streamshard.tsv" 2>/dev/null; }; then
    echo "   failed with streamshard: the class stock too"
    run_class stock "$cls"
  fi
  locked report >/dev/null || true
}

i=0
for cls in $selected; do
  i=$((i + 1))
  echo "==> [$i/$n] $cls"
  if [ "$jobs" -le 1 ]; then
    one_class "$cls"
    continue
  fi
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  one_class "$cls" &
done
wait || true
echo "==> results: $out/results.tsv, $out/summary.md"
report
