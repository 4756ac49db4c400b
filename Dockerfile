# fedop-manager's image for users with a registry: `make docker-build
# docker-push IMG=<registry>/fedop-manager:<tag>`. The static binary is built
# in a Go image and copied into distroless/static, run as its non-root user,
# as kubebuilder scaffolds. (Offline, as in the labs and CI, the image is
# built FROM scratch from a binary built on the machine instead:
# hack/kind/images.sh.)
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
# The version and commit `fedop-manager --version` prints (the Makefile
# passes `git describe` and `git rev-parse HEAD`).
ARG VERSION=dev
ARG COMMIT=unknown

WORKDIR /workspace
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY federation/ federation/
COPY internal/ internal/
COPY member/ member/

# GOARCH is left empty when TARGETARCH is (a plain `docker build`), so the
# binary is built for the builder's platform.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags "-s -w -X github.com/fedop-io/fedop/internal/version.version=${VERSION} -X github.com/fedop-io/fedop/internal/version.commit=${COMMIT}" \
    -o fedop-manager ./cmd/fedop-manager

# distroless/static has CA certificates, /etc/passwd with user nonroot
# (65532) and nothing else: no shell, no package manager.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/fedop-manager /fedop-manager
USER 65532:65532
ENTRYPOINT ["/fedop-manager"]
