# syntax=docker/dockerfile:1
# memorychat: one image for the API (default CMD), the worker and the migration Job (k8s/ overrides
# the command). It runs the JavaScript that `npm run build:service` writes (esbuild to dist/), as
# `npm start` does; TypeScript, tsx and esbuild stay in the build stage.

# Node 24, the active LTS, where a turn costs the service less CPU than on 20; CI runs part of the suite
# on this major (`npm run test:image-node`, which reads the line below), all of it on 20.19+
# (docs/development.md#node-versions).
ARG NODE_IMAGE=node:24-bookworm-slim

# Production dependencies only, from the lock file. --ignore-scripts: no install script runs at build
# time; msgpackr falls back to JS.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The lock file names the client package's workspace; npm ci needs its manifest (the service does not use it).
COPY packages/memorychat-client/package.json ./packages/memorychat-client/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# The embedded database's template cluster, which `postinstall` makes outside Docker (--ignore-scripts
# skipped it): it lands in node_modules/.cache, so the image's first start copies it instead of running
# initdb and every migration. Only node_modules leaves this stage.
COPY services/db/embedded/cluster-template.mjs services/db/embedded/pglite-process.mjs ./services/db/embedded/
COPY services/db/migrations ./services/db/migrations
COPY scripts/build/embedded-cluster-template.mjs ./scripts/build/
RUN node scripts/build/embedded-cluster-template.mjs

# esbuild is a development dependency (its binary comes from its platform package, no install script
# needed); only its output leaves this stage.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/memorychat-client/package.json ./packages/memorychat-client/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build ./scripts/build
COPY services ./services
COPY scripts/migrate.ts scripts/token.ts scripts/citus-rebalance.ts ./scripts/
RUN npm run build:service

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/var/lib/memorychat
WORKDIR /app
# Everything is owned by root and only readable by the app user: the code cannot be changed at run time.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
# The only writable place inside the image (embedded database, local secret); k8s mounts an emptyDir
# there and at /tmp (the embedded database's socket directory) because the root filesystem is read-only.
RUN mkdir -p /var/lib/memorychat && chown 1000:1000 /var/lib/memorychat
# Numeric, so that Kubernetes' runAsNonRoot can verify it without a passwd lookup.
USER 1000:1000
EXPOSE 8080
# node itself is PID 1 (not npm, which neither forwards SIGTERM nor exits with the child's code), so
# close-with-grace receives the signal and drains requests.
CMD ["node", "dist/services/api/server.js"]
