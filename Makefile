# payoutd developer tasks. `make` (or `make help`) lists them.
#
# Tests run on SQLite and miniredis unless TEST_DATABASE_URL and
# TEST_REDIS_URL are set in the environment (make passes them through), e.g.
#   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/payoutd_ci?sslmode=disable \
#   TEST_REDIS_URL=redis://127.0.0.1:6379/9 make test   (databases 9-15 are written and emptied)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
BIN      ?= bin/payoutd
FUZZTIME ?= 3s
SOAK_DURATION ?= 30m
LOAD_ARGS ?=
# make sim: seeds SEED_FROM, SEED_FROM+1, … (SEEDS of them), stopped after
# SIM_DURATION; naming SEEDS on the command line runs them all
# (make sim SEEDS=100000 overnight).
SEEDS     ?= 100000
SEED_FROM ?= 1
SIM_DURATION ?= $(if $(filter command line,$(origin SEEDS)),0,2m)

.PHONY: help dev test unit fuzz sim sim-defects faults soak model build migrate lint vuln load bench docker

help: ## List the targets
	@echo "usage: make <target>"
	@echo
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) \
		| awk 'BEGIN {FS = ":.*## "} {printf "  %-11s %s\n", $$1, $$2}'
	@echo
	@echo "variables: FUZZTIME=$(FUZZTIME) (per fuzz target), SOAK_DURATION=$(SOAK_DURATION), TEST_DATABASE_URL, TEST_REDIS_URL"

dev: ## Run everything in one process with throwaway backends (go run ./cmd/payoutd dev)
	$(GO) run ./cmd/payoutd dev

test: ## Unit tests with the race detector, every fuzz target for FUZZTIME, then the simulation for SIM_DURATION
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory sim

# -timeout: the api package's integration suite under the race detector
# on SQLite takes close to go test's default 10 minutes on a slow 2-core
# machine; a hung test still fails, after 30.
unit: ## Unit and integration tests only (go test -race -count=1 -timeout 30m ./...)
	$(GO) test -race -count=1 -timeout 30m ./...

# scripts/fuzz.sh discovers the targets with `go test -list` and runs each
# for FUZZTIME; see its header for the one Go toolchain failure it forgives.
fuzz: ## Run each fuzz target (func FuzzXxx) for FUZZTIME
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

sim: ## The deterministic simulation (internal/sim): SEEDS seeds from SEED_FROM, for at most SIM_DURATION (2m unless SEEDS is given)
	$(GO) run ./cmd/payoutsim -from $(SEED_FROM) -seeds $(SEEDS) -duration $(SIM_DURATION)

sim-defects: ## Show make sim catching three defects put back into a copy of the code (scripts/sim-defects.sh)
	GO=$(GO) scripts/sim-defects.sh

faults: ## Every fault scenario (internal/faults) on loopback; ends with one summary line each
	GO=$(GO) scripts/faults.sh

# scripts/soak.sh: PostgreSQL and Redis of the soak's own on loopback
# ports; SOAK_SEED replays a run's fault times, SOAK_PLOT names the PNG.
soak: ## A bounded soak (SOAK_DURATION, 30m): api and worker at half their measured capacity, faults at random times; a table, a plot, verdicts
	GO=$(GO) SOAK_DURATION=$(SOAK_DURATION) scripts/soak.sh

# The model (docs/model.md) is checked by spin and gcc, which CI installs;
# `make unit` runs the same test with the others.
model: ## Check the submit protocol's model with spin (go test ./docs/model/)
	$(GO) test -count=1 ./docs/model/

build: ## Build a static binary into bin/payoutd
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/payoutd

migrate: ## Apply database migrations (needs DATABASE_URL)
	$(GO) run ./cmd/payoutd migrate

# scripts/importcheck.sh: the domain packages (models, payouts, payments,
# webhooks, ledger, vendors) import no gin, asynq or Prometheus, nor
# internal/database or its drivers, even transitively, nor anything above
# them; its --self-test shows the check fails when models imports
# internal/database or payouts imports gin (a go list overlay: the tree is
# not touched).
# scripts/doclinks.sh: every relative link of README.md and docs/*.md
# names a file of the repository (and, with #fragment, a heading of it).
lint: ## Fail on unformatted files (gofmt -l), domain imports of transport/infrastructure/the database layer (scripts/importcheck.sh, and its self-test), broken doc links (scripts/doclinks.sh), then go vet and staticcheck (staticcheck.conf)
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	@GO=$(GO) scripts/importcheck.sh
	@GO=$(GO) scripts/importcheck.sh --self-test
	@scripts/doclinks.sh
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

vuln: ## Check dependencies for known vulnerabilities (govulncheck)
	$(GO) run golang.org/x/vuln/cmd/govulncheck@latest ./...

load: ## Run the load tool (go run ./cmd/loadtest; flags in LOAD_ARGS)
	$(GO) run ./cmd/loadtest $(LOAD_ARGS)

bench: ## The money write paths of one wallet, one connection (ledger benchmarks; PostgreSQL with TEST_DATABASE_URL)
	$(GO) test -run '^$$' -bench . -benchtime 2s ./ledger/

docker: ## Build and start the stack (postgres, redis, migrate, api, worker)
	docker compose up --build
