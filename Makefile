# Switchboard's front door: `make help` lists the targets.
# `make ci` runs exactly what .ci/run (CI) runs.

SHELL := /bin/bash
TOOLS := $(CURDIR)/.tools
BUF := $(TOOLS)/node_modules/.bin/buf
CARGO ?= cargo
DEV_JWT_SECRET ?= switchboard-dev-secret-change-me
MCP_LISTEN ?= 127.0.0.1:50051
RUNS_LISTEN ?= 127.0.0.1:50052
export SWITCHBOARD_TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/test

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

.PHONY: tools
tools: ## Install buf, the Python gRPC tools and the reference MCP server into .tools/
	@bash scripts/install-tools.sh

.PHONY: postgres
postgres: ## Make sure the test PostgreSQL answers on 127.0.0.1:5432
	@bash scripts/ensure-postgres.sh

.PHONY: build
build: ## Build both services
	$(CARGO) build --workspace --bins

.PHONY: run
run: build ## Run both services with embedded SQLite under .data/ (Ctrl-C stops both)
	@echo "dev token (admin of dev-org):"
	@SWITCHBOARD_JWT_SECRET=$(DEV_JWT_SECRET) ./target/debug/switchboard-token --org dev-org --user dev-user --role admin
	@trap 'kill 0' INT TERM EXIT; \
	SWITCHBOARD_JWT_SECRET=$(DEV_JWT_SECRET) SWITCHBOARD_LOG_FORMAT=pretty \
	  ./target/debug/mcp-service --listen $(MCP_LISTEN) & \
	SWITCHBOARD_JWT_SECRET=$(DEV_JWT_SECRET) SWITCHBOARD_LOG_FORMAT=pretty \
	  SWITCHBOARD_MCP_SERVICE_URL=http://$(MCP_LISTEN) \
	  ./target/debug/runs-service --listen $(RUNS_LISTEN) & \
	wait

.PHONY: run-mcp
run-mcp: ## Run mcp-service alone (embedded SQLite)
	SWITCHBOARD_JWT_SECRET=$(DEV_JWT_SECRET) SWITCHBOARD_LOG_FORMAT=pretty \
	  $(CARGO) run --bin mcp-service -- --listen $(MCP_LISTEN)

.PHONY: run-runs
run-runs: ## Run runs-service alone (embedded SQLite)
	SWITCHBOARD_JWT_SECRET=$(DEV_JWT_SECRET) SWITCHBOARD_LOG_FORMAT=pretty \
	  SWITCHBOARD_MCP_SERVICE_URL=http://$(MCP_LISTEN) \
	  $(CARGO) run --bin runs-service -- --listen $(RUNS_LISTEN)

.PHONY: test
test: tools postgres ## Run every test, on SQLite and PostgreSQL
	$(CARGO) test --workspace --locked

.PHONY: fmt
fmt: ## Format the code
	$(CARGO) fmt --all

.PHONY: fmt-check
fmt-check: ## Check formatting
	$(CARGO) fmt --all --check

.PHONY: clippy
clippy: ## Lint the Rust code, warnings are errors
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

.PHONY: proto-lint
proto-lint: tools ## Lint the protobuf contracts (buf STANDARD)
	cd proto && $(BUF) lint

.PHONY: proto-breaking
proto-breaking: tools ## Check the contracts for breaking changes against main
	cd proto && $(BUF) breaking --against '$(CURDIR)/.git#branch=main,subdir=proto'

.PHONY: lint
lint: fmt-check clippy proto-lint ## All lints

.PHONY: ci
ci: lint test ## What CI runs: lints, then the tests on SQLite and PostgreSQL
