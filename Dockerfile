# The controller's image: the karpenter binary, static, on distroless as a non-root user. No
# image is published; build and push your own:
#
#   docker build -t REGISTRY/karpenter:v0.1.0 --build-arg VERSION=v0.1.0 .
#   docker push REGISTRY/karpenter:v0.1.0
FROM golang:1.26 AS build
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY config config
COPY pkg pkg
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/karpenter ./cmd/karpenter

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/karpenter /usr/local/bin/karpenter
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/karpenter"]
