#!/bin/sh
# Installs Debian's blender if it is missing: the benchmarks that run
# Blender Cycles call this (never the build or the tests).
set -eu
command -v blender >/dev/null 2>&1 && exit 0
echo "installing blender (Debian package) for the Cycles figures..."
if [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends blender >/dev/null
else
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends blender >/dev/null
fi
