#!/usr/bin/env bash
# Builds the native scheduler (streamshard-jni) for the platforms the agent jar carries, into
# target/native/<platform>/, and checks what each one needs of the system it will run on; with
# this machine's platform among them, also the status CLI, into target/<profile>/streamshard-status.
#
#   bash scripts/native.sh [--platforms LIST] [--profile P]
#   bash scripts/native.sh --check-jar JAR   fails unless the agent jar carries all six libraries
#
#   --platforms LIST  comma-separated, or "all" (the default) or "host" (this machine's only):
#                     linux-x86_64, linux-aarch64        glibc 2.17 or later
#                     linux-x86_64-musl, linux-aarch64-musl  musl (Alpine)
#                     macos-aarch64, macos-x86_64        macOS 11 or later (built here, not run)
#   --profile P       the cargo profile (release)
#
# Every library is cross-linked with cargo-zigbuild (Zig from PyPI, scripts/lib/cross.sh), which
# links the glibc builds against glibc 2.17's symbol versions whatever this machine has. A check
# fails the build if a glibc library needs a symbol newer than 2.17, if a musl library needs
# glibc, or if a macOS library needs a newer macOS than 11.0.
set -euo pipefail
cd "$(dirname "$0")/.."

platforms=all profile=release check_jar=""
while [ $# -gt 0 ]; do
  case "$1" in
    --platforms) platforms="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --check-jar) check_jar="$2"; shift 2 ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
  esac
done
ALL="linux-x86_64,linux-aarch64,linux-x86_64-musl,linux-aarch64-musl,macos-aarch64,macos-x86_64"
host="linux-$(uname -m | sed 's/arm64/aarch64/')"
if [ -n "$check_jar" ]; then
  # A jar whose other platforms' libraries were built elsewhere (scripts/test.sh builds them in the
  # background) must not ship with one missing: the agent would run stock there.
  listing=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$check_jar")
  missing=""
  for platform in ${ALL//,/ }; do
    grep -qE "^META-INF/native/$platform/libstreamshard_jni\.(so|dylib)\$" <<<"$listing" || missing+=" $platform"
  done
  [ -z "$missing" ] || { echo "error: $check_jar has no native library for:$missing" >&2; exit 1; }
  echo "==> $check_jar carries the native library of every platform (${ALL//,/, })"
  exit 0
fi
case "$platforms" in
  all) platforms="$ALL" ;;
  host) platforms="$host" ;;
esac

GLIBC_FLOOR=2.17
export MACOSX_DEPLOYMENT_TARGET=11.0
# A musl cdylib must link musl dynamically (the JVM's own C library), not carry a static copy.
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=-crt-static"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=-crt-static"
# A macOS library names itself by @rpath, not by this machine's build path. Without an SDK here,
# rustc warns that xcrun is missing; Zig carries the libSystem stubs the link needs.
export CARGO_TARGET_AARCH64_APPLE_DARWIN_RUSTFLAGS="-C link-arg=-Wl,-install_name,@rpath/libstreamshard_jni.dylib"
export CARGO_TARGET_X86_64_APPLE_DARWIN_RUSTFLAGS="$CARGO_TARGET_AARCH64_APPLE_DARWIN_RUSTFLAGS"
# Zig's linker takes rustc's --strip-debug for a full strip, which would drop the symbol table
# that profiles name functions by; llvm-objcopy strips the debug sections afterwards instead.
export "CARGO_PROFILE_$(tr 'a-z-' 'A-Z_' <<<"$profile")_STRIP=none"
target_dir="${CARGO_TARGET_DIR:-target}"

triple() {
  case "$1" in
    linux-x86_64) echo x86_64-unknown-linux-gnu ;;
    linux-aarch64) echo aarch64-unknown-linux-gnu ;;
    linux-x86_64-musl) echo x86_64-unknown-linux-musl ;;
    linux-aarch64-musl) echo aarch64-unknown-linux-musl ;;
    macos-aarch64) echo aarch64-apple-darwin ;;
    macos-x86_64) echo x86_64-apple-darwin ;;
    *) echo "unknown platform '$1' (known: $ALL)" >&2; return 2 ;;
  esac
}

CROSS_TRIPLES=""
for platform in ${platforms//,/ }; do CROSS_TRIPLES+="$(triple "$platform") "; done
. scripts/lib/cross.sh
objcopy="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-objcopy"

# check PLATFORM FILE: what the library needs of the system it loads on
check() {
  local platform="$1" file="$2" newest
  case "$platform" in
    linux-x86_64 | linux-aarch64)
      newest=$(readelf -W --dyn-syms "$file" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -Vu | tail -n1)
      if [ -z "$newest" ] || [ "$(printf '%s\n%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -n1)" != "$GLIBC_FLOOR" ]; then
        echo "error: $file needs glibc $newest, newer than the floor $GLIBC_FLOOR:" >&2
        readelf -W --dyn-syms "$file" | grep -E "GLIBC_($newest)( |$)" | head -n 20 >&2
        return 1
      fi
      echo "   $platform: glibc $newest at most (floor $GLIBC_FLOOR)" ;;
    linux-*-musl)
      if readelf -W --dyn-syms "$file" | grep -q 'GLIBC_'; then
        echo "error: $file is a musl build but needs glibc symbol versions" >&2
        return 1
      fi
      if ! readelf -W -d "$file" | grep -q 'NEEDED.*libc\.so'; then
        echo "error: $file does not link the C library dynamically" >&2
        return 1
      fi
      echo "   $platform: no glibc symbol, libc.so linked dynamically" ;;
    macos-*)
      local minos
      minos=$("$(dirname "$objcopy")/llvm-objdump" --macho --private-headers "$file" |
        awk '/LC_BUILD_VERSION/ {b = 1} b && $1 == "minos" {print $2; exit}')
      if [ "$minos" != "$MACOSX_DEPLOYMENT_TARGET" ]; then
        echo "error: $file needs macOS '$minos', not $MACOSX_DEPLOYMENT_TARGET" >&2
        return 1
      fi
      echo "   $platform: macOS $minos or later" ;;
  esac
}

for platform in ${platforms//,/ }; do
  t=$(triple "$platform")
  zig_target="$t"
  case "$platform" in linux-x86_64 | linux-aarch64) zig_target="$t.$GLIBC_FLOOR" ;; esac
  echo "==> native library for $platform ($zig_target)"
  # (rustc's note that xcrun is missing, for macOS, is dropped: the link needs no SDK, see above)
  cargo zigbuild --quiet --locked --profile "$profile" -p streamshard-jni --target "$zig_target" 2>&1 |
    sed '/invoking `"xcrun"/,/^$/d; /`streamshard-jni` (lib) generated 1 warning/d' >&2
  name=libstreamshard_jni.so
  case "$platform" in macos-*) name=libstreamshard_jni.dylib ;; esac
  mkdir -p "$target_dir/native/$platform"
  "$objcopy" --strip-debug "$target_dir/$t/$profile/$name" "$target_dir/native/$platform/$name"
  check "$platform" "$target_dir/native/$platform/$name"
  if [ "$platform" = "$host" ]; then
    # The status CLI for this machine, from the same target directory: its dependencies (tokio,
    # tonic, axum) are the library's, already built, not built a second time for the host.
    echo "==> streamshard-status for $platform"
    cargo zigbuild --quiet --locked --profile "$profile" -p streamshard-status --target "$zig_target"
    mkdir -p "$target_dir/$profile"
    cp "$target_dir/$t/$profile/streamshard-status" "$target_dir/$profile/streamshard-status.tmp"
    mv "$target_dir/$profile/streamshard-status.tmp" "$target_dir/$profile/streamshard-status"
  fi
done
