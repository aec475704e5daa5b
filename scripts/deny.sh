#!/usr/bin/env bash
# cargo deny check on the Rust workspace (deny.toml): licences, RustSec security advisories,
# duplicate crates, crate sources. The advisories come from RustSec's live database when GitHub
# can be reached, else from the snapshot in third_party/rustsec-advisory-db (said so in the output).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh
. scripts/lib/cargo-tools.sh
SNAPSHOT_DATE="2026-08-21T08:28:40+02:00" # third_party/rustsec-advisory-db/README.md
install_tool cargo-deny cargo-deny "$DENY_VERSION"
if [ "$(cargo deny --version 2>/dev/null)" != "cargo-deny $DENY_VERSION" ]; then
  echo "error: cargo-deny $DENY_VERSION did not install (cargo deny --version: $(cargo deny --version 2>&1))" >&2
  exit 1
fi
if timeout 20 git ls-remote https://github.com/RustSec/advisory-db HEAD >/dev/null 2>&1; then
  echo "advisories: RustSec's live database"
  exec cargo deny check
fi
# Offline, cargo-deny reads the whole graph (every target's dependencies, optional ones too) from
# the local cache, which a fresh machine's builds have filled only for this platform.
cargo fetch --locked --quiet
# Where cargo-deny $DENY_VERSION keeps the database of its default URL under db-path (deny.toml).
db=target/advisory-dbs/advisory-db-3157b0e258782691
rm -rf "$db" && mkdir -p "$db"
cp -r third_party/rustsec-advisory-db/. "$db"
(cd "$db" && git init -q && git add -A &&
  GIT_AUTHOR_DATE="$SNAPSHOT_DATE" GIT_COMMITTER_DATE="$SNAPSHOT_DATE" \
    git -c user.name=streamshard -c user.email=build@streamshard.invalid commit -q -m "RustSec snapshot")
echo "advisories: GitHub unreachable; RustSec's database as of $SNAPSHOT_DATE (third_party/rustsec-advisory-db)"
exec cargo deny --offline check
