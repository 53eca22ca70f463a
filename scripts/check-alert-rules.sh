#!/usr/bin/env bash
# The Prometheus alerting rules in deploy/prometheus: promtool checks their syntax and runs their
# unit tests (alerts.test.yml). promtool comes from Debian's prometheus package, installed with
# apt-get when it is missing (needs root, as on CI), and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v promtool >/dev/null; then
  echo "promtool is missing: installing Debian's prometheus package for the alert rules' checks"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool check rules deploy/prometheus/alerts.yml
(cd deploy/prometheus && promtool test rules alerts.test.yml)
