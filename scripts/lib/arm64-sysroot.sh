# Sourced by tests/platforms/smoke.sh: an aarch64 sysroot with a JVM, glibc and musl, unpacked from
# Debian's arm64 packages into target/arm64-sysroot (nothing arm64 is installed system-wide), and
# qemu-user-static to run it. Sets SYSROOT and ARM64_JAVA.
SYSROOT="$PWD/target/arm64-sysroot"
ARM64_JAVA="$SYSROOT/usr/lib/jvm/java-17-openjdk-arm64/bin/java"
ARM64_PACKAGES="openjdk-17-jre-headless libc6 libgcc-s1 libstdc++6 zlib1g musl"
if ! command -v qemu-aarch64-static >/dev/null 2>&1; then
  echo "installing qemu-user-static" >&2
  apt-get update -qq && apt-get install -y -qq qemu-user-static >/dev/null
fi
if [ ! -x "$ARM64_JAVA" ] || [ ! -e "$SYSROOT/lib/ld-musl-aarch64.so.1" ]; then
  echo "unpacking Debian's arm64 $ARM64_PACKAGES into $SYSROOT" >&2
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -qq
  debs="$PWD/target/arm64-debs"
  rm -rf "$debs" "$SYSROOT"
  mkdir -p "$debs" "$SYSROOT"
  # apt-get download as root writes where the _apt user cannot: say so once, not per package.
  (cd "$debs" && apt-get download -qq $(printf '%s:arm64 ' $ARM64_PACKAGES) 2>&1 | grep -v 'unsandboxed' || true)
  for deb in "$debs"/*.deb; do
    dpkg -x "$deb" "$SYSROOT"
  done
  [ -x "$ARM64_JAVA" ] || { echo "error: no aarch64 JVM at $ARM64_JAVA after unpacking" >&2; exit 1; }
fi
