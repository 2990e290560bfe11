# OPA as the platform runs it, for a user with Docker (from the project's root):
#   docker build -f release/docker/opa.Dockerfile -t opa:1.22.0-static .
# The static binary built from the pinned module (tools/go/opa, as tools/install.sh does), Debian's
# CA certificates, one user: what `make release` builds without a daemon.
FROM docker.io/library/golang:1.26-bookworm AS build
COPY tools/go/opa /src
WORKDIR /src
RUN v=$(go list -m -f '{{.Version}}' github.com/open-policy-agent/opa) \
 && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -o /opa \
      -ldflags "-s -w -X github.com/open-policy-agent/opa/v1/version.Version=${v#v}" github.com/open-policy-agent/opa \
 && mkdir -p /root-fs/etc/ssl/certs /root-fs/tmp /root-fs/home/nonroot \
 && cp /etc/ssl/certs/ca-certificates.crt /root-fs/etc/ssl/certs/ \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /root-fs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /root-fs/etc/group \
 && chmod 1777 /root-fs/tmp

FROM scratch
COPY --from=build /root-fs /
COPY --from=build /opa /opa
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/opa"]
CMD ["run"]
