#!/usr/bin/env bash
# The release build: writes dist/ with
#   streamshard-agent-<version>.jar         the agent (every platform's native library inside, and
#                                           META-INF/THIRD-PARTY-NOTICES.md)
#   streamshard-agent-<version>.jar.sha256  its SHA-256 (sha256sum -c reads it)
#   streamshard-agent-<version>.cdx.json    CycloneDX SBOM: the Java and the Rust components in it
#   THIRD-PARTY-NOTICES.md                  the licences of everything the jar bundles
# and installs io.streamshard:streamshard-agent:<version> into the local Maven repository.
#
#   bash scripts/release.sh [--no-build]
#
# The SBOM's Java part comes from the CycloneDX Maven plugin (the jar's compile and runtime
# dependencies: the relocated ByteBuddy), its Rust part from cargo-cyclonedx (the crates linked
# into the native library); the notices from cargo-about (Rust) and the licence files the bundled
# Java jars carry. Nothing is listed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/toolchain.sh

build=1
[ "${1:-}" = "--no-build" ] && build=0
CDX_MAVEN_VERSION=2.9.3
. scripts/lib/cargo-tools.sh
install_tool cargo-about cargo-about "$ABOUT_VERSION" --features cli
install_tool cargo-cyclonedx cargo-cyclonedx "$CYCLONEDX_VERSION"

version=$(python3 -c 'import xml.etree.ElementTree as E; n = {"m": "http://maven.apache.org/POM/4.0.0"}; print(E.parse("java-shim/pom.xml").find("m:parent/m:version", n).text)')
name="streamshard-agent-$version"
if [ "$build" = 1 ]; then
  echo "==> the agent jar ($version; every platform's native library) and into the local Maven repository"
  mvn -B -q --no-transfer-progress -pl java-shim -am install -DskipTests
fi
jar="java-shim/target/$name.jar"
[ -f "$jar" ] || { echo "error: no $jar (run without --no-build)" >&2; exit 1; }
bash scripts/native.sh --check-jar "$jar"
rm -rf dist && mkdir -p dist
work=target/release-work
rm -rf "$work" && mkdir -p "$work"

echo "==> SBOM: Java (CycloneDX Maven plugin) and Rust (cargo-cyclonedx)"
mvn -B -q --no-transfer-progress -pl java-shim "org.cyclonedx:cyclonedx-maven-plugin:$CDX_MAVEN_VERSION:makeBom" \
  -DincludeProvidedScope=false -DincludeTestScope=false -DincludeSystemScope=false \
  -DoutputFormat=json -DoutputName=bom-java
cp java-shim/target/bom-java.json "$work/java.cdx.json"
for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl \
  aarch64-unknown-linux-musl aarch64-apple-darwin x86_64-apple-darwin; do # what each platform links
  cargo cyclonedx --manifest-path native/jni/Cargo.toml --format json --spec-version 1.5 --no-build-deps \
    --target "$target" --override-filename streamshard-jni.cdx >/dev/null
  mv native/jni/streamshard-jni.cdx.json "$work/rust-$target.cdx.json"
  rm -f native/*/streamshard-jni.cdx.json # it writes one for every member of the workspace
done

echo "==> notices: cargo-about (Rust) and the licence files of the bundled Java jars"
cargo about generate --manifest-path native/jni/Cargo.toml -c about.toml scripts/release/about.hbs \
  >"$work/rust-notices.md"

python3 scripts/release/assemble.py --jar "$jar" --version "$version" --work "$work" --out dist
(cd dist && sha256sum "$name.jar" >"$name.jar.sha256" && sha256sum -c --quiet "$name.jar.sha256")
echo "==> dist/"
ls -l dist
