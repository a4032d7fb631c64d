# Pigeon in a container: the single binary on a minimal glibc base, as a non-root user, its data
# in the /data volume. Build: docker build -t pigeon .   Run:
#   docker run -d -p 8080:8080 -v pigeon-data:/data --name pigeon pigeon
#   docker logs pigeon      # the first start prints the owner's API key and setup link
# compose.yaml runs it too, alone on SQLite or as two replicas on PostgreSQL behind a proxy.

# The build: Node and npm install the pinned toolchain (Bun comes from npm) and compile the binary.
FROM node:20-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && mkdir -p /owned/data /owned/keys

# What runs: glibc and nothing else the binary does not use (no shell, no package manager).
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /src/dist/pigeon /usr/local/bin/pigeon
# /data (and /keys, for replicas sharing a key file) belong to the user Pigeon runs as, so the
# volumes mounted there start out writable by it.
COPY --from=build --chown=65532:65532 /owned/ /
ENV PIGEON_DATA_DIR=/data \
    PIGEON_HOST=0.0.0.0 \
    PIGEON_PORT=8080
# The distroless "nonroot" user (65532); Pigeon makes its files 0600 and the directory 0700.
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
# `pigeon health` asks the server's /health over HTTP and exits 0 when it answers healthy.
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 CMD ["/usr/local/bin/pigeon", "health"]
# SIGTERM: Pigeon stops listening, finishes the calls in flight (up to 10 s) and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/pigeon"]
CMD ["serve"]
