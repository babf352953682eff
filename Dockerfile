# syntax=docker/dockerfile:1
#
# krmsync controller image.
#   docker build -t ghcr.io/krmsync/krmsync:latest .
# The binary links OpenSSL (git2's https transport) and zlib (libgit2)
# statically, so the runtime image needs glibc and libgcc only
# (distroless/cc); the build fails if either is linked dynamically.

FROM rust:1.89-bookworm AS builder
RUN apt-get update \
 && apt-get install -y --no-install-recommends pkg-config libssl-dev \
 && rm -rf /var/lib/apt/lists/*
ENV OPENSSL_STATIC=1 \
    LIBZ_SYS_STATIC=1 \
    CARGO_TERM_COLOR=never
WORKDIR /src

# Dependencies first: this layer is rebuilt only when Cargo.toml or
# Cargo.lock change. Stub targets make `cargo build` compile just the
# dependencies. The test and bench targets Cargo.toml declares (e2e/,
# benches/) are not in the build context but must exist for the manifest
# to load, so they stay as empty stubs; the image never builds them.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src e2e benches examples/functions \
 && echo 'fn main() {}' > src/main.rs \
 && echo 'fn main() {}' > examples/functions/set_labels.rs \
 && echo 'fn main() {}' > examples/functions/hello_generator.rs \
 && touch src/lib.rs e2e/main.rs benches/reconcile.rs \
 && cargo build --release --locked \
 && rm -rf src target/release/krmsync target/release/deps/krmsync-* \
           target/release/deps/libkrmsync-* target/release/.fingerprint/krmsync-*

# The sources.
COPY src ./src
RUN cargo build --release --locked --bin krmsync \
 && cp target/release/krmsync /krmsync \
 && ! ldd /krmsync | grep -E 'libssl|libcrypto|libz'

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /krmsync /krmsync
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/krmsync"]
CMD ["controller"]
