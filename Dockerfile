# The greenops image: the scheduler, the controller and the CLI, for a user with Docker:
#   docker build --build-arg VERSION=0.1.0 -t greenops:0.1.0 .
# `make release` builds the same image here without a daemon (release/images.py): the same Debian
# and packages, the same locked wheels (release/requirements.lock, hashes required), the same venv,
# user, environment and entrypoint. tests/release/test_dockerfiles.py keeps the two equal.
FROM docker.io/library/debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
# pip and the build tools stay in this stage: the venv the final stage copies has neither
RUN python3 -m venv /build \
 && /build/bin/pip install --no-cache-dir build==1.3.0 \
 && /build/bin/python -m build --wheel --outdir /wheels /src \
 && python3 -m venv --without-pip /opt/greenops \
 && /build/bin/pip --python /opt/greenops/bin/python install --no-cache-dir --require-hashes -r /src/release/requirements.lock \
 && /build/bin/pip --python /opt/greenops/bin/python install --no-cache-dir --no-deps /wheels/greenops_platform-*.whl

FROM docker.io/library/debian:bookworm-slim
ARG VERSION
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/greenops /opt/greenops
ENV PATH=/opt/greenops/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
LABEL org.opencontainers.image.title="greenops: the scheduler, the controller and the CLI" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/greenops-platform/greenops-platform" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/opt/greenops/bin/greenops-scheduler"]
