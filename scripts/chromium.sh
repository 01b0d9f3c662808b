#!/usr/bin/env bash
# Debian's Chromium for the console's browser test (tests/web/test_console_browser.py).
# Installs it when missing (as root, as scripts/pg.sh does for PostgreSQL); prints its path.
# Playwright drives this browser: it never downloads one of its own.
set -euo pipefail
bin=${PIONEER_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$bin" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "chromium.sh: $bin is missing; run 'apt-get install -y chromium' as root" >&2; exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq chromium >/dev/null
fi
echo "$bin"
