# kube-cache-proxy container image. Multi-stage: build on Debian 12 with the same
# install script the README and CI use, ship only the stripped binary and its
# shared libraries on a slim Debian 12 runtime, as a non-root user.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh --build-only
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCP_BENCH=OFF \
 && cmake --build /build --target kube-cache-proxy \
 && strip /build/bin/kube-cache-proxy

FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libcpp-httplib0.11 libsimdjson14 \
      libssl3 libyaml-cpp0.7 libspdlog1.10 libfmt9 libprometheus-cpp-core1.0 zlib1g liblz4-1 libprotobuf-lite32 libnghttp2-14 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/kube-cache-proxy /usr/local/bin/kube-cache-proxy
USER 65532:65532
EXPOSE 8001
ENTRYPOINT ["/usr/local/bin/kube-cache-proxy"]
