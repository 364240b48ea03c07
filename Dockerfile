# weft as a container image: a static binary (no cgo) on a distroless base, run as a non-root user.
#   docker build -t weft .
#   docker run --rm -p 8080:8080 -v "$PWD/agents:/agents:ro" weft serve --addr 0.0.0.0:8080
# docs/container.md has the two-node compose file and what the image holds.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/weft ./cmd/weft \
 && mkdir -p /out/data

# distroless/static: CA certificates and time zones, no shell and no package manager. Declarative
# `kind: command` tools run programs, so a project that has them builds FROM this image and adds
# the programs it needs.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/weft /usr/local/bin/weft
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
ENV WEFT_DIR=/agents WEFT_DB=/data/weft.db
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/weft"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
