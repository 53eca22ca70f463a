#!/usr/bin/env bash
# The portal's browser tests drive Debian's chromium (/usr/bin/chromium) with playwright-core.
# Installs it with apt-get when it is missing (needs root, as on CI), and says so.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "chromium is missing: installing Debian's chromium package for the portal's browser tests"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
