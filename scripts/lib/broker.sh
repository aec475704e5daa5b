# Sourced by the scripts: starts the project's local Kafka broker (tests/broker) on a private
# port for the lifetime of the calling script, and exports STREAMSHARD_BOOTSTRAP.
export BROKER_PORT="${BROKER_PORT:-19392}"
broker() { bash "$(dirname "${BASH_SOURCE[0]}")/../../tests/broker/broker.sh" "$@"; }
broker start
export STREAMSHARD_BOOTSTRAP="127.0.0.1:$BROKER_PORT"
if declare -F on_exit >/dev/null; then
  on_exit 'broker stop >/dev/null 2>&1'
else
  trap 'broker stop >/dev/null 2>&1 || true' EXIT
fi
