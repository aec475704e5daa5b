#!/usr/bin/env bash
# A local single-node Apache Kafka broker (KRaft, broker + controller in one JVM, loopback only)
# for integration tests, the demo and CI. The broker's jars come from Maven Central via pom.xml.
#
#   broker.sh fetch             resolve the jars once (fast no-op when cached)
#   broker.sh start             fetch if needed, wipe and format BROKER_DIR, start, wait until ready
#   broker.sh stop              graceful stop (SIGTERM), SIGKILL after BROKER_STOP_TIMEOUT; idempotent
#   broker.sh kill              crash it (SIGKILL, no controlled shutdown); idempotent; data kept
#   broker.sh freeze | thaw     SIGSTOP / SIGCONT: unresponsive, then back, with no restart
#   broker.sh resume            start again on the data of the last start (no wipe): a broker restart
#   broker.sh status            exit 0 if running and accepting connections, 3 if not
#   broker.sh logs [-f] [N]     last N lines (default 100) of the broker log; -f follows it
#   broker.sh bootstrap         print the bootstrap address (127.0.0.1:BROKER_PORT)
#   broker.sh classpath         print the classpath of the fetched jars ('<lib>/*')
#   broker.sh tool CLASS ARGS   run a main class from the jars, e.g.
#                               broker.sh tool org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 --list
#
# Settings (environment): see README.md next to this file.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

KAFKA_VERSION="${KAFKA_VERSION:-4.3.2}"
BROKER_PORT="${BROKER_PORT:-9092}"
if ! [[ "$BROKER_PORT" =~ ^[0-9]+$ ]] || ((BROKER_PORT < 1024 || BROKER_PORT > 65534)); then
  echo "broker.sh: BROKER_PORT must be a number in 1024..65534, got '$BROKER_PORT'" >&2
  exit 2
fi
CONTROLLER_PORT=$((BROKER_PORT + 1))
BROKER_DIR="${BROKER_DIR:-/tmp/streamshard-broker-$BROKER_PORT}"
BROKER_CACHE="${BROKER_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/streamshard}"
BROKER_HEAP="${BROKER_HEAP:-512m}"
BROKER_START_TIMEOUT="${BROKER_START_TIMEOUT:-90}"
BROKER_STOP_TIMEOUT="${BROKER_STOP_TIMEOUT:-30}"
BROKER_EXTRA_PROPS="${BROKER_EXTRA_PROPS:-}"
BROKER_JAVA_OPTS="${BROKER_JAVA_OPTS:-}"
BROKER_CDS="${BROKER_CDS:-1}"
MVN="${MVN:-mvn}"

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
  JAVA="${JAVA:-$JAVA_HOME/bin/java}"
  JAVAC="${JAVAC:-$JAVA_HOME/bin/javac}"
else
  JAVA="${JAVA:-java}"
  JAVAC="${JAVAC:-javac}"
fi

BOOTSTRAP="127.0.0.1:$BROKER_PORT"
KAFKA_CACHE="$BROKER_CACHE/kafka-$KAFKA_VERSION"
LIB="$KAFKA_CACHE/lib"
PROPS="$BROKER_DIR/server.properties"
PIDFILE="$BROKER_DIR/broker.pid"
LOGDIR="$BROKER_DIR/logs"
SERVER_LOG="$LOGDIR/server.log"
MARKER="$BROKER_DIR/.streamshard-broker"
# Short-lived JVMs (formatter, tools, BrokerCheck): small heap, quick start, quiet logging.
TOOL_JVM=(-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$HERE/log4j2-tools.xml")
# Every JVM: no class-data-sharing chatter (a missing or stale archive is silently not used).
CDS_QUIET=(-Xlog:cds=off -Xlog:cds+dynamic=off)

say() { printf 'broker.sh: %s\n' "$*"; }
warn() { printf 'broker.sh: %s\n' "$*" >&2; }
die() {
  warn "ERROR: $*"
  exit 1
}
now_ms() { local t="${EPOCHREALTIME/./}"; echo $((t / 1000)); }
secs_since() { # $1 = start in ms -> "12.3"
  local d=$(($(now_ms) - $1))
  printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100))
}
sha() { sha256sum <"$1" | cut -c1-16; }

# ---------------------------------------------------------------------------------------------
# fetch: jars into $LIB (keyed by pom.xml's content), BrokerCheck compiled into $CHECK_DIR
# ---------------------------------------------------------------------------------------------
LIB_STAMP="$(sha "$HERE/pom.xml")"
CHECK_DIR="$KAFKA_CACHE/check-$(sha "$HERE/BrokerCheck.java")"

lib_ok() { [[ -f "$LIB/.complete" && "$(<"$LIB/.complete")" == "$LIB_STAMP" ]]; }
check_ok() { [[ -f "$CHECK_DIR/BrokerCheck.class" ]]; }

fetch() {
  if lib_ok && check_ok; then
    return 0
  fi
  mkdir -p "$KAFKA_CACHE"
  local lock_fd
  exec {lock_fd}>"$KAFKA_CACHE/.lock"
  flock -w 900 "$lock_fd" || die "could not lock $KAFKA_CACHE/.lock within 900 s"
  if ! lib_ok; then
    command -v "$MVN" >/dev/null || die "'$MVN' not found: Maven is needed to fetch the Kafka jars"
    local tmp="$KAFKA_CACHE/lib.tmp.$$" log="$KAFKA_CACHE/fetch.log" t0
    t0="$(now_ms)"
    rm -rf "$tmp"
    warn "fetching Kafka $KAFKA_VERSION jars from Maven Central into $LIB (once) ..."
    if ! "$MVN" -B -q -f "$HERE/pom.xml" "-Dkafka.version=$KAFKA_VERSION" "-Dbroker.lib.dir=$tmp" \
      dependency:copy-dependencies >"$log" 2>&1; then
      tail -n 40 "$log" >&2 || true
      rm -rf "$tmp"
      die "Maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION (full log: $log)"
    fi
    [[ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" && -f "$tmp/kafka-clients-$KAFKA_VERSION.jar" ]] ||
      die "Maven finished but $tmp lacks kafka_2.13-$KAFKA_VERSION.jar (log: $log)"
    echo "$LIB_STAMP" >"$tmp/.complete"
    rm -rf "$LIB"
    mv "$tmp" "$LIB"
    warn "fetched $(find "$LIB" -name '*.jar' | wc -l) jars ($(du -sh "$LIB" | cut -f1)) in $(secs_since "$t0") s"
  fi
  if ! check_ok; then
    command -v "$JAVAC" >/dev/null || die "'$JAVAC' not found: a JDK (not just a JRE) is needed"
    local tmp="$CHECK_DIR.tmp.$$"
    rm -rf "$KAFKA_CACHE"/check-* # builds of older BrokerCheck.java versions
    "$JAVAC" -nowarn -d "$tmp" -cp "$LIB/*" "$HERE/BrokerCheck.java" ||
      die "could not compile $HERE/BrokerCheck.java"
    mv "$tmp" "$CHECK_DIR"
  fi
  exec {lock_fd}>&-
}

# ---------------------------------------------------------------------------------------------
# Class-data sharing. Loading and verifying the broker's classes (~7,800 at ready) is most of
# its start-up CPU. The first broker started without an archive runs with
# -XX:ArchiveClassesAtExit and `stop` installs the archive it writes on exit (a one-off 3-5 s
# longer stop); later brokers and tool JVMs map it, which halves the broker's start-up CPU.
# The archive lives in $LIB/.cds (so a re-fetch drops it) and is named after the JVM build (an
# archive only fits the JVM that wrote it). BROKER_CDS=0 turns all of this off.
# ---------------------------------------------------------------------------------------------
CDS_ARCHIVE=""
CDS_USE=()
cds_setup() {
  local id
  CDS_USE=()
  CDS_ARCHIVE=""
  [[ "$BROKER_CDS" == 1 ]] || return 0
  # -Xshare:on fails when this JVM has no base CDS archive: then there is no dynamic one either.
  id="$("$JAVA" -Xshare:on -version 2>&1)" || return 0
  CDS_ARCHIVE="$LIB/.cds/broker-$(printf '%s' "$id" | sha256sum | cut -c1-16).jsa"
  if [[ -s "$CDS_ARCHIVE" ]]; then
    CDS_USE=("-XX:SharedArchiveFile=$CDS_ARCHIVE")
  fi
}

# After a graceful stop: move the archive the broker wrote on exit into the cache.
cds_install() {
  local pending="$BROKER_DIR/cds.pending" dumped="$BROKER_DIR/cds.jsa" dest tmp
  if [[ -f "$pending" && -s "$dumped" ]]; then
    dest="$(<"$pending")"
    tmp="$dest.tmp.$$"
    mkdir -p "$(dirname "$dest")"
    if cp "$dumped" "$tmp" && mv -f "$tmp" "$dest"; then
      say "saved a class-data-sharing archive for faster starts: $dest"
    else
      rm -f "$tmp"
    fi
  fi
  rm -f "$pending" "$dumped"
}

# ---------------------------------------------------------------------------------------------
# process helpers
# ---------------------------------------------------------------------------------------------
# Prints the broker's pid if the pid file names a live JVM running kafka.Kafka on *this* BROKER_DIR
# (so a stale pid file or a recycled pid never gets signalled).
broker_pid() {
  [[ -f "$PIDFILE" ]] || return 1
  local pid cmd
  pid="$(<"$PIDFILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 1
  [[ "$cmd" == *kafka.Kafka*"$PROPS"* ]] || return 1
  echo "$pid"
}

# The one-letter state of process $1 (R, S, T, Z, ...), from /proc; fails if there is none.
proc_state() { sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null; }

# True while $1 is a live process (a zombie's cmdline is empty; procfs files all report size 0,
# so the content is read rather than tested with -s).
# Alive = the process exists and is not a zombie. (Reading /proc/PID/cmdline was seen to come back
# empty for a live process under load, around its exec, and a start was wrongly reported failed.)
alive() {
  local st
  st=$(proc_state "$1") || return 1
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

show_log_tail() {
  local f
  for f in "$LOGDIR/stdout.log" "$SERVER_LOG"; do
    if [[ -s "$f" ]]; then
      warn "----- last 40 lines of $f -----"
      tail -n 40 "$f" >&2
    fi
  done
  warn "----- (full logs in $LOGDIR) -----"
}

# SIGTERM, wait up to $2 s, then SIGKILL. Returns 0 after a graceful exit, 2 if it was killed.
terminate() {
  local pid="$1" timeout="$2" i
  kill -CONT "$pid" 2>/dev/null || true # a frozen broker runs its shutdown only once thawed
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < timeout * 10; i++)); do
    alive "$pid" || return 0
    sleep 0.1
  done
  warn "broker (pid $pid) did not stop within $timeout s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || return 2
  for ((i = 0; i < 100; i++)); do
    alive "$pid" || return 2
    sleep 0.1
  done
  die "broker (pid $pid) survived SIGKILL"
}

# ---------------------------------------------------------------------------------------------
# start
# ---------------------------------------------------------------------------------------------
write_properties() {
  cat >"$PROPS" <<EOF
# Written by tests/broker/broker.sh: single-node KRaft (combined broker + controller), loopback only.
# A single-voter dynamic quorum, formatted with kafka-storage format --standalone.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$BROKER_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$BROKER_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$BROKER_DIR/data

# Topics: tests create their own (auto-creation off, so a misspelt topic fails loudly).
auto.create.topics.enable=false
num.partitions=4
default.replication.factor=1
min.insync.replicas=1

# Internal topics on one broker: replication factor 1, min ISR 1 (exactly-once needs these),
# fewer partitions than the default 50 so the first group / transaction starts quickly.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=8

# No waiting for more members before the first rebalance.
group.initial.rebalance.delay.ms=0

# The streams rebalance protocol (KIP-1071) keeps the session on the broker: a short one, so a
# test's killed member leaves the group in seconds (as main.consumer.session.timeout.ms does for
# the classic protocol).
group.streams.min.session.timeout.ms=6000
group.streams.session.timeout.ms=6000
group.streams.min.heartbeat.interval.ms=1000
group.streams.heartbeat.interval.ms=1000

# Time-based retention (7 days) checked every 5 s instead of 5 min: a test that produces records
# stamped more than a week ago loses them at once, every run, instead of once in a while.
log.retention.check.interval.ms=5000

# A 2-core CI machine: fewer threads than the defaults.
num.network.threads=2
num.io.threads=4
background.threads=4
num.recovery.threads.per.data.dir=1
EOF
  if [[ -n "$BROKER_EXTRA_PROPS" ]]; then
    printf '\n# BROKER_EXTRA_PROPS (later keys win)\n%s\n' "$BROKER_EXTRA_PROPS" >>"$PROPS"
  fi
}

fresh_dir() {
  if [[ -e "$BROKER_DIR" ]]; then
    if [[ -f "$MARKER" || -z "$(ls -A "$BROKER_DIR" 2>/dev/null)" ]]; then
      rm -rf "$BROKER_DIR"
    else
      die "BROKER_DIR=$BROKER_DIR exists and was not made by broker.sh; refusing to wipe it"
    fi
  fi
  mkdir -p "$BROKER_DIR/data" "$LOGDIR"
  echo "made by tests/broker/broker.sh; wiped on every start" >"$MARKER"
}

# 22-character URL-safe base64 of 16 random bytes: the format Kafka's Uuid.fromString accepts.
# Like Kafka's Uuid.randomUuid(), never one starting with '-' (the formatter would read it as a flag).
cluster_id() {
  local id="-"
  while [[ "$id" == -* ]]; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
  done
  echo "$id"
}

READY_CHECKER=""
abort_start() {
  local pid
  if [[ -n "$READY_CHECKER" ]]; then
    kill "$READY_CHECKER" 2>/dev/null || true
  fi
  if pid="$(broker_pid)"; then
    terminate "$pid" 5 || true
    rm -f "$PIDFILE" "$BROKER_DIR/cds.pending" "$BROKER_DIR/cds.jsa"
  fi
}

# Succeeds (once ready) if the broker of BROKER_DIR is running already.
running_already() {
  local pid
  pid="$(broker_pid)" || return 1
  say "already running (pid $pid) on $BOOTSTRAP, dir $BROKER_DIR"
  wait_ready "$pid" "$(now_ms)"
}

start() {
  fetch
  if running_already; then
    return 0
  fi
  local p pid
  for p in "$BROKER_PORT" "$CONTROLLER_PORT"; do
    if port_open "$p"; then
      die "port $p on 127.0.0.1 is already in use by another process (not a broker of BROKER_DIR=$BROKER_DIR); pick another BROKER_PORT"
    fi
  done

  local t0
  t0="$(now_ms)"
  cds_setup
  fresh_dir
  write_properties
  local cid
  cid="$(cluster_id)"
  if ! "$JAVA" "${TOOL_JVM[@]}" "${CDS_QUIET[@]}" "${CDS_USE[@]}" -cp "$LIB/*" kafka.tools.StorageTool format \
    --cluster-id "$cid" --config "$PROPS" --standalone >"$LOGDIR/format.log" 2>&1; then
    cat "$LOGDIR/format.log" >&2
    die "formatting the KRaft storage in $BROKER_DIR/data failed"
  fi
  launch "$t0"
}

# Starts the broker JVM on the formatted BROKER_DIR and waits until it is ready.
launch() {
  local t0="$1" pid cds_broker=()
  if ((${#CDS_USE[@]} > 0)); then
    cds_broker=("${CDS_USE[@]}")
  elif [[ -n "$CDS_ARCHIVE" ]]; then
    cds_broker=("-XX:ArchiveClassesAtExit=$BROKER_DIR/cds.jsa")
    echo "$CDS_ARCHIVE" >"$BROKER_DIR/cds.pending"
  fi
  trap 'abort_start; exit 130' INT TERM
  # setsid: the broker outlives this script and is not hit by the caller's Ctrl-C.
  # shellcheck disable=SC2086 # BROKER_JAVA_OPTS is a space-separated list of JVM options
  setsid "$JAVA" "-Xmx$BROKER_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -XX:+ExitOnOutOfMemoryError \
    "-XX:ErrorFile=$LOGDIR/hs_err_%p.log" -Djava.awt.headless=true \
    "-Dkafka.logs.dir=$LOGDIR" "-Dlog4j2.configurationFile=$HERE/log4j2-broker.xml" \
    "${CDS_QUIET[@]}" "${cds_broker[@]}" $BROKER_JAVA_OPTS -cp "$LIB/*" kafka.Kafka "$PROPS" \
    </dev/null >"$LOGDIR/stdout.log" 2>&1 &
  pid=$!
  echo "$pid" >"$PIDFILE"
  wait_ready "$pid" "$t0"
  trap - INT TERM
  warn_unknown_keys
  say "ready on $BOOTSTRAP in $(secs_since "$t0") s (pid $pid, Kafka $KAFKA_VERSION, dir $BROKER_DIR)"
}

# A restart after `stop`: same properties, same data (topics, offsets, transactions), no wipe.
resume() {
  fetch
  if running_already; then
    return 0
  fi
  [[ -f "$MARKER" && -f "$PROPS" && -d "$BROKER_DIR/data" ]] ||
    die "nothing to resume in $BROKER_DIR: run 'broker.sh start' first"
  local t0
  t0="$(now_ms)"
  cds_setup
  launch "$t0"
}

# Kafka logs its effective configuration ("KafkaConfig values:", one "<TAB>key = value" line per
# known key) but says nothing about keys it does not know: flag any key of server.properties
# missing from that dump (a typo, or a setting this KAFKA_VERSION does not have).
warn_unknown_keys() {
  local key unknown=()
  grep -q 'KafkaConfig values' "$SERVER_LOG" 2>/dev/null || return 0
  while IFS='=' read -r key _; do
    [[ -z "$key" || "$key" == \#* ]] && continue
    grep -qF "$(printf '\t%s = ' "$key")" "$SERVER_LOG" || unknown+=("$key")
  done <"$PROPS"
  if ((${#unknown[@]} > 0)); then
    warn "warning: Kafka $KAFKA_VERSION does not know these settings of $PROPS: ${unknown[*]}"
  fi
}

# Waits until the port accepts connections, then until a metadata request (DescribeCluster) lists
# the broker as live. (Starting the metadata check's JVM before the port opens was tried: on two
# cores it competes with the booting broker and makes the whole start slower.) The broker is
# watched throughout, so one that dies fails the start at once.
wait_ready() {
  local pid="$1" t0="$2" deadline rc=0 left
  deadline=$((t0 + BROKER_START_TIMEOUT * 1000))
  until port_open "$BROKER_PORT"; do
    if ! alive "$pid"; then
      show_log_tail
      rm -f "$PIDFILE"
      die "the broker process exited during startup (see the logs above)"
    fi
    if (($(now_ms) > deadline)); then
      show_log_tail
      abort_start
      die "the broker did not open $BOOTSTRAP within $BROKER_START_TIMEOUT s (BROKER_START_TIMEOUT)"
    fi
    sleep 0.1
  done
  left=$((deadline - $(now_ms)))
  ((left > 1000)) || left=1000
  "$JAVA" "${TOOL_JVM[@]}" "${CDS_QUIET[@]}" "${CDS_USE[@]}" -cp "$LIB/*:$CHECK_DIR" \
    BrokerCheck ready "$BOOTSTRAP" "$left" \
    </dev/null >"$LOGDIR/ready.log" 2>&1 &
  READY_CHECKER=$!
  while alive "$READY_CHECKER"; do
    if ! alive "$pid"; then
      kill "$READY_CHECKER" 2>/dev/null || true
      wait "$READY_CHECKER" 2>/dev/null || true
      show_log_tail
      rm -f "$PIDFILE"
      die "the broker process exited during startup (see the logs above)"
    fi
    sleep 0.05
  done
  wait "$READY_CHECKER" || rc=$?
  READY_CHECKER=""
  if ((rc != 0)); then
    warn "----- last lines of $LOGDIR/ready.log -----"
    tail -n 5 "$LOGDIR/ready.log" >&2
    show_log_tail
    abort_start
    die "the broker accepts connections on $BOOTSTRAP but did not answer metadata requests within $BROKER_START_TIMEOUT s (BROKER_START_TIMEOUT)"
  fi
}

# ---------------------------------------------------------------------------------------------
# stop / status / logs
# ---------------------------------------------------------------------------------------------
stop() {
  local pid t0
  if ! pid="$(broker_pid)"; then
    rm -f "$PIDFILE"
    say "not running (dir $BROKER_DIR)"
    return 0
  fi
  t0="$(now_ms)"
  local rc=0
  terminate "$pid" "$BROKER_STOP_TIMEOUT" || rc=$?
  rm -f "$PIDFILE"
  say "stopped (pid $pid) in $(secs_since "$t0") s; logs kept in $LOGDIR"
  if ((rc == 0)); then
    cds_install
  else
    rm -f "$BROKER_DIR/cds.pending" "$BROKER_DIR/cds.jsa"
  fi
}

frozen() { [[ "$(proc_state "$1")" == T ]]; }

# SIGSTOP: the broker (and its controller) stop answering without closing a connection, as a
# hung or partitioned machine does; `thaw` (SIGCONT) brings it back with its state untouched: no
# restart, no leader change. A freeze longer than broker.session.timeout.ms (9 s by default) gets
# the broker fenced by its own controller when it thaws, and its partitions leaderless for a moment.
freeze() {
  local pid
  pid="$(broker_pid)" || die "not running (dir $BROKER_DIR): nothing to freeze"
  kill -STOP "$pid"
  say "frozen (pid $pid, SIGSTOP); 'broker.sh thaw' resumes it"
}

thaw() {
  local pid
  pid="$(broker_pid)" || die "not running (dir $BROKER_DIR): nothing to thaw"
  kill -CONT "$pid"
  say "thawed (pid $pid, SIGCONT)"
}

# A crash: SIGKILL, so no controlled shutdown; `resume` then recovers the logs as after an
# unclean shutdown (the page cache survives, as it does when only the JVM dies), and the restarted
# broker registers once its old registration's session (broker.session.timeout.ms) has expired.
crash() {
  local pid i
  if ! pid="$(broker_pid)"; then
    rm -f "$PIDFILE"
    say "not running (dir $BROKER_DIR)"
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  alive "$pid" && die "broker (pid $pid) survived SIGKILL"
  # The main thread turns zombie first; the JVM's other threads, and its sockets, go a moment later.
  for ((i = 0; i < 100; i++)); do
    port_open "$BROKER_PORT" || port_open "$CONTROLLER_PORT" || break
    sleep 0.1
  done
  rm -f "$PIDFILE" "$BROKER_DIR/cds.pending"
  say "killed (pid $pid, SIGKILL); data kept in $BROKER_DIR/data, logs in $LOGDIR"
}

status() {
  local pid
  if pid="$(broker_pid)"; then
    if frozen "$pid"; then
      say "frozen (pid $pid, SIGSTOP): 'broker.sh thaw' resumes it; dir $BROKER_DIR"
      return 3
    fi
    if port_open "$BROKER_PORT"; then
      say "running (pid $pid) on $BOOTSTRAP, Kafka $KAFKA_VERSION, dir $BROKER_DIR"
      return 0
    fi
    say "starting or stopping (pid $pid): $BOOTSTRAP not accepting connections; dir $BROKER_DIR"
    return 3
  fi
  if port_open "$BROKER_PORT"; then
    say "not running from $BROKER_DIR, but $BOOTSTRAP is in use by another process"
  else
    say "not running (dir $BROKER_DIR)"
  fi
  return 3
}

logs() {
  local follow="" lines=100 a
  for a in "$@"; do
    case "$a" in
      -f) follow=1 ;;
      *[!0-9]* | '') die "usage: broker.sh logs [-f] [LINES]" ;;
      *) lines="$a" ;;
    esac
  done
  [[ -f "$SERVER_LOG" ]] || die "no broker log at $SERVER_LOG"
  if [[ -n "$follow" ]]; then
    exec tail -n "$lines" -f "$SERVER_LOG"
  fi
  tail -n "$lines" "$SERVER_LOG"
}

tool() {
  (($# >= 1)) || die "usage: broker.sh tool MAIN_CLASS [ARGS...]"
  fetch
  cds_setup
  exec "$JAVA" "${TOOL_JVM[@]}" "${CDS_QUIET[@]}" "${CDS_USE[@]}" -cp "$LIB/*:$CHECK_DIR" "$@"
}

usage() {
  sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd="${1:-}"
(($# > 0)) && shift
case "$cmd" in
  fetch) fetch && say "Kafka $KAFKA_VERSION jars in $LIB" ;;
  start) start ;;
  stop) stop ;;
  kill) crash ;;
  freeze) freeze ;;
  thaw) thaw ;;
  resume) resume ;;
  status) status ;;
  logs) logs "$@" ;;
  bootstrap) echo "$BOOTSTRAP" ;;
  classpath) fetch && echo "$LIB/*" ;;
  tool) tool "$@" ;;
  *) usage ;;
esac
