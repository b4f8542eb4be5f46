# syntax=docker/dockerfile:1

# payoutd image: one static binary on distroless. The same image runs every
# subcommand (api, worker, migrate, admin ...); docker-compose.yml picks one.

FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath

# Dependencies first, so code changes reuse this layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -ldflags="-s -w" -o /out/payoutd ./cmd/payoutd

# static-debian12 carries CA certificates and tzdata; :nonroot runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/payoutd /payoutd
USER nonroot:nonroot
ENV HTTP_ADDR=:8080
EXPOSE 8080
ENTRYPOINT ["/payoutd"]
CMD ["api"]
