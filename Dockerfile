# mediagate's production image: the compiled server, its production dependencies, and the media
# tools from Debian. Build: docker build -t mediagate .   Run: see docker-compose.yml and the README
# (alone: docker run --init -p 4000:4000 -e API_KEY_PEPPER=... -e DATABASE_URL=... mediagate).
# The three stages share one base, so native parts of node_modules match the runtime's libraries.

# Build: every dependency (TypeScript, esbuild), then the server (dist/) and the account area (dist/account-ui).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
# Only the product's sources: the benchmark (bench/, built into dist-bench/) never enters the image.
COPY src ./src
# The account area's GraphQL types and trusted documents are generated from the schema (ui/codegen.mjs).
COPY schema ./schema
COPY ui ./ui
RUN npm run build

# Production dependencies only, installed apart so that no build tool reaches the runtime; without
# what Node never loads when it runs them: source maps, TypeScript declarations and @types (about
# 65 MB of the 180).
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
    && find node_modules -type f \( -name '*.js.map' -o -name '*.mjs.map' -o -name '*.cjs.map' -o -name '*.d.ts' -o -name '*.d.mts' \
        -o -name '*.d.cts' -o -name '*.d.ts.map' -o -name '*.d.mts.map' -o -name '*.d.cts.map' \) -delete \
    && rm -rf node_modules/@types

# Runtime: Node 24 runs dist/ directly; ffmpeg/ffprobe, yt-dlp and PocketSphinx (the offline
# recogniser and its US-English model) from Debian. ca-certificates: the slim base has none, and
# yt-dlp and ffmpeg verify TLS against the system's store.
FROM node:24-bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates ffmpeg yt-dlp pocketsphinx pocketsphinx-en-us \
    && rm -rf /var/lib/apt/lists/*
# Two glibc malloc arenas instead of one per thread that touched malloc, each holding on to what it
# freed: about 25 MB less resident under load, for the same throughput (README, Run in production).
ENV NODE_ENV=production \
    MEDIAGATE_DATA_DIR=/var/lib/mediagate \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# package.json says "type": "module", which makes Node load dist/ as ES modules.
COPY package.json ./
COPY bin ./bin
COPY schema ./schema
# The code stays root's and read-only to the server; it may write only its data directory (the
# embedded database when DATABASE_URL is unset) and /tmp (media being transcribed).
RUN mkdir -p /var/lib/mediagate && chown node:node /var/lib/mediagate
USER node
EXPOSE 4000
STOPSIGNAL SIGTERM
# No curl in the slim image: Node's own fetch asks /readyz (database reachable). The start period
# only delays counting failures (the first success marks it healthy): on a busy two-core machine a
# gateway took 70 to 90 s to migrate and listen, and `docker compose up` fails at once when a
# dependency turns unhealthy. Starting a node process alone took more than 5 s there.
HEALTHCHECK --interval=10s --timeout=10s --start-period=180s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/readyz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The heap flags are npm start's (package.json; a test keeps them equal): a smaller young generation and
# an earlier full collection, for a server's short-lived garbage. See the README's Run in production section.
ENTRYPOINT ["node", "--max-semi-space-size=8", "--heap-growing-percent=30", "dist/cli/main.js"]
CMD ["serve"]
