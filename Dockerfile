# syntax=docker/dockerfile:1
# Switchboard's images, for hosts with a container engine:
#   docker build --target mcp-service  -t switchboard/mcp-service .
#   docker build --target runs-service -t switchboard/runs-service .
#   docker build --target cli          -t switchboard/switchboard .
# Without an engine, `make image` builds the same images as an OCI layout
# (scripts/build-images.sh). Both: release binaries on a glibc runtime with no
# shell (distroless cc), user 65532, the catalog and migrations under
# /usr/share/switchboard (they are also built into the binaries).

ARG RUST_VERSION=1.95.0

FROM rust:${RUST_VERSION}-bookworm AS chef
RUN cargo install cargo-chef --locked --version 0.1.71
WORKDIR /src

FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

FROM chef AS builder
# The dependencies alone: this layer is rebuilt only when Cargo.toml or
# Cargo.lock change.
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --release --locked --recipe-path recipe.json
COPY . .
RUN cargo build --release --locked \
      -p switchboard-mcp-service -p switchboard-runs-service -p switchboard-auth \
      --bin mcp-service --bin stdio-sandbox --bin runs-service --bin switchboard-token \
 && mkdir -p /out/bin /out/share/catalog /out/share/migrations /out/data \
 && cp target/release/mcp-service target/release/stdio-sandbox target/release/runs-service \
       target/release/switchboard-token /out/bin/ \
 && cp services/mcp-service/catalog/predefined.toml /out/share/catalog/ \
 && cp -r services/mcp-service/migrations /out/share/migrations/mcp-service \
 && cp -r services/runs-service/migrations /out/share/migrations/runs-service

FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="Switchboard"
COPY --from=builder /out/share /usr/share/switchboard
COPY --from=builder --chown=65532:65532 /out/data /var/lib/switchboard
USER 65532:65532
WORKDIR /home/nonroot

FROM runtime AS mcp-service
LABEL org.opencontainers.image.title="mcp-service" \
      org.opencontainers.image.description="Switchboard mcp-service"
COPY --from=builder /out/bin/mcp-service /out/bin/stdio-sandbox /usr/local/bin/
EXPOSE 50051
ENTRYPOINT ["/usr/local/bin/mcp-service"]

FROM runtime AS runs-service
LABEL org.opencontainers.image.title="runs-service" \
      org.opencontainers.image.description="Switchboard runs-service"
COPY --from=builder /out/bin/runs-service /usr/local/bin/
EXPOSE 50052
ENTRYPOINT ["/usr/local/bin/runs-service"]

FROM runtime AS cli
LABEL org.opencontainers.image.title="switchboard" \
      org.opencontainers.image.description="Switchboard switchboard-token"
COPY --from=builder /out/bin/switchboard-token /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/switchboard-token"]
