# MLServer with the forecasters' serving pins, for a user with Docker (from the project's root):
#   docker build -f release/docker/mlserver-forecasters.Dockerfile -t mlserver-forecasters:1.7.1 .
# The same image `make release` builds without a daemon: Debian, a venv of release/mlserver.lock
# (tools/mlserver/requirements.txt resolved, hashes required), user 65532.
FROM docker.io/library/debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
COPY release/mlserver.lock /tmp/mlserver.lock
RUN python3 -m venv /build \
 && python3 -m venv --without-pip /opt/mlserver \
 && /build/bin/pip --python /opt/mlserver/bin/python install --no-cache-dir --require-hashes -r /tmp/mlserver.lock

FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/mlserver /opt/mlserver
ENV PATH=/opt/mlserver/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1
USER 65532:65532
WORKDIR /tmp
ENTRYPOINT ["/opt/mlserver/bin/mlserver", "start"]
CMD ["/mnt/models"]
