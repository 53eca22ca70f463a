#!/usr/bin/env bash
# The runtime-sensitive part of the test suite again on Node.js's active LTS (26), which the Docker
# images run; `pnpm test` runs all of it on the machine's Node 20. The part: every package's tests
# (the shared rules, the publisher, the migrations), the API's routes and operations, the worker's
# end-to-end delivery, and the tests that spawn the built services (the OpenTelemetry preload, the
# worker's thread and heap bound, configuration errors), which is where runtimes differ (ESM
# loading, loader hooks, worker threads, fetch, crypto). The rest (fairness, faults, durability,
# inline attempts, the worker's operations, clusters, the portal's browser) proves the service's
# own logic and its clients' reconnections, the same on either runtime, and took 12 minutes more.
# The LTS binary comes from scripts/lts-node.sh. Run after `pnpm test`, which installs and builds;
# the spawned services run on the same binary.
set -euo pipefail
cd "$(dirname "$0")/.."
node="$(bash scripts/lts-node.sh)"
echo "test suite on Node $("$node" --version)"
"$node" --experimental-vm-modules node_modules/jest/bin/jest.js \
  packages/ \
  apps/api/test/{subscriptions,events,test-events,auth,load-shedding,burst,operations}.test.ts \
  apps/worker/test/{delivery,durability-rules,log-redaction}.test.ts \
  test/{config-errors,trace-context-privacy,tracing,demo}.test.ts
