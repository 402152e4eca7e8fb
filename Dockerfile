# svc gateway image: `docker build -t svc .`, then
#   docker run -p 8080:8080 -e DATABASE_URL=postgres://… -e SVC_ADMIN_KEY=… svc
# Without DATABASE_URL it runs on the embedded database in the /data volume (one container only).

# --- build: install, bundle dist/
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lockfile lacks other platforms' optional packages, which `npm ci` may refuse; `npm install`
# then installs the locked versions. No install scripts: `prepare` would build before the sources
# are here, and the build below needs none (esbuild's binary comes as a platform package).
RUN npm ci --ignore-scripts --no-audit --no-fund || npm install --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY layers ./layers
COPY services ./services
COPY plugins ./plugins
RUN npm run build

# --- run: node, the bundle and the one package it loads from node_modules
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SVC_DATA_DIR=/data
COPY --from=build /app/package.json ./
# Everything else is inside the bundle; PGlite and its pgvector stay outside for their WebAssembly
# and data files (test/deployment.test.ts runs the bundle with these packages alone).
COPY --from=build /app/node_modules/@electric-sql/pglite ./node_modules/@electric-sql/pglite
COPY --from=build /app/node_modules/@electric-sql/pglite-pgvector ./node_modules/@electric-sql/pglite-pgvector
COPY --from=build /app/dist ./dist
# The embedded database's directory, writable by the unprivileged user the server runs as.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
# slim has no curl: node itself asks the liveness probe.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 and handles SIGTERM itself (drain, then exit 0); it starts no child processes, so
# there are no zombies for an init to reap. Allow a stop timeout above shutdown.drainSeconds (25).
STOPSIGNAL SIGTERM
CMD ["node", "--enable-source-maps", "--max-semi-space-size=32", "--no-allocation-site-pretenuring", "dist/main.js"]
