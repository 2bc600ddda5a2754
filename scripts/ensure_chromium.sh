#!/usr/bin/env bash
# Make sure a headless Chromium is available (Debian's `chromium` package) for the docs browser test.
# Prints the browser's path. Installs it with apt-get when absent and we are root; otherwise explains.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then command -v "$b"; exit 0; fi
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium not found: install Debian's chromium package (sudo apt-get install -y chromium)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium
