#!/usr/bin/env bash
# Takes a screenshot of the benchmark's HTML report with headless Chromium, to
# check that it renders (charts drawn, tables laid out) without a browser UI.
#
#   scripts/screenshot-report.sh REPORT.html [OUT.png] [WIDTHxHEIGHT]
#
# Installs Debian's chromium when missing (root + apt-get). The report is
# self-contained (ECharts is inlined), so no network is needed. Each run uses a
# fresh profile directory, removed on exit.
set -euo pipefail

report=${1:?usage: $0 REPORT.html [OUT.png] [WIDTHxHEIGHT]}
out=${2:-${report%.html}.png}
size=${3:-1400x6000}

if ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null
	else
		echo "chromium not found: install it (Debian: apt-get install chromium)" >&2
		exit 1
	fi
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
abs=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")

# --virtual-time-budget lets the page's scripts (chart rendering) run before
# the capture; the other flags keep Chromium from reaching any network service.
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--disable-dev-shm-usage --hide-scrollbars --user-data-dir="$profile" \
	--virtual-time-budget=5000 --window-size="${size/x/,}" --screenshot="$out" "file://$abs" \
	>/dev/null 2>"$profile/chromium.log" || { tail -20 "$profile/chromium.log" >&2; exit 1; }
echo "$out"
