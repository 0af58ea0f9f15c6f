# Conclave — every task starts here. `make run` and `make test` are the two
# commands a fresh machine needs (Go, Python 3, Node.js, Java 17+ and Maven
# installed).

SHELL := /bin/bash
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
FUNCTIONS := $(notdir $(wildcard functions/*))
ENV ?= dev
CDK ?= npx --yes aws-cdk@2.1033.0
CDKLOCAL ?= npx --yes --package aws-cdk@2.1033.0 --package aws-cdk-local@3.0.4 cdklocal
# -trimpath for every go command: without it the build cache keys each of
# this repository's packages by the checkout's directory, so a fresh clone
# (CI) recompiled and relinked all of them (and their vet and fuzz builds)
# even with a warm cache. Function binaries were built with it already.
export GOFLAGS := $(strip -trimpath $(filter-out -trimpath,$(shell go env GOFLAGS 2>/dev/null)))
# The integration run uses its own ports and state so it never collides with
# a `make run` in another terminal.
# Failed queue messages are retried after 1 s instead of the visibility
# timeout, so the dead-letter paths take seconds (see localstack/cloud/esm.go).
# CONCLAVE_BEDROCK_CHUNK_DELAY: a streamed reply's pieces 80 ms apart (25 ms otherwise), so the console's browser test
# sees the reply grow over several frames on a loaded machine (at 25 ms a whole reply once arrived within one).
TEST_ENV := CONCLAVE_STATE_DIR=.local/test CONCLAVE_API_PORT=4590 CONCLAVE_EDGE_PORT=4591 CONCLAVE_MOTO_PORT=4592 CONCLAVE_DYNAMO_PORT=4593 CONCLAVE_SQS_RETRY_SECONDS=1 CONCLAVE_BEDROCK_CHUNK_DELAY=80ms
# Integration tests run in parallel (mustEnv in localstack/cloud): at most
# this many at once. They mostly wait on executions and queues, but beyond
# about 8 the local cloud's two cores are the limit and more only stretch
# each test's waits.
INTEGRATION_PARALLEL ?= 8
SOAK_ENV := CONCLAVE_STATE_DIR=.local/soak CONCLAVE_API_PORT=4594 CONCLAVE_EDGE_PORT=4595 CONCLAVE_MOTO_PORT=4596 CONCLAVE_DYNAMO_PORT=4597
LOAD_ENV := CONCLAVE_STATE_DIR=.local/load CONCLAVE_API_PORT=4600 CONCLAVE_EDGE_PORT=4601 CONCLAVE_MOTO_PORT=4602 CONCLAVE_DYNAMO_PORT=4603
FAULTS_ENV := CONCLAVE_STATE_DIR=.local/faults CONCLAVE_API_PORT=4606 CONCLAVE_EDGE_PORT=4607 CONCLAVE_MOTO_PORT=4608 CONCLAVE_DYNAMO_PORT=4609
CLINC_ENV := CONCLAVE_STATE_DIR=.local/clinc CONCLAVE_API_PORT=4612 CONCLAVE_EDGE_PORT=4613 CONCLAVE_MOTO_PORT=4614 CONCLAVE_DYNAMO_PORT=4615

.PHONY: run up down status venv dynamodb wordllama test unit fuzz integration integration-go contract e2e build synth deploy lint golint cfn-lint audit bench soak clean \
        localstack-up localstack-deploy localstack-down team token mutation docs console console-docs

## run: the whole API locally on the local cloud with demo data (Ctrl-C stops it)
run:
	@localstack/cloud.sh run

## up / down / status: the local cloud in the background
up:
	@localstack/cloud.sh up
down:
	@localstack/cloud.sh down
status:
	@localstack/cloud.sh status

venv:
	@localstack/cloud.sh venv
dynamodb:
	@localstack/cloud.sh dynamodb

## console: the console's bundle in .local/console (functions/console/web and its pinned npm packages;
## localstack/console.sh; docs/console.md)
console:
	@localstack/console.sh

## console-docs: docs/console.md's pictures, copied from the browser test's last screenshots (.local/screenshots)
console-docs:
	@for p in chat why approvals work team; do cp .local/screenshots/$$p.png docs/console/$$p.png || exit 1; done

## wordllama: the WordLlama embedding model's two files (pinned by sha256) in .local/wordllama, fetched once per
## machine from the wordllama wheel on PyPI; shared/routing/wordllama reads them (its tests fail without them)
wordllama:
	@localstack/wordllama.sh

## test: gofmt/vet, the unit tests (the fuzz targets' corpora among them) and the CDK stack tests, integration and
## end-to-end tests on a fresh local cloud, the contract test and cfn-lint; the cloud stops whatever happens.
## localstack/test.sh runs them so that no step waits on another it does not need: after vet, the unit tests run while
## the cloud starts, the stack tests (compiled beside vet) and cfn-lint run, and, once the cloud is up, the integration
## tests and the contract test run together. The fuzzing itself is make fuzz (docs/testing.md).
## go test's own vet is off here (GOTESTFLAGS): golint has vetted the same files with every analyzer, and go
## test's smaller set of analyzers does not share vet's cache (on a cold cache it re-vetted every dependency).
# GOGC=1000 for everything make test runs: the Go compiler collects garbage ten times less often. On this
# repository's generated giants (the CDK bindings, the AWS SDK) GOGC=400 took 18 % less CPU than the default on a
# cold build (at most 1.3 GB per compile instead of 0.9), and 1000 another 5-9 % of a cold `go build ./shared/...
# ./functions/...` (two runs in either order, 2026-12-02; a few GB per compile at most, on a 23 GB machine). The
# programs it runs (the tests, the local cloud) live for minutes only.
test: export GOGC ?= 1000
# -dwarf=false for everything make test compiles (vet's dependencies, the unit, stack and integration tests, the
# edge): no debugger reads these binaries, stack traces do not need DWARF, and a cold build took 16 % less CPU
# (the CDK bindings: 87 s instead of 103). A plain `go test` keeps its own cache entries (other flags).
test: export GOFLAGS := $(strip $(GOFLAGS) -gcflags=all=-dwarf=false)
test:
	@MAKE='$(MAKE)' TEST_ENV='$(TEST_ENV)' localstack/test.sh

unit:
	go test $(GOTESTFLAGS) -count=1 $(or $(UNIT_PKGS),./...) # UNIT_PKGS: make test runs infra/stack's tests in steps of their own

## test-arm64: the float32 kernel (shared/platform/f32) vetted and checked for arm64, the functions' architecture, under
## qemu-aarch64 (localstack/qemu.sh installs it when missing); part of make test. The NEON assembly runs nowhere else on an
## amd64 machine: localstack/f32check, built for arm64, compares it bit for bit with the Go loop compiled for arm64 (a
## program, not the test binary: the testing package compiled for arm64 cost a cold run about 6 s more of CPU).
test-arm64:
	@localstack/qemu.sh
	GOARCH=arm64 go vet ./shared/platform/f32/
	@mkdir -p .local
	GOARCH=arm64 go build -o .local/f32check.arm64 ./localstack/f32check
	qemu-aarch64 .local/f32check.arm64

## fuzz: every request decoder fuzzed (never a panic, a 5xx, or a change from a refused request), not part of make test
## (its instrumented build of every package was 100 s of a cold CI run's CPU): run it after changing a decoder. A fixed
## number of executions per target (-fuzztime Nx), at least what 3 s gave each on the idle two-core CI machine, so a busy machine
## fuzzes as much, only slower (3 s of a busy machine, or 3 s mostly spent re-running a grown corpus, did a third).
## FUZZTIME=1m (or =1000000x) for longer, all four.
fuzz:
	go test $(GOTESTFLAGS) -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(or $(FUZZTIME),45000x) ./shared/api/
	go test $(GOTESTFLAGS) -run '^$$' -fuzz '^FuzzRequestBodies$$' -fuzztime $(or $(FUZZTIME),4000x) ./shared/api/
	go test $(GOTESTFLAGS) -run '^$$' -fuzz '^FuzzQueryParameters$$' -fuzztime $(or $(FUZZTIME),30000x) ./shared/api/
	go test $(GOTESTFLAGS) -run '^$$' -fuzz '^FuzzMessagesLongPoll$$' -fuzztime $(or $(FUZZTIME),25000x) ./shared/api/

## integration: the Go integration and end-to-end tests and, beside them, the contract test (a team of its own;
## its report is printed after theirs), on a fresh local cloud.
integration:
	@$(TEST_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(TEST_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; ( localstack/contract.sh > "$$CONCLAVE_STATE_DIR/contract.log" 2>&1 ) & contract=$$!; \
	  $(MAKE) --no-print-directory integration-go || status=$$?; \
	  wait $$contract || status=1; cat "$$CONCLAVE_STATE_DIR/contract.log"; \
	  $(TEST_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## integration-go: the Go integration and end-to-end tests against the running local cloud of TEST_ENV. Packages one
## at a time (-p 1): localstack/cloud's serial tests move the sweeper's clock, which would end the end-to-end tests'
## tasks on the shared demo team.
integration-go:
	@set -a; $(TEST_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  go test $(GOTESTFLAGS) -count=1 -tags integration,e2e -p 1 -parallel $(INTEGRATION_PARALLEL) ./localstack/... ./infra/e2e/...

## contract: schemathesis against the API of `make up` (or any CONCLAVE_BASE_URL and CONCLAVE_API_KEY)
contract:
	@set -a; [ -n "$$CONCLAVE_BASE_URL" ] || . "$${CONCLAVE_STATE_DIR:-.local}/cloud.env"; set +a; localstack/contract.sh

## e2e: the HTTP-only suite against any stage: make e2e BASE_URL=https://… API_KEY=ck_… OTHER_API_KEY=ck_…
e2e:
	@test -n "$(BASE_URL)" -a -n "$(API_KEY)" -a -n "$(OTHER_API_KEY)" || { echo "usage: make e2e BASE_URL=… API_KEY=… OTHER_API_KEY=…"; exit 2; }
	CONCLAVE_BASE_URL=$(BASE_URL) CONCLAVE_API_KEY=$(API_KEY) CONCLAVE_OTHER_API_KEY=$(OTHER_API_KEY) \
	  go test -count=1 -tags e2e ./infra/e2e/...

## build: every function as bootstrap for provided.al2023 on arm64, zipped per function (dist/); the functions of
## EMBEDDER_FUNCTIONS get the wordllama model beside their bootstrap (dist/<fn>/wordllama/, read by shared/routing/wordllama.Dir)
EMBEDDER_FUNCTIONS := expert-gate classifier-fitter
build: wordllama
	@mkdir -p dist
	@rm -rf dist/console/web && localstack/console.sh dist/console/web
	@for f in $(FUNCTIONS); do \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -tags lambda.norpc -ldflags='-s -w' -o dist/$$f/bootstrap ./functions/$$f || exit 1; \
	  files=bootstrap; \
	  if [[ $$f == console ]]; then files="bootstrap web"; fi; \
	  if [[ " $(EMBEDDER_FUNCTIONS) " == *" $$f "* ]]; then \
	    rm -rf dist/$$f/wordllama && mkdir -p dist/$$f/wordllama && cp -L .local/wordllama/*.json .local/wordllama/*.safetensors dist/$$f/wordllama/ || exit 1; \
	    files="bootstrap wordllama"; \
	  fi; \
	  (cd dist/$$f && rm -f ../$$f.zip && python3 -m zipfile -c ../$$f.zip $$files) || exit 1; \
	  echo "dist/$$f.zip"; \
	done

## synth: the CloudFormation template of stage ENV (no AWS account needed) into infra/cdk.out
synth: build
	cd infra && CDK_OUTDIR=cdk.out CONCLAVE_ENV=$(ENV) CONCLAVE_DIST=../dist go run . && ls cdk.out/*.template.json

## deploy: make deploy ENV=dev|staging|prod (needs AWS credentials)
deploy: build
	cd infra && $(CDK) deploy --app "go run ." -c env=$(ENV) --require-approval broadening

## team: create a team and print its first API key: make team NAME="Acme" [ENDPOINT=http://127.0.0.1:4581] [STAGE=local]
team:
	go run ./infra/admin -stage $(or $(STAGE),local) $(if $(ENDPOINT),-endpoint $(ENDPOINT),) create-team "$(NAME)"

## token: print a token of the local issuer for a demo user of the demo team: make token USER=alice [ADMIN=1] (docs/api.md)
token:
	@set -a; . "$${CONCLAVE_STATE_DIR:-.local}/cloud.env"; set +a; \
	curl -sf -X POST -d '{"user":"$(if $(filter command line,$(origin USER)),$(USER),alice)","admin":$(if $(ADMIN),true,false)}' "$$CONCLAVE_OIDC_ISSUER/token" | sed -n 's/.*"id_token":"\([^"]*\)".*/\1/p'

## trace: print one trace of the local cloud, its spans indented under their parents with durations and the gen_ai and
## routing attributes: make trace ID=<an answer's X-Trace-Id> (the edge keeps the last 1,000; docs/operations.md)
.PHONY: trace
trace:
	@set -a; . "$${CONCLAVE_STATE_DIR:-.local}/cloud.env"; set +a; go run ./localstack/tracecli "$(ID)"

## LocalStack, for people with Docker and a LOCALSTACK_AUTH_TOKEN
localstack-up:
	docker compose -f localstack/docker-compose.yml up -d --wait
localstack-deploy: build
	cd infra && $(CDKLOCAL) bootstrap -c env=localstack --app "go run ." && $(CDKLOCAL) deploy -c env=localstack --app "go run ." --require-approval never
localstack-down:
	docker compose -f localstack/docker-compose.yml down

## docs: what the code says of its architecture, written where it is read (localstack/archdoc): the map of shared/ in
## docs/architecture.md, from the packages' doc comments, and shared/archtest's list of the packages that link AWS
## clients; shared/archtest fails when either is out of date. The map is spliced in only when archdoc succeeded.
docs:
	@map=$$(go run ./localstack/archdoc) && printf '%s\n' "$$map" | go run ./localstack/benchdoc -doc docs/architecture.md -section shared

## lint: gofmt and go vet, then cfn-lint and checkov on the synthesized dev and prod templates (make audit runs
## cfn-lint before checkov, on the same synthesis, so it is not a prerequisite of its own here)
lint: golint audit

## golint: gofmt, then go vet once with every test build tag: no file is excluded by a tag, so this pass vets every
## file the untagged one would (a second pass per tag set re-vetted the packages whose files differ).
golint:
	@out=$$(gofmt -l functions shared localstack infra statemachines events); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out=$$(grep -rl --include='*.go' '^//go:build.*!' functions shared localstack infra statemachines events); \
	  if [ -n "$$out" ]; then echo "a file excluded by a build tag, which the one vet pass below would not vet:"; echo "$$out"; exit 1; fi
	go vet -tags integration,e2e,soak,load,faults $(or $(VET_PKGS),./...) # VET_PKGS: make test vets the CDK packages after the unit tests

cfn-lint:
	@localstack/cfnlint.sh

## audit: cfn-lint, then checkov on the synthesized dev and prod templates (the checks that do not apply are listed
## in docs/testing.md); part of make lint, not of make test
audit:
	@localstack/audit.sh

## bench: every benchmark (BENCH_PARTS: the gate against the seed, in-process, through the local cloud, streaming, load, CLINC150 through the API), each
## run whatever the one before did; those that failed or missed their target are listed at the end, and then make fails.
## Each part writes its section of docs/measurements.md (localstack/benchdoc; BENCH_DOC=off to leave it).
BENCH_PARTS ?= bench-gate bench-go bench-e2e bench-trace bench-stream bench-load bench-routing-api
.PHONY: bench bench-go bench-e2e test-arm64
bench:
	@missed=""; for part in $(BENCH_PARTS); do \
	  echo "== make $$part"; $(MAKE) --no-print-directory $$part || missed="$$missed $$part"; \
	done; \
	if [ -n "$$missed" ]; then echo "== make bench: failed or below target:$$missed"; exit 1; fi; \
	echo "== make bench: every part at its target ($(BENCH_PARTS))"

## bench-go: the in-process benchmarks of shared/ (go test -bench)
bench-go:
	@localstack/bench.sh go-bench go test -run '^$$' -bench . -benchmem ./shared/...

## bench-e2e: the API's operations through the local cloud (200 of each)
bench-e2e:
	@$(TEST_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(TEST_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; localstack/bench.sh e2e-bench go test -tags e2e -run '^$$' -bench . -benchtime 200x ./infra/e2e/ || status=$$?; \
	  $(TEST_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## bench-trace: the cost of tracing, a chat turn of the conversations function traced (every span exported to the edge
## just after the answer, as in Lambda) against the same turn untraced, interleaved, on a fresh local cloud; fails above 1.05x (issue 45)
.PHONY: bench-trace
bench-trace:
	@$(TEST_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(TEST_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; localstack/bench.sh trace-bench go test -tags integration -run '^$$' -bench '^BenchmarkTracedTurn$$' -benchtime 300x ./localstack/cloud/ || status=$$?; \
	  $(TEST_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## bench-stream: a streamed chat turn's time to the first delta and to the stored turn, and its events, against the same
## turn on the HTTP API in the same run, on a fresh local cloud whose Bedrock answers Converse as slowly as the streamed
## answer takes (CONCLAVE_BEDROCK_PACE=1: a model writes the whole reply either way; docs/measurements.md "Streaming")
.PHONY: bench-stream
bench-stream:
	@$(TEST_ENV) CONCLAVE_BEDROCK_PACE=1 localstack/cloud.sh up >/dev/null
	@set -a; $(TEST_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; localstack/bench.sh stream-bench go test -tags e2e,stream -run '^$$' -bench '^BenchmarkStreamedTurn$$' -benchtime 20x ./infra/e2e/ || status=$$?; \
	  $(TEST_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## bench-load: 40 sessions at once on the demo agents (8 of each pattern) beside 50 chat turns and 30 board tasks, against a fresh local cloud; all must complete
bench-load:
	@$(LOAD_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(LOAD_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; localstack/bench.sh load go test -tags e2e,load -run '^$$' -bench '^BenchmarkFortySessionsAtOnce$$' -benchtime 1x -timeout 30m ./infra/e2e/ || status=$$?; \
	  $(LOAD_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## soak: 3,000 chat turns and 3,000 task create+cancel pairs against one local cloud (p50/p99 first vs last thousand, memory); SOAK_N=… to change
soak:
	@$(SOAK_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(SOAK_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; CONCLAVE_SOAK_N=$(or $(SOAK_N),3000) go test -v -count=1 -timeout 60m -tags e2e,soak -run '^TestSoak$$' ./infra/e2e/ || status=$$?; \
	  $(SOAK_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## faults: 20 chat turns, 3 sessions and 10 agent messages while DynamoDB Local, then moto, is paused for 8 s and 30 s, on a fresh local cloud of its own (docs/measurements.md)
.PHONY: faults
faults:
	@$(FAULTS_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(FAULTS_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; go test -v -count=1 -timeout 30m -tags e2e,faults -run '^TestFaults$$' ./infra/e2e/ || status=$$?; \
	  $(FAULTS_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## bench-gate: the ExpertGate against the seed's scikit-learn design (seed_gate.py) at 10, 100 and 1,000 agents; fails below 50x
.PHONY: bench-gate bench-routing bench-load
bench-gate:
	@localstack/bench/routing/compare.sh

## bench-routing: the ExpertGate's routing quality beside the seed's on BFCL v4's function-selection sets (top-1, MRR, declines, a threshold sweep), then CLINC150's everyday messages through the chat turn's routing (localstack/bench/clincbench)
bench-routing:
	@localstack/bench/routing/bfcl.sh

## bench-routing-api: CLINC150 through the HTTP API on a fresh local cloud of its own: a new team from the admin function,
## its 11 agents (25 examples per skill) through POST /v1/agents, the classifier-fitter's fit awaited, every 3rd test
## message a new conversation's first turn, 4 at a time (localstack/bench/routing/clincapi.sh; docs/measurements.md)
.PHONY: bench-routing-api
bench-routing-api:
	@$(CLINC_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(CLINC_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; localstack/bench/routing/clincapi.sh || status=$$?; \
	  $(CLINC_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## mutation: gremlins (pinned, installed in .local/bin) on the unit tests of the domain packages with the
## conditional-boundary and conditional-negation mutators, one package at a time at the lowest priority; the
## per-package table goes into docs/measurements.md (localstack/mutation.sh). Not in CI: it takes tens of minutes.
## Run it before resolving an issue that changes a limit. MUTATION_PACKAGES="routing tasks" for some only.
GREMLINS_VERSION := v0.6.0
mutation:
	@GOBIN=$(CURDIR)/.local/bin go install github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION)
	@GREMLINS=$(CURDIR)/.local/bin/gremlins localstack/mutation.sh

clean:
	-localstack/cloud.sh down >/dev/null 2>&1
	rm -rf dist infra/cdk.out .local/bin .local/mutation .local/logs .local/test .local/soak .local/dynamodb
