#!/usr/bin/env bash
# The CPU per record of one benchmark scenario in steady state: runs the scenario with --scale
# (a longer input), attaches async-profiler (Maven Central, tools.profiler:async-profiler) to the
# app after the JIT's warm-up for a window, and summarises the window with profile_summary.py over
# the records it processed (the run's middle-80% rate times the window).
#
#   bash bench/profile_steady.sh SCENARIO [SCALE] [DELAY_S] [WINDOW_S]    (defaults 20, 28, 10)
#
# Needs a broker (scripts/lib/broker.sh or STREAMSHARD_BOOTSTRAP) and the built jars, as
# bench/run.py does; STREAMSHARD_AGENT picks another agent jar (an A/B of two builds), ENGINE
# another engine than streamshard (streamshard-virtual: the app runs on JDK 25, attached with its
# own jcmd). The collapsed profile and the run's results go to target/profile/<scenario>/.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="${1:?usage: bench/profile_steady.sh SCENARIO [SCALE] [DELAY_S] [WINDOW_S]}"
scale="${2:-20}" delay="${3:-28}" window="${4:-10}"
version=4.6
ap="${ASYNC_PROFILER_DIR:-$HOME/.cache/streamshard/async-profiler-$version}"
if [ ! -f "$ap/linux-x64/libasyncProfiler.so" ]; then
  mkdir -p "$ap"
  curl -sSfL -o "$ap/ap.jar" \
    "https://repo1.maven.org/maven2/tools/profiler/async-profiler/$version/async-profiler-$version.jar"
  (cd "$ap" && unzip -oq ap.jar 'linux-x64/*' && rm ap.jar)
fi
lib="$ap/linux-x64/libasyncProfiler.so"
out="target/profile/$scenario"
jcmd=jcmd
case "${ENGINE:-streamshard}" in
  streamshard-virtual*) jcmd="$(dirname "$(python3 -c 'import sys; sys.path.insert(0, "bench"); import run; print(run.VIRTUAL_JAVA)')")/jcmd" ;;
esac
rm -rf "$out" && mkdir -p "$out"
python3 bench/run.py --brokers "${STREAMSHARD_BOOTSTRAP:-127.0.0.1:9092}" --only "$scenario" \
  --engines "${ENGINE:-streamshard}" --scale "$scale" --out "$out" >"$out/bench.log" 2>&1 &
bench=$!
pid=""
for _ in $(seq 1 1200); do
  pid=$(pgrep -n -f "BenchApp.*bench-$scenario" || true)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { echo "profile_steady: the app did not start; see $out/bench.log" >&2; exit 1; }
sleep "$delay"
# jcmd reads key=value pairs itself: the profiler's options go in quotes of their own.
"$jcmd" "$pid" JVMTI.agent_load "$lib" '"start,event=cpu,interval=1ms"' >/dev/null
sleep "$window"
"$jcmd" "$pid" JVMTI.agent_load "$lib" "\"stop,file=$PWD/$out/window.collapsed,collapsed\"" >/dev/null
wait "$bench"
grep "rate=" "$out/bench.log"
records=$(python3 -c "
import json, sys
r = json.load(open('$out/results.json'))['results'][0]
print(int(r['verify']['rate_mid80_rps'] * $window))")
python3 bench/profile_summary.py "$out/window.collapsed" "$records"
