# Sourced by the scripts: Chromium from Debian's packages, for the status page test (StatusIT).
if [ ! -x /usr/bin/chromium ]; then
  echo "Chromium not found: installing Debian's chromium package for the status page test" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
