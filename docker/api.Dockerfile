# The API service. Build from the repository root:
#   docker build -f docker/api.Dockerfile -t webhooks-api .
# The same image runs the migrations: `node packages/db/dist/migrate-cli.js` (see compose.yaml).

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
COPY apps/api apps/api
COPY apps/portal apps/portal
RUN pnpm run generate && pnpm exec tsc --build apps/api packages/client \
  && pnpm --filter @webhooks/portal run build

FROM base AS prod-deps
RUN pnpm install --frozen-lockfile --prod --filter @webhooks/api...

FROM node:26-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY --from=prod-deps /repo/node_modules node_modules
COPY --from=prod-deps /repo/packages/publisher/node_modules packages/publisher/node_modules
COPY --from=prod-deps /repo/packages/shared/node_modules packages/shared/node_modules
COPY --from=prod-deps /repo/packages/db/node_modules packages/db/node_modules
COPY --from=prod-deps /repo/apps/api/node_modules apps/api/node_modules
COPY --from=build /repo/package.json /repo/pnpm-workspace.yaml ./
COPY --from=build /repo/prisma prisma
# EVENT_CATALOGUE's default; mount your own catalogue file and point EVENT_CATALOGUE at it.
COPY catalogues catalogues
COPY --from=build /repo/packages/publisher/package.json packages/publisher/
COPY --from=build /repo/packages/publisher/dist packages/publisher/dist
COPY --from=build /repo/packages/shared/package.json packages/shared/
COPY --from=build /repo/packages/db/package.json packages/db/
COPY --from=build /repo/packages/db/dist packages/db/dist
COPY --from=build /repo/packages/shared/dist packages/shared/dist
COPY --from=build /repo/apps/api/package.json apps/api/
COPY --from=build /repo/apps/api/dist apps/api/dist
COPY --from=build /repo/apps/portal/dist apps/portal/dist
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:3000/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini is PID 1: it forwards SIGTERM to node (graceful shutdown) and reaps zombies.
ENTRYPOINT ["/usr/bin/tini", "--"]
# The OpenTelemetry SDK loads first and does nothing unless OTEL_* variables ask for traces.
CMD ["node", "--import", "./packages/shared/dist/instrument.js", "apps/api/dist/server.js"]
