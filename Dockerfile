# Floorwatch: a small runtime image on Node 20 with production dependencies only.
#   docker build -t floorwatch .
#   docker run -d --name floorwatch -v floorwatch-data:/data --env-file .env floorwatch

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY src ./src
COPY commands ./commands
# Compiled, bundled JavaScript in dist/ (esbuild is a production dependency): no TypeScript at run time.
RUN npm run build

FROM node:20-bookworm-slim AS runtime
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
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.FLOORWATCH_HTTP_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--enable-source-maps", "--max-semi-space-size=4", "dist/src/main.js"]
