# payoutd developer tasks. `make` (or `make help`) lists them.
#
# Tests run on SQLite and miniredis unless TEST_DATABASE_URL and
# TEST_REDIS_URL are set in the environment (make passes them through), e.g.
#   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/payoutd_ci?sslmode=disable \
#   TEST_REDIS_URL=redis://127.0.0.1:6379/0 make test

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
BIN      ?= bin/payoutd
FUZZTIME ?= 3s
LOAD_ARGS ?=

.PHONY: help dev test unit fuzz build migrate lint vuln load docker

help: ## List the targets
	@echo "usage: make <target>"
	@echo
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "} {printf "  %-8s %s\n", $$1, $$2}'
	@echo
	@echo "variables: FUZZTIME=$(FUZZTIME) (per fuzz target), TEST_DATABASE_URL, TEST_REDIS_URL"

dev: ## Run everything in one process with throwaway backends (go run ./cmd/payoutd dev)
	$(GO) run ./cmd/payoutd dev

test: ## Unit tests with the race detector, then every fuzz target for FUZZTIME
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory fuzz

unit: ## Unit and integration tests only (go test -race -count=1 ./...)
	$(GO) test -race -count=1 ./...

# Fuzz targets are discovered with `go test -list`, so new ones are picked
# up without editing this file. `go test -fuzz` takes one package and one
# target at a time; every target runs even after one fails. The listing is
# built with -race so that it reuses the unit tests' compiled packages (a
# plain build would compile every dependency once more: minutes when cold).
fuzz: ## Run each fuzz target (func FuzzXxx) for FUZZTIME
	@list=$$($(GO) test -race -vet=off -list '^Fuzz' ./...) || { echo "$$list"; exit 1; }; \
	targets=$$(awk '/^Fuzz/ {names = names " " $$1; next} \
		/^ok[ \t]/ {if (names != "") print $$2 names; names = ""}' <<<"$$list"); \
	if [ -z "$$targets" ]; then echo "==> fuzz: no fuzz targets found"; exit 0; fi; \
	failed=""; \
	while read -r pkg names; do \
		for name in $$names; do \
			echo "==> fuzz $$name in $$pkg for $(FUZZTIME)"; \
			$(GO) test -vet=off -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg" \
				|| failed="$$failed $$pkg.$$name"; \
		done; \
	done <<<"$$targets"; \
	if [ -n "$$failed" ]; then echo "==> fuzz FAILED:$$failed"; exit 1; fi

build: ## Build a static binary into bin/payoutd
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/payoutd

migrate: ## Apply database migrations (needs DATABASE_URL)
	$(GO) run ./cmd/payoutd migrate

lint: ## Fail on unformatted files (gofmt -l), then go vet
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...

vuln: ## Check dependencies for known vulnerabilities (govulncheck)
	$(GO) run golang.org/x/vuln/cmd/govulncheck@latest ./...

load: ## Run the load tool (go run ./cmd/loadtest; flags in LOAD_ARGS)
	$(GO) run ./cmd/loadtest $(LOAD_ARGS)

docker: ## Build and start the stack (postgres, redis, migrate, api, worker)
	docker compose up --build
