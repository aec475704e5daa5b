#!/usr/bin/env bash
# Proof that the agent jar's other native libraries load and run, not just that they build:
#   1. the aarch64 glibc library in a real aarch64 JVM (Debian's arm64 OpenJDK 17 under
#      qemu-user-static): the agent jar as -javaagent, a KafkaStreams that streamshard must run
#      (which loads the library), then the native scheduler driven through the real Java classes
#      (io.streamshard.platform.PlatformSmoke: submit, run on two workers, drain, per-key order
#      and the committable offset checked);
#   2. the same with a jar whose aarch64 library is the x86_64 one: the KafkaStreams must be
#      created, one ERROR line say why, and the application run stock — proof that step 1 can fail;
#   3. both musl libraries loaded by musl's own dynamic loader (x86_64 here, aarch64 under qemu),
#      every symbol bound at once, and a glibc library refused by it.
# The macOS libraries are built and checked (scripts/native.sh) but cannot run here.
#
#   bash tests/platforms/smoke.sh [--jar JAR]     (after the jar and java-shim's test classes are built)
set -euo pipefail
cd "$(dirname "$0")/../.."

jar="$PWD/java-shim/target/streamshard-agent-0.1.0-SNAPSHOT.jar"
[ "${1:-}" = "--jar" ] && jar="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
classes="$PWD/java-shim/target/test-classes"
[ -f "$jar" ] || { echo "error: no agent jar at $jar (build it: mvn -pl java-shim package)" >&2; exit 1; }
[ -f "$classes/io/streamshard/platform/PlatformSmoke.class" ] ||
  { echo "error: no $classes/io/streamshard/platform/PlatformSmoke.class (mvn -pl java-shim test-compile)" >&2; exit 1; }

. scripts/lib/cross.sh
work="$PWD/target/platform-smoke"
rm -rf "$work" && mkdir -p "$work"
# Kafka Streams and the rest of java-shim's test class path, for the KafkaStreams of step 1.
mvn -B -q --no-transfer-progress -pl java-shim dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$work/classpath.txt" >/dev/null
cp="$classes:$(cat "$work/classpath.txt")"
. scripts/lib/arm64-sysroot.sh
fail() { echo "FAILED: $*" >&2; exit 1; }

# extract JAR ENTRY FILE
extract() { python3 -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' "$@"; }
lib=libstreamshard_jni.so

echo "==> 1. linux-aarch64 in an aarch64 JVM (qemu-aarch64-static), the jar as -javaagent"
arm64_java() { qemu-aarch64-static -L "$SYSROOT" "$ARM64_JAVA" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn "$@"; }
# smoke JAR LOG: PlatformSmoke in the aarch64 JVM with JAR as the agent; sets out and rc
smoke() {
  set +e
  out=$(arm64_java -javaagent:"$1" -cp "$1:$cp" io.streamshard.platform.PlatformSmoke --agent 2>&1)
  rc=$?
  set -e
  echo "$out" >"$work/$2"
  grep -E "streamshard|ERROR" <<<"$out" || true
}
arm64_java -version 2>&1 | head -n 2
smoke "$jar" aarch64.log
[ "$rc" = 0 ] || fail "the aarch64 JVM run exited $rc (output: $work/aarch64.log)"
grep -q "streamshard platform smoke: ok on Linux/aarch64 with META-INF/native/linux-aarch64/$lib (agent installed)" <<<"$out" ||
  fail "the aarch64 run did not load linux-aarch64 through the agent"

echo "==> 2. the same with the x86_64 library where the aarch64 one belongs: one line, a stock application"
python3 - "$jar" "$work/wrong.jar" <<'PY'
import sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
    x86 = zin.read("META-INF/native/linux-x86_64/libstreamshard_jni.so")
    for item in zin.infolist():
        data = x86 if item.filename == "META-INF/native/linux-aarch64/libstreamshard_jni.so" else zin.read(item.filename)
        zout.writestr(item, data)
PY
smoke "$work/wrong.jar" aarch64-wrong-library.log
[ "$rc" = 1 ] || fail "with the wrong library the smoke program exited $rc, not 1"
[ "$(grep -c "ERROR.*cannot load native library.*linux-aarch64.*AARCH64.*platform-smoke.* runs stock (serial)" <<<"$out")" = 1 ] ||
  fail "not one ERROR line naming the aarch64 library and the stock application"
grep -q "streamshard active: false" <<<"$out" || fail "the KafkaStreams was not created, or ran with streamshard"

echo "==> 3. the musl libraries under musl's own dynamic loader"
zigcc() { python3 -m ziglang cc -dynamic -O2 -fno-sanitize=all -s "$@"; }
zigcc -target x86_64-linux-musl -o "$work/load-x86_64-musl" tests/platforms/load.c
zigcc -target aarch64-linux-musl -o "$work/load-aarch64-musl" tests/platforms/load.c
for platform in linux-x86_64-musl linux-aarch64-musl; do
  extract "$jar" "META-INF/native/$platform/$lib" "$work/$platform.so"
done
extract "$jar" "META-INF/native/linux-x86_64/$lib" "$work/linux-x86_64.so"
# Every JNI entry point the glibc build exports must be in each musl build too.
nm="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-nm"
symbols=$("$nm" -D --defined-only "$work/linux-x86_64.so" | awk '$3 ~ /^Java_/ {print $3}')
[ -n "$symbols" ] || fail "no JNI entry point in the linux-x86_64 library"
[ -x /lib/ld-musl-x86_64.so.1 ] || { apt-get update -qq && apt-get install -y -qq musl >/dev/null; }
"$work/load-x86_64-musl" "$work/linux-x86_64-musl.so" $symbols ||
  fail "musl (x86_64) did not load linux-x86_64-musl"
qemu-aarch64-static -L "$SYSROOT" "$work/load-aarch64-musl" "$work/linux-aarch64-musl.so" $symbols || fail "musl (aarch64) did not load linux-aarch64-musl"
if "$work/load-x86_64-musl" "$work/linux-x86_64.so" 2>"$work/refused.txt"; then
  fail "musl loaded the glibc library: the harness proves nothing"
fi
echo "   musl refuses the glibc build, as it should: $(cat "$work/refused.txt")"
echo "==> platform smoke: passed"
