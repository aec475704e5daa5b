# Sourced by the scripts: the cargo tools the supply-chain checks and the release use, pinned, and
# one way to install them from crates.io (each is compiled there: minutes, so the test suite starts
# them early, in the background; scripts/test.sh).
DENY_VERSION=0.20.2
ABOUT_VERSION=0.9.3
CYCLONEDX_VERSION=0.5.9

install_tool() { # install_tool BINARY CRATE VERSION [cargo install options]
  local bin="$1" crate="$2" version="$3"
  shift 3
  if ! cargo "${bin#cargo-}" --version 2>/dev/null | grep -qF "$version"; then
    echo "installing $crate $version from crates.io" >&2
    cargo install --quiet --locked "$crate@$version" "$@"
  fi
}

install_cargo_tools() {
  install_tool cargo-deny cargo-deny "$DENY_VERSION"
  install_tool cargo-about cargo-about "$ABOUT_VERSION" --features cli
  install_tool cargo-cyclonedx cargo-cyclonedx "$CYCLONEDX_VERSION"
}
