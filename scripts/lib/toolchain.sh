# Sourced by the scripts: makes sure the Rust toolchain and its components are there.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found: streamshard needs a Rust toolchain (1.88 or newer) on PATH" >&2
  exit 1
fi
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      rustup component add "$component"
    else
      echo "error: the Rust component '$component' is missing and rustup is not available" >&2
      exit 1
    fi
  fi
done
if ! command -v mvn >/dev/null 2>&1; then
  echo "Maven not found: installing it with apt-get" >&2
  apt-get update -qq && apt-get install -y -qq maven >/dev/null
fi
if ! command -v java >/dev/null 2>&1; then
  echo "error: java not found: streamshard needs a JDK 17 or newer" >&2
  exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "error: python3 not found: the benchmark harness (bench/run.py) needs Python 3.9 or newer" >&2
  exit 1
fi
