# Switchboard's front door: `make help` lists the targets.
# `make ci` runs exactly what .ci/run (CI) runs; .ci/run also turns off
# incremental compilation and removes the fuzz build once it has run.

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

.PHONY: tmux
tmux: ## Make sure tmux is installed (the CLI's terminal test drives chat in a tmux pane)
	@bash scripts/ensure-tmux.sh

.PHONY: postgres
postgres: ## Make sure the test PostgreSQL answers on 127.0.0.1:5432
	@bash scripts/ensure-postgres.sh

.PHONY: seaweedfs
seaweedfs: ## Install the pinned SeaweedFS (an S3-compatible store the data-source tests start) into .tools/
	@bash scripts/ensure-seaweedfs.sh

.PHONY: objstore-1g
objstore-1g: seaweedfs ## A 1 GB CSV imported into SeaweedFS and queried with the query worker's memory ceiling at 512 MiB (release build; prints the times and the worker's peak memory)
	SWITCHBOARD_OBJSTORE_CSV_MB=1024 SWITCHBOARD_OBJSTORE_CEILING_MB=512 $(CARGO) test --release --locked \
	  -p switchboard-runs-service --test it -- --exact --nocapture \
	  datasource_objects::a_table_larger_than_the_query_memory_streams_from_the_store

EXAMPLE_MCP_LISTEN ?= 127.0.0.1:8931
SCRIPTED_MODEL_LISTEN ?= 127.0.0.1:8090
# The model: a scripted one on this machine unless a real endpoint is given
# (see README, SWITCHBOARD_MODEL_PROVIDERS).
SWITCHBOARD_MODEL_PROVIDERS ?= scripted=openai,http://$(SCRIPTED_MODEL_LISTEN)/v1
# Local runs reach MCP servers on this machine and use a publicly known
# sealing key; never set these in production.
DEV_ENV = SWITCHBOARD_JWT_SECRET=$(DEV_JWT_SECRET) SWITCHBOARD_LOG_FORMAT=pretty \
	SWITCHBOARD_DEV_MODE=true SWITCHBOARD_OUTBOUND_ALLOW=127.0.0.1/32,::1/128 \
	SWITCHBOARD_STDIO_ALLOW='$(CURDIR)/target/debug/example-mcp-server --transport stdio env=EXAMPLE_API_KEY'

.PHONY: build
build: ## Build both services and the bundled example MCP server
	$(CARGO) build --workspace --bins

.PHONY: run
run: build ## Run both services (embedded SQLite under .data/) and the example MCP server; Ctrl-C stops all
	@echo "dev token (admin of dev-org):"
	@SWITCHBOARD_JWT_SECRET=$(DEV_JWT_SECRET) ./target/debug/switchboard-token --org dev-org --user dev-user --role admin
	@echo "example MCP server: http://$(EXAMPLE_MCP_LISTEN)/mcp"
	@echo "model providers: $(SWITCHBOARD_MODEL_PROVIDERS)"
	@trap 'kill 0' INT TERM EXIT; \
	./target/debug/example-mcp-server --transport http --listen $(EXAMPLE_MCP_LISTEN) & \
	./target/debug/scripted-model --listen $(SCRIPTED_MODEL_LISTEN) --tool example__echo \
	  --arguments '{"text":"hello from the example MCP server"}' --reply "The example server answered." & \
	$(DEV_ENV) ./target/debug/mcp-service --listen $(MCP_LISTEN) & \
	$(DEV_ENV) SWITCHBOARD_MCP_SERVICE_URL=http://$(MCP_LISTEN) \
	  SWITCHBOARD_MODEL_PROVIDERS='$(SWITCHBOARD_MODEL_PROVIDERS)' \
	  ./target/debug/runs-service --listen $(RUNS_LISTEN) & \
	wait

.PHONY: demo
demo: ## The whole job: both services, the example MCP server and a model; an agent uses them in a conversation through the CLI
	@bash scripts/demo.sh

.PHONY: demo-check
demo-check: ## The demo without a terminal, on the scripted model: checks the conversation's transcript, then stops everything
	@DEMO_NONINTERACTIVE=1 bash scripts/demo.sh

.PHONY: run-mcp
run-mcp: build ## Run mcp-service alone (embedded SQLite)
	$(DEV_ENV) ./target/debug/mcp-service --listen $(MCP_LISTEN)

.PHONY: run-runs
run-runs: build ## Run runs-service alone (embedded SQLite)
	$(DEV_ENV) SWITCHBOARD_MCP_SERVICE_URL=http://$(MCP_LISTEN) \
	  SWITCHBOARD_MODEL_PROVIDERS='$(SWITCHBOARD_MODEL_PROVIDERS)' ./target/debug/runs-service --listen $(RUNS_LISTEN)

.PHONY: bench
bench: bench-mcp bench-runs bench-data bench-fairness bench-org-limits bench-execute-tool bench-mcp-client bench-mcp-endpoint bench-soak bench-policy bench-guardrails bench-audit ## Run every benchmark (release builds; see BENCHMARKS.md)

.PHONY: bench-mcp
bench-mcp: ## ExecuteTool through mcp-service vs direct, over mutual TLS vs plaintext, sessions vs connect-per-call, idle-session RSS
	$(CARGO) build --release --locked -p switchboard-example-mcp-server --bin example-mcp-server
	$(CARGO) bench -p switchboard-mcp-service --bench execute_tool

.PHONY: bench-policy
bench-policy: ## Tool policy decisions with 0, 1, 100 and 1,000 rules; ExecuteTool with 1,000 rules vs none
	$(CARGO) bench -p switchboard-mcp-service --bench policy

.PHONY: bench-guardrails
bench-guardrails: ## The guardrails' detectors over a 64 KiB result; ExecuteTool of 64 KiB with them on vs off
	$(CARGO) bench -p switchboard-mcp-service --bench guardrails

.PHONY: bench-audit
bench-audit: postgres ## ExecuteTool with the audit trail off and on, SQLite and PostgreSQL; one append's cost
	$(CARGO) bench -p switchboard-mcp-service --bench audit

.PHONY: bench-runs
# The runs benchmark builds the release binaries it starts itself, one
# package at a time (workspace_binary): built together here, their features
# would unify differently and the benchmark would build everything again.
bench-runs: ## Orchestration overhead per step, 500 concurrent runs, discovery of 20 slow integrations
	$(CARGO) bench -p switchboard-e2e --bench runs

.PHONY: bench-execute-tool
bench-execute-tool: ## ExecuteTool under load from outside: release mcp-service vs the upstream direct, HTTP and stdio, and vs the Python mcp-proxy over stdio, 1 and 16 callers
	bash scripts/bench-execute-tool.sh

.PHONY: bench-soak
bench-soak: postgres ## 500 concurrent runs × 5 tool calls for 3 minutes over two replicas of each service on PostgreSQL, an mcp-service replica restarted at half time
	$(CARGO) build --release --locked -p switchboard-mcp-service --bin mcp-service -p switchboard-runs-service --bin runs-service \
	  -p switchboard-example-mcp-server --bin example-mcp-server
	$(CARGO) bench -p switchboard-e2e --bench soak

.PHONY: bench-tracing
bench-tracing: ## ExecuteTool and runs with every span exported to an in-process OTLP collector, and with nothing exported
	$(CARGO) bench -p switchboard-telemetry --bench call_spans
	bash scripts/bench-tracing.sh
	$(CARGO) bench -p switchboard-e2e --bench runs
	BENCH_TRACING=export $(CARGO) bench -p switchboard-e2e --bench runs

.PHONY: bench-mcp-client
bench-mcp-client: ## The MCP client path alone: an rmcp session as mcp-service builds it vs a bare HTTP POST, 1 and 16 callers
	$(CARGO) build --release --locked -p switchboard-example-mcp-server --bin example-mcp-server
	$(CARGO) bench -p switchboard-mcp-service --bench mcp_client

.PHONY: bench-pipeline
bench-pipeline: ## Both front doors per call, the shared side-by-side script over this tree's release build (TREES="name=dir ..." adds other builds, AGW_DIR agentgateway)
	$(CARGO) build --release --locked -p switchboard-mcp-service --bin mcp-service -p switchboard-example-mcp-server --bin example-mcp-server -p switchboard-auth --bin switchboard-token
	bash scripts/bench-pipeline/run.sh $(or $(ROUNDS),3) $(or $(SECS),10) this=$(CURDIR)/target/release $(TREES)

.PHONY: bench-services
bench-services: ## gRPC and OpenAPI integrations per call: ExecuteTool beside the same method or operation called directly, 1 and 16 callers (h2load, wrk)
	$(CARGO) build --release --locked -p switchboard-mcp-service --bin mcp-service -p switchboard-example-grpc-service --bin example-grpc-service -p switchboard-example-mcp-server --bin example-mcp-server -p switchboard-auth --bin switchboard-token
	bash scripts/bench-services/run.sh $(or $(ROUNDS),3) $(or $(SECS),5) $(CURDIR)/target/release

.PHONY: bench-pipeline-floor
bench-pipeline-floor: ## The floor of an MCP-to-MCP gateway on hyper (a byte-forwarding proxy) in agentgateway's place, beside agentgateway and both front doors (AGW_DIR: agentgateway's build)
	$(CARGO) build --release --locked -p switchboard-mcp-service --bin mcp-service -p switchboard-example-mcp-server --bin example-mcp-server -p switchboard-auth --bin switchboard-token
	bash scripts/bench-pipeline/floor.sh $(or $(ROUNDS),3) $(or $(SECS),10) $(CURDIR)/target/release

.PHONY: bench-mcp-endpoint
bench-mcp-endpoint: ## A recorded tools/call through the MCP endpoint (/mcp/integrations/{slug}) vs the same server directly, 1 and 16 callers
	$(CARGO) build --release --locked -p switchboard-mcp-service --bin mcp-service -p switchboard-example-mcp-server --bin example-mcp-server
	$(CARGO) bench --locked -p switchboard-mcp-service --bench mcp_endpoint

.PHONY: bench-connection-flood
bench-connection-flood: ## 2,000 idle and half-open connections against each of mcp-service's listeners beside a quiet organization's calls: its p50/p99 alone and during the flood
	$(CARGO) test --release --locked -p switchboard-mcp-service --test it -- connection_flood::a_flood --nocapture

.PHONY: bench-mcp-endpoint-smoke
bench-mcp-endpoint-smoke: ## CI's short run of bench-mcp-endpoint on the debug build (after make test built the binaries): that it runs, not its figures
	$(CARGO) build --workspace --locked --bins
	SWITCHBOARD_BENCH_ROUNDS=1 SWITCHBOARD_BENCH_CALLS_ONE=50 SWITCHBOARD_BENCH_CALLS_MANY=160 \
	  $(CARGO) bench --profile dev --locked --workspace --bench mcp_endpoint

.PHONY: bench-fairness
bench-fairness: ## A quiet organization's p50/p99 alone and beside a hanging server, a rate-limit flood, SQL load
	$(CARGO) build --release --locked -p switchboard-mcp-service --bin mcp-service -p switchboard-example-mcp-server --bin example-mcp-server -p switchboard-runs-service --bin runs-service
	$(CARGO) bench -p switchboard-mcp-service --bench fairness

.PHONY: bench-org-limits
bench-org-limits: ## The organization limits' cost per call, in process: admitted and refused, against no gate
	$(CARGO) bench -p switchboard-server --bench org_limits

.PHONY: bench-data
bench-data: tools ## Import of a 1,000,000-row CSV and a GROUP BY, against DuckDB
	$(CARGO) bench -p switchboard-runs-service --bench data_sources

FUZZ_SECONDS ?= 25

.PHONY: fuzz
fuzz: ## Build the fuzz targets (fuzz/) and run each for FUZZ_SECONDS; fails on a crash
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

.PHONY: fuzz-ci
fuzz-ci: ## CI's short fuzz run: an unoptimized build, 20 s per target
	bash scripts/fuzz.sh --ci

.PHONY: fuzz-long
fuzz-long: ## 1,000,000 executions per fuzz target (docs/security.md)
	bash scripts/fuzz.sh --long 1000000

.PHONY: deny
deny: ## Supply-chain checks: advisories (RustSec, offline copy in ../shared/rustsec/), licences, bans, sources (deny.toml)
	bash scripts/deny.sh

.PHONY: clients
clients: tools ## Generate the Python, TypeScript and Go clients of proto/ into examples/, then type-check and vet the examples
	bash scripts/generate-clients.sh
	cd examples/typescript && ./node_modules/.bin/tsc --noEmit
	cd examples/go && go vet ./...

.PHONY: conformance
conformance: ## The MCP conformance suite (client side, 2025-11-25 and 2026-07-28) against mcp-service
	bash scripts/conformance.sh

.PHONY: conformance-server
conformance-server: ## The conformance suite's server scenarios (both sets) against server-everything directly and through the MCP endpoint; fails when a scenario passing directly fails through the endpoint
	bash scripts/conformance-server.sh

.PHONY: conformance-under-load
conformance-under-load: ## The conformance suite 5 times in a row with every core kept busy; fails if any run fails (not in ci)
	bash scripts/conformance-under-load.sh

.PHONY: test
test: tools postgres tmux seaweedfs clients ## Run every test, on SQLite and PostgreSQL (and SeaweedFS for data sources in an object store)
	SWITCHBOARD_TEST_BINARIES_BUILT=1 $(CARGO) test --workspace --locked

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

# The last released contracts: a buf image committed in proto/, renewed by
# `make proto-release` when a version is released (docs/clients.md).
RELEASED_CONTRACTS := proto/released.binpb

.PHONY: proto-breaking
proto-breaking: tools ## Check the contracts for breaking changes against the last released ones
	cd proto && $(BUF) breaking --against '$(CURDIR)/$(RELEASED_CONTRACTS)'

.PHONY: proto-release
proto-release: tools ## Record today's contracts as the released baseline of proto-breaking (on a release only)
	cd proto && $(BUF) build --exclude-source-info -o '$(CURDIR)/$(RELEASED_CONTRACTS)'

.PHONY: size-check
size-check: ## No source file of a crate over 500 lines, no function outside tests over 60
	bash scripts/size-check.sh

.PHONY: deps-check
deps-check: ## The import rules: no circle in a service's domain/ at any depth, no port importing a use case, inbound/ not importing outbound/, nothing outside a service importing its outbound/
	python3 scripts/import-graph.py

.PHONY: doc-links
doc-links: ## Every relative Markdown link names a file that exists and a heading it holds
	python3 scripts/doc-links.py

.PHONY: lint
lint: fmt-check clippy size-check deps-check doc-links proto-lint proto-breaking ## All lints

.PHONY: deploy-tools
deploy-tools: ## Install helm, crane, kube-score, kubernetes-validate and the chart README generator into .tools/
	@bash scripts/install-deploy-tools.sh

.PHONY: helm-check
helm-check: deploy-tools ## Lint and render the chart, validate it (Kubernetes API schemas, kube-score), check invalid values are refused
	bash scripts/helm-check.sh

.PHONY: helm-docs
helm-docs: deploy-tools ## Regenerate the chart README's parameters table from values.yaml
	bash scripts/helm-docs.sh

.PHONY: helm-apiserver-check
helm-apiserver-check: deploy-tools ## kube-apiserver and etcd from Go modules (long); the chart: server-side dry run, install, upgrade
	bash scripts/install-apiserver.sh
	bash scripts/apiserver-check.sh

.PHONY: image
image: deploy-tools ## Build the images from release binaries as OCI layouts in target/images/<name> (no container engine)
	bash scripts/build-images.sh --release

.PHONY: image-check
image-check: tools deploy-tools postgres ## Build the images from the tests' debug binaries; start each service from them as the chart deploys it (root)
	bash scripts/build-images.sh
	$(TOOLS)/deploy-venv/bin/python scripts/image_check.py

.PHONY: ci
ci: lint deny fuzz-ci test bench-mcp-endpoint-smoke conformance conformance-server demo-check helm-check image-check ## What CI runs: lints, supply-chain checks, a short fuzz run, the tests on SQLite and PostgreSQL, a short run of the MCP endpoint's benchmark, the MCP conformance suite (client side, and the endpoint's parity with the reference server), the demo, the chart and image checks
