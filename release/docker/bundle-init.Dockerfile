# bundle-init, for a user with Docker (from the project's root):
#   docker build -f release/docker/bundle-init.Dockerfile -t bundle-init:1.35.0 .
# Debian's static busybox with the applets the init container runs (sh, mkdir, cp, ls, cat): what
# `make release` builds without a daemon.
FROM docker.io/library/debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends busybox-static \
 && mkdir -p /root-fs/bin /root-fs/tmp /root-fs/home/nonroot /root-fs/etc \
 && cp /bin/busybox /root-fs/bin/busybox \
 && for applet in sh cp mkdir ls cat; do ln -s busybox /root-fs/bin/$applet; done \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /root-fs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /root-fs/etc/group \
 && chmod 1777 /root-fs/tmp

FROM scratch
COPY --from=build /root-fs /
ENV PATH=/bin
USER 65532:65532
WORKDIR /
