#!/usr/bin/env bash
# Makes sure redis-server, redis-cli and redis-benchmark are on PATH.
# Installs Debian's redis-server package when missing and we are root; otherwise
# prints exactly what to install and fails. Works without a terminal (CI).
set -euo pipefail
missing=0
for bin in redis-server redis-cli redis-benchmark; do
  command -v "$bin" >/dev/null 2>&1 || missing=1
done
[ "$missing" = 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-redis: installing Debian package redis-server (apt-get)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
  # Debian's package may start a system service on :6379; our tests never use it
  # (they start their own servers on free ports), so it is left alone.
  exit 0
fi
echo "ensure-redis: redis-server is not installed." >&2
echo "  Debian/Ubuntu: sudo apt-get install -y redis-server" >&2
echo "  macOS:         brew install redis" >&2
exit 1
