# syntax=docker/dockerfile:1
# knowledge-store: a multi-stage build (README: Production install, Docker).
#   docker build -t knowledge-store .
#   docker run -d -p 3000:3000 -v knowledge-data:/data --name ks knowledge-store
#   docker logs ks        # the first start prints the admin key of organization "default", once

# Build stage: every dependency (TypeScript, esbuild), the build, and the release artifact (`npm run release`:
# dist/ and npm-shrinkwrap.json, no sources): the same artifact a server without Docker installs.
FROM node:20-slim AS build
WORKDIR /src
COPY . .
# `npm ci` builds too (`prepare`); npm's cache is kept between builds (BuildKit).
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
RUN npm run release -- /release && mv /release/knowledge-store-*.tgz /release/knowledge-store.tgz

# Runtime stage: the artifact and its production dependencies only (no compiler, no sources), C git (repacks,
# verify), and a non-root user. The install is the one test/release/artifact.test.ts runs on the same artifact.
FROM node:20-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /release/knowledge-store.tgz /tmp/knowledge-store.tgz
RUN tar -xzf /tmp/knowledge-store.tgz --strip-components=1 -C /app \
 && rm /tmp/knowledge-store.tgz \
 && npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force
# Listen on every interface of the container; the data lives in the volume. Two glibc malloc arenas, as
# `npm start` sets them: with glibc's default (up to 8 per core) V8's helper threads keep ~65 MiB they freed
# (README: Configuration).
ENV HOST=0.0.0.0 PORT=3000 KNOWLEDGE_DATA_DIR=/data NODE_ENV=production MALLOC_ARENA_MAX=2
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
EXPOSE 3000
# The node image's unprivileged user (uid 1000); the application files stay root's, read-only to it.
USER node
# The slim image has no curl: node's fetch asks /healthz (liveness: the process and its event loop).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# What `npm start` runs (its MALLOC_ARENA_MAX is the ENV above), without npm in between: node is PID 1 and gets docker stop's SIGTERM itself, so
# requests in flight finish and the server exits 0 (npm's prestart only checks that dist/ is there).
CMD ["node", "dist/src/cli/main.js", "serve"]
