# syntax=docker/dockerfile:1
# gpuscaler container image: a Debian 12 build stage that installs the build
# dependencies with the same script CI uses (scripts/setup.sh) and builds the
# release preset, then a slim runtime stage with only the shared libraries
# the binary links, the binary, the instance catalogs and example policies,
# running as the non-root user 65532.
#
#   docker build -t gpuscaler:0.1.0 .
#
# Kubernetes: config/kubernetes (docs/kubernetes.md) mounts the daemon config
# and the policy and passes --config; the default CMD expects the config at
# /etc/gpuscaler/gpuscaler.yaml.

FROM debian:12 AS build
WORKDIR /src
# The setup script alone first, so the dependency layer survives source edits.
COPY scripts/setup.sh scripts/setup.sh
RUN ./scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN --mount=type=cache,target=/root/.cache/ccache \
    cmake --preset release -DGPUSCALER_BUILD_TESTS=OFF -DGPUSCALER_BUILD_BENCH=OFF \
 && cmake --build --preset release --target gpuscaler \
 && ./build/release/gpuscaler version
# The Debian packages that provide every shared library the binary loads, for
# the runtime stage. Debian 12 merges /lib into /usr/lib while dpkg records
# one of the two spellings, so look each library up under both. (No pipe
# after the loop: /bin/sh has no pipefail, and a miss must fail the build.)
RUN set -eu; \
    for lib in $(ldd build/release/gpuscaler | awk '/=> \//{print $3}'); do \
      dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null \
        || { echo "no Debian package provides $lib" >&2; exit 1; }; \
    done > /tmp/lib-owners.txt; \
    cut -d: -f1 /tmp/lib-owners.txt | sort -u > /runtime-packages.txt; \
    cat /runtime-packages.txt

FROM debian:12-slim
COPY --from=build /runtime-packages.txt /tmp/runtime-packages.txt
# ca-certificates: TLS to the AWS APIs, the Kubernetes API server and HTTPS signal sources.
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --gid 65532 gpuscaler \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin gpuscaler \
 && mkdir -p /etc/gpuscaler /var/lib/gpuscaler \
 && chown 65532:65532 /var/lib/gpuscaler
COPY --from=build /src/build/release/gpuscaler /usr/local/bin/gpuscaler
COPY --from=build /src/config/catalogs/ /usr/share/gpuscaler/catalogs/
COPY --from=build /src/policies/ /usr/share/gpuscaler/policies/
# Fail the image build, not the first pod, if a library is missing.
RUN if ldd /usr/local/bin/gpuscaler | grep 'not found'; then exit 1; fi \
 && /usr/local/bin/gpuscaler version \
 && /usr/local/bin/gpuscaler policy check /usr/share/gpuscaler/policies/training.yaml \
      --catalog /usr/share/gpuscaler/catalogs/aws.yaml
USER 65532:65532
WORKDIR /var/lib/gpuscaler
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gpuscaler"]
CMD ["run", "--config", "/etc/gpuscaler/gpuscaler.yaml"]
