# Sourced by scripts/native.sh: what cross-linking the native library needs — the Rust targets,
# llvm-tools (llvm-objcopy, llvm-objdump), and Zig with cargo-zigbuild from PyPI (pinned).
. scripts/lib/toolchain.sh
ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
if ! command -v cargo-zigbuild >/dev/null 2>&1 || ! python3 -m ziglang version >/dev/null 2>&1; then
  echo "installing ziglang $ZIG_VERSION and cargo-zigbuild $ZIGBUILD_VERSION from PyPI" >&2
  python3 -m pip install --quiet --disable-pip-version-check "ziglang==$ZIG_VERSION" "cargo-zigbuild==$ZIGBUILD_VERSION"
  hash -r
fi
# The Rust targets: those the caller names in CROSS_TRIPLES (space-separated), else all six.
installed_targets=$(rustup target list --installed)
for t in ${CROSS_TRIPLES:-x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl \
  aarch64-unknown-linux-musl aarch64-apple-darwin x86_64-apple-darwin}; do
  grep -qx "$t" <<<"$installed_targets" || rustup target add "$t"
done
[ -x "$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-objcopy" ] ||
  rustup component add llvm-tools
