# Conclave — every task starts here. `make run` and `make test` are the two
# commands a fresh machine needs (Go, Python 3 and Node.js installed).

SHELL := /bin/bash
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
FUNCTIONS := $(notdir $(wildcard functions/*))
ENV ?= dev
CDK ?= npx --yes aws-cdk@2.1033.0
CDKLOCAL ?= npx --yes --package aws-cdk@2.1033.0 --package aws-cdk-local@3.0.4 cdklocal
# The integration run uses its own ports and state so it never collides with
# a `make run` in another terminal.
TEST_ENV := CONCLAVE_STATE_DIR=.local/test CONCLAVE_API_PORT=4590 CONCLAVE_EDGE_PORT=4591 CONCLAVE_MOTO_PORT=4592

.PHONY: run up down status venv test unit integration e2e build synth deploy lint bench clean \
        localstack-up localstack-deploy localstack-down team

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

## test: lint, unit tests (incl. CDK stack tests), then integration and end-to-end tests against a fresh local cloud
test: lint unit integration

unit:
	go test -count=1 ./...

integration:
	@$(TEST_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(TEST_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; go test -count=1 -tags integration,e2e -p 1 ./localstack/... ./infra/e2e/... || status=$$?; \
	  $(TEST_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## e2e: the HTTP-only suite against any stage: make e2e BASE_URL=https://… API_KEY=ck_… OTHER_API_KEY=ck_…
e2e:
	@test -n "$(BASE_URL)" -a -n "$(API_KEY)" -a -n "$(OTHER_API_KEY)" || { echo "usage: make e2e BASE_URL=… API_KEY=… OTHER_API_KEY=…"; exit 2; }
	CONCLAVE_BASE_URL=$(BASE_URL) CONCLAVE_API_KEY=$(API_KEY) CONCLAVE_OTHER_API_KEY=$(OTHER_API_KEY) \
	  go test -count=1 -tags e2e ./infra/e2e/...

## build: every function as bootstrap for provided.al2023 on arm64, zipped per function (dist/)
build:
	@mkdir -p dist
	@for f in $(FUNCTIONS); do \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -tags lambda.norpc -ldflags='-s -w' -o dist/$$f/bootstrap ./functions/$$f || exit 1; \
	  (cd dist/$$f && rm -f ../$$f.zip && python3 -m zipfile -c ../$$f.zip bootstrap) || exit 1; \
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

## LocalStack, for people with Docker and a LOCALSTACK_AUTH_TOKEN
localstack-up:
	docker compose -f localstack/docker-compose.yml up -d --wait
localstack-deploy: build
	cd infra && $(CDKLOCAL) bootstrap -c env=localstack --app "go run ." && $(CDKLOCAL) deploy -c env=localstack --app "go run ." --require-approval never
localstack-down:
	docker compose -f localstack/docker-compose.yml down

lint:
	@out=$$(gofmt -l functions shared localstack infra statemachines events); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags integration,e2e ./...

## bench: the measured figures in README.md (the gate against the seed, in-process, then through the local cloud)
bench: bench-gate
	go test -run '^$$' -bench . -benchmem ./shared/...
	@$(TEST_ENV) localstack/cloud.sh up >/dev/null
	@set -a; $(TEST_ENV); . "$$CONCLAVE_STATE_DIR/cloud.env"; set +a; \
	  status=0; go test -tags e2e -run '^$$' -bench . -benchtime 200x ./infra/e2e/ || status=$$?; \
	  $(TEST_ENV) localstack/cloud.sh down >/dev/null; exit $$status

## bench-gate: the ExpertGate against the seed's scikit-learn design (seed_gate.py) at 10, 100 and 1,000 agents; fails below 50x
.PHONY: bench-gate
bench-gate:
	@shared/routing/testdata/compare.sh

clean:
	-localstack/cloud.sh down >/dev/null 2>&1
	rm -rf dist infra/cdk.out .local/bin .local/logs .local/test
