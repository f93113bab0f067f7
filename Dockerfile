# The fleetsim CLI and library as an image: Debian 12, the CLI-only build (no tests, no Python
# module, no CUDA): 72 compilation units, about 9.5 CPU-minutes. docs/library.md, "A container".
#   docker build -t fleetsim .
#   docker run --rm -v "$PWD:/work" -w /work fleetsim fleetsim check capacity/chat-fleet.yaml
FROM debian:12 AS build
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh --cli && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DFLEETSIM_TESTS=OFF -DFLEETSIM_PYTHON=OFF -DFLEETSIM_CUDA=OFF \
 && cmake --build /build \
 && cmake --install /build --prefix /opt/fleetsim

# The CLI (it carries yaml-cpp, fmt and libstdc++: it needs only the C library), and git for the
# pipelines that read a baseline from it.
FROM debian:12-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/fleetsim /usr/local
RUN fleetsim --version
CMD ["fleetsim", "--help"]
