#!/usr/bin/env bash
# The Kubernetes manifests' test renders them with kustomize as kubectl embeds it (Debian's
# kubectl package). Installs it with apt-get when it is missing (needs root, as on CI), and says so.
set -euo pipefail
if command -v kubectl >/dev/null; then exit 0; fi
echo "kubectl is missing: installing Debian's kubectl package for the Kubernetes manifests' test"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kubectl
