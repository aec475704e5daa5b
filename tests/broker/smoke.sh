#!/usr/bin/env bash
# Smoke test of the local Kafka broker tooling: start a broker on a non-default port, create
# topics, round-trip records through the console tools and through a Java client (as a consumer
# group), run committed and aborted transactions, stop it. Prints "N passed, N failed" at the end;
# exits 1 if any check failed.
#
# Env: SMOKE_BROKER_PORT (default 19092; the controller uses the next port), SMOKE_BROKER_DIR
# (default /tmp/streamshard-broker-smoke-<port>), plus KAFKA_VERSION / BROKER_CACHE / ... as for
# broker.sh. An outer BROKER_PORT / BROKER_DIR (a developer's own broker) is deliberately ignored.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BROKER="$HERE/broker.sh"
export BROKER_PORT="${SMOKE_BROKER_PORT:-19092}"
export BROKER_DIR="${SMOKE_BROKER_DIR:-/tmp/streamshard-broker-smoke-$BROKER_PORT}"
BOOTSTRAP="127.0.0.1:$BROKER_PORT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/streamshard-smoke.XXXXXX")"

passed=0
failed=0
started=""

pass() {
  passed=$((passed + 1))
  printf 'ok   %s\n' "$*"
}
fail() {
  failed=$((failed + 1))
  printf 'FAIL %s\n' "$*" >&2
}
# Every step runs as a background child + wait, so an interrupt is handled at once and the child
# is ended too (an orphaned client would go on retrying against the next broker on this port).
child=""
lock_fd=""
# run [--stdin FILE] CMD...: stdin is /dev/null unless given (CI may have none at all).
run() {
  local rc=0 input=/dev/null
  if [[ "$1" == --stdin ]]; then
    input="$2"
    shift 2
  fi
  "$@" <"$input" {lock_fd}>&- &
  child=$!
  wait "$child" || rc=$?
  child=""
  return "$rc"
}
tool() { run bash "$BROKER" tool "$@"; }

# shellcheck disable=SC2317 # run by the traps
cleanup() {
  local rc=$?
  if [[ -n "$child" ]]; then
    kill "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  if [[ -n "$started" ]]; then
    bash "$BROKER" stop >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
# A step's output is redirected to a file; these messages go to the script's own stderr.
exec {err_fd}>&2
trap 'echo "smoke: interrupted" >&"$err_fd"; exit 130' INT
trap 'echo "smoke: terminated" >&"$err_fd"; exit 143' TERM

finish() {
  echo
  echo "$passed passed, $failed failed"
  if ((failed > 0)); then
    echo "smoke: FAILED (broker logs: $BROKER_DIR/logs)" >&2
    exit 1
  fi
  exit 0
}

echo "== Kafka ${KAFKA_VERSION:-4.3.2} smoke test on $BOOTSTRAP (dir $BROKER_DIR)"

# Two runs on one port would stop each other's broker: the second one fails at once instead.
exec {lock_fd}>"$BROKER_DIR.lock"
if ! flock -n "$lock_fd"; then
  fail "another smoke.sh is using port $BROKER_PORT ($BROKER_DIR.lock); set SMOKE_BROKER_PORT"
  finish
fi

# A broker left over from an interrupted run of this script would be reused by `start`.
bash "$BROKER" stop >/dev/null

# 1. start: fetch if needed, format, launch, wait until a metadata request succeeds.
t0="${EPOCHREALTIME/./}"
started=1
if run bash "$BROKER" start >"$WORK/start.out" 2>&1; then
  t1="${EPOCHREALTIME/./}"
  cat "$WORK/start.out"
  pass "start: broker ready ($(((t1 - t0) / 1000)) ms including fetch check and format)"
else
  cat "$WORK/start.out" >&2
  fail "start: broker did not become ready"
  finish
fi

# 2. topics via the kafka-tools TopicCommand (fails if the name exists: the dir is fresh).
topic_ok=1
for t in smoke-console smoke-client; do
  if ! tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" --create \
    --topic "$t" --partitions 4 --replication-factor 1 >"$WORK/create-$t.out" 2>&1; then
    cat "$WORK/create-$t.out" >&2
    topic_ok=""
  fi
done
if [[ -n "$topic_ok" ]] &&
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" --describe \
    --topic smoke-console >"$WORK/describe.out" 2>&1 &&
  grep -q 'PartitionCount: 4' "$WORK/describe.out"; then
  pass "topics: created smoke-console and smoke-client with 4 partitions each (TopicCommand)"
else
  cat "$WORK/describe.out" >&2 2>/dev/null || true
  fail "topics: could not create / describe 4-partition topics"
fi

# 3. 100 keyed records through ConsoleProducer and back through ConsoleConsumer (flag names as
#    in Kafka 4.3.1's tools; 4.0's call them --property / --producer-property).
for i in $(seq 0 99); do echo "key-$((i % 10)):value-$i"; done >"$WORK/sent.txt"
if run --stdin "$WORK/sent.txt" bash "$BROKER" tool org.apache.kafka.tools.ConsoleProducer \
  --bootstrap-server "$BOOTSTRAP" --topic smoke-console --reader-property parse.key=true \
  --reader-property key.separator=: --command-property acks=all >"$WORK/produce.out" 2>&1 &&
  tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BOOTSTRAP" \
    --topic smoke-console --from-beginning --max-messages 100 --timeout-ms 30000 \
    --formatter-property print.key=true --formatter-property key.separator=: \
    >"$WORK/received.txt" 2>"$WORK/consume.err" &&
  diff <(sort "$WORK/sent.txt") <(sort "$WORK/received.txt") >"$WORK/console.diff"; then
  pass "console tools: 100 records produced and consumed back (ConsoleProducer / ConsoleConsumer)"
else
  cat "$WORK/produce.out" "$WORK/consume.err" "$WORK/console.diff" >&2 2>/dev/null || true
  fail "console tools: records sent and received differ"
fi

# 4. Java client: 100 records, consumed back by a consumer group with per-key order checked.
if tool BrokerCheck roundtrip "$BOOTSTRAP" smoke-client 4 100 >"$WORK/roundtrip.out" 2>&1; then
  pass "$(tail -n 1 "$WORK/roundtrip.out")"
else
  cat "$WORK/roundtrip.out" >&2
  fail "client roundtrip"
fi

# 5. Transactions: initTransactions, commit (with a group offset), abort, read_committed.
if tool BrokerCheck txn "$BOOTSTRAP" smoke-txn >"$WORK/txn.out" 2>&1; then
  pass "$(tail -n 1 "$WORK/txn.out")"
else
  cat "$WORK/txn.out" >&2
  fail "transactions"
fi

# 6. kill and resume: a crash (SIGKILL, no controlled shutdown), then the broker again on the
#    same data after log recovery: the 100 records of step 3 are still there.
pid="$(cat "$BROKER_DIR/broker.pid" 2>/dev/null || true)"
if bash "$BROKER" kill >"$WORK/kill.out" 2>&1 && [[ -n "$pid" ]] &&
  [[ -z "$(tr -d '\0' 2>/dev/null <"/proc/$pid/cmdline")" ]] &&
  run bash "$BROKER" resume >"$WORK/resume.out" 2>&1 &&
  tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BOOTSTRAP" \
    --topic smoke-console --from-beginning --max-messages 100 --timeout-ms 30000 \
    --formatter-property print.key=true --formatter-property key.separator=: \
    >"$WORK/received-after-kill.txt" 2>"$WORK/consume-after-kill.err" &&
  diff <(sort "$WORK/sent.txt") <(sort "$WORK/received-after-kill.txt") >/dev/null; then
  pass "kill and resume: SIGKILL, process gone, resumed on the same data, 100 records read back"
else
  cat "$WORK/kill.out" "$WORK/resume.out" "$WORK/consume-after-kill.err" >&2 2>/dev/null || true
  fail "kill and resume"
fi

# 7. stop: graceful, process gone, ports closed, status says so.
pid="$(cat "$BROKER_DIR/broker.pid" 2>/dev/null || true)"
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
why=""
if ! bash "$BROKER" stop; then
  why="broker.sh stop failed"
else
  started=""
  if [[ -n "$pid" && -n "$(tr -d '\0' 2>/dev/null <"/proc/$pid/cmdline")" ]]; then
    why="process $pid still alive"
  elif port_open "$BROKER_PORT" || port_open "$((BROKER_PORT + 1))"; then
    why="port $BROKER_PORT or $((BROKER_PORT + 1)) still accepting connections"
  elif bash "$BROKER" status >/dev/null; then
    why="broker.sh status still reports it running"
  fi
fi
if [[ -z "$why" ]]; then
  pass "stop: broker process gone, ports $BROKER_PORT and $((BROKER_PORT + 1)) closed"
else
  fail "stop: $why"
fi

finish
