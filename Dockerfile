# Floorwatch: a small runtime image on Node 24 (the current LTS) with production dependencies only.
#   docker build -t floorwatch .
#   docker run -d --name floorwatch --restart unless-stopped -v floorwatch-data:/data --env-file .env \
#     -p 127.0.0.1:9464:9464 floorwatch
# docs/operations.md says more (health checks, Telegram webhooks, backups, upgrades).

FROM node:24-bookworm-slim AS build
WORKDIR /app
# Every dependency: esbuild (and valibot, viem, which the build bundles) are development dependencies.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY commands ./commands
# Compiled, bundled JavaScript in dist/ (no TypeScript at run time), then node_modules pruned to the
# packages dist/ loads at run time (`dependencies`): about 58 MB instead of 176 MB.
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

FROM node:24-bookworm-slim AS runtime
# Fonts for the digest charts; tini forwards signals and reaps children.
RUN apt-get update \
 && apt-get install -y --no-install-recommends fonts-dejavu-core tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    FLOORWATCH_DATA_DIR=/data \
    FLOORWATCH_HTTP_PORT=9464 \
    FLOORWATCH_HTTP_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The database migrations (run at start when FLOORWATCH_DATABASE_URL is set).
COPY src/store/pg/migrations ./src/store/pg/migrations
# The wallet verification page's script and style (served when FLOORWATCH_PUBLIC_URL is set).
COPY src/roles/page ./src/roles/page
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# 9464: health and metrics (FLOORWATCH_HTTP_PORT). 8443: the Telegram webhook listener, in webhook
# mode only (FLOORWATCH_TELEGRAM_WEBHOOK_PORT; publish it behind the TLS proxy Telegram posts to).
# 8787: the wallet verification page, with FLOORWATCH_PUBLIC_URL and FLOORWATCH_WEB_HOST=0.0.0.0.
EXPOSE 9464 8443 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.FLOORWATCH_HTTP_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--enable-source-maps", "--max-semi-space-size=4", "dist/src/main.js"]
