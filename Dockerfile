# syntax=docker/dockerfile:1
# One image for every role. The default command runs role "all" (API +
# workers in one process); docker-compose.yml runs the api and worker
# entrypoints as separate services from this same image.

# ---- build: compile TypeScript, then drop dev dependencies ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime ----
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
# DATA_DIR holds the blob store, the development issuer's key and (without
# DATABASE_URL) the embedded database. It is created here so a fresh named
# volume mounted on it belongs to the unprivileged user.
RUN mkdir -p /data && chown node:node /data
COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/config ./config
COPY --from=build --chown=node:node /app/openapi ./openapi
USER node
VOLUME ["/data"]
EXPOSE 8080
# The slim image has no curl: ask Node itself.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM starts the ordered shutdown (stop intake, drain workers, close
# queues, Redis, database); give it time with `docker stop -t` /
# compose's stop_grace_period.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/entrypoints/server.js"]
