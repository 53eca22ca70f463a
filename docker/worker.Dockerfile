# The delivery worker. Build from the repository root:
#   docker build -f docker/worker.Dockerfile -t webhooks-worker .
# Scale it by running more containers against the same Redis and PostgreSQL.

FROM node:26-bookworm-slim AS base
ENV PNPM_HOME=/pnpm PATH=/pnpm:$PATH CI=true
RUN npm install --global pnpm@10.34.9
WORKDIR /repo
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY apps/api/package.json apps/api/
COPY apps/worker/package.json apps/worker/
COPY packages/publisher/package.json packages/publisher/
COPY packages/shared/package.json packages/shared/
COPY packages/db/package.json packages/db/
COPY packages/client/package.json packages/client/
COPY packages/cli/package.json packages/cli/
COPY apps/portal/package.json apps/portal/

FROM base AS build
RUN pnpm install --frozen-lockfile
COPY tsconfig.base.json prisma.config.ts ./
COPY scripts/prisma-generate.mjs scripts/
COPY prisma prisma
COPY packages packages
COPY apps/worker apps/worker
RUN pnpm run generate && pnpm exec tsc --build apps/worker

FROM base AS prod-deps
RUN pnpm install --frozen-lockfile --prod --filter @webhooks/worker...

FROM node:26-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
# No NODE_OPTIONS heap limit: main.js bounds the worker's heap itself (WORKER_MAX_HEAP_MB), the
# same way on every start path.
ENV NODE_ENV=production HOST=0.0.0.0 WORKER_HEALTH_PORT=3001
WORKDIR /app
COPY --from=prod-deps /repo/node_modules node_modules
COPY --from=prod-deps /repo/packages/publisher/node_modules packages/publisher/node_modules
COPY --from=prod-deps /repo/packages/shared/node_modules packages/shared/node_modules
COPY --from=prod-deps /repo/packages/db/node_modules packages/db/node_modules
COPY --from=prod-deps /repo/apps/worker/node_modules apps/worker/node_modules
COPY --from=build /repo/package.json /repo/pnpm-workspace.yaml ./
COPY --from=build /repo/packages/publisher/package.json packages/publisher/
COPY --from=build /repo/packages/publisher/dist packages/publisher/dist
COPY --from=build /repo/packages/shared/package.json packages/shared/
COPY --from=build /repo/packages/db/package.json packages/db/
COPY --from=build /repo/packages/db/dist packages/db/dist
COPY --from=build /repo/packages/shared/dist packages/shared/dist
COPY --from=build /repo/apps/worker/package.json apps/worker/
COPY --from=build /repo/apps/worker/dist apps/worker/dist
# EVENT_CATALOGUE's default; mount your own catalogue file and point EVENT_CATALOGUE at it.
COPY catalogues catalogues
USER node
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:3001/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini is PID 1: it forwards SIGTERM to node, which lets running deliveries finish, and reaps zombies.
ENTRYPOINT ["/usr/bin/tini", "--"]
# The OpenTelemetry SDK loads first and does nothing unless OTEL_* variables ask for traces.
CMD ["node", "--import", "./packages/shared/dist/instrument.js", "apps/worker/dist/main.js"]
