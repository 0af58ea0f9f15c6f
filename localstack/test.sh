#!/usr/bin/env bash
# test.sh — `make test`'s schedule (run it through make: it calls the
# Makefile's targets, with TEST_ENV and the other variables make was given).
#
# On two cores nothing should wait while a core idles:
#
#   foreground  gofmt + go vet, then the unit tests (the fuzz targets'
#               corpora among them; the fuzzing itself is make fuzz, see
#               docs/testing.md)
#   background  the local cloud starting: moto's venv and DynamoDB Local at
#               once, then, after vet, the edge
#               | the test tools' venv, then, after vet, cfn-lint
#               | once the cloud is up: the Go integration and end-to-end
#               tests and the contract test (schemathesis, a team of its
#               own) at once
#
# Nothing is tested after a vet failure (installs already started finish).
# The reports of the background steps are printed after the foreground's,
# the local cloud is stopped whatever happens (an EXIT trap, also on INT and
# TERM), and the exit status is non-zero if any step failed or if a step
# that should have run did not.
set -uo pipefail
cd "$(dirname "$0")/.."

: "${TEST_ENV:?TEST_ENV: the ports and state directory of the local cloud (make test sets it)}"
make=("${MAKE:-make}" --no-print-directory)
out=.local/make-test
mkdir -p "$out"
rm -f "$out"/*.rc "$out"/*.rc.tmp "$out/timings" "$out/cpu"
# The stack tests' templates, for cfn-lint (localstack/cfnlint.sh); an
# absolute path: the tests run in infra/stack.
templates="$PWD/$out/templates"
rm -rf "$templates"

# setrc NAME CODE records a step's exit status. Written whole, then renamed:
# a step waiting on it (await) never reads a half-written file.
setrc() {
  echo "$2" >"$out/$1.rc.tmp" && mv "$out/$1.rc.tmp" "$out/$1.rc"
}

# step NAME COMMAND... runs COMMAND with its output in $out/NAME.log and its
# exit status in $out/NAME.rc.
# t0 is when the run started; each step's start and end, in seconds from
# it, go to $out/timings (printed at the end): where the time goes, the
# first thing to look at when the run grows.
t0=$SECONDS
mark() { echo "$1 $2 $((SECONDS - t0))" >>"$out/timings"; }

step() {
  local name=$1 rc=0
  shift
  mark "$name" start
  ( rc=0; "$@" || rc=$?; cpu "$name"; exit "$rc" ) >"$out/$name.log" 2>&1 || rc=$?
  mark "$name" end
  setrc "$name" "$rc"
}

# cpu NAME, last in a step's subshell, records the CPU seconds (user and
# system) of everything the step ran and waited for: on two cores the run
# is CPU-bound, so CPU says what a step costs where its span only says how
# long it shared the machine. (The local cloud's own processes run on after
# `up` and are not counted.)
cpu() {
  # times, not in a pipe: a pipe's end is a subshell with no children.
  times >"$out/$1.times"
  awk -v n="$1" 'NR == 2 {
    split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "%s %d\n", n, u[1] * 60 + u[2] + s[1] * 60 + s[2] + 0.5 }' "$out/$1.times" >>"$out/cpu"
}

# The local cloud stops however this ends; an interrupted run stops its
# background steps too.
cleanup() {
  local jobs_left
  jobs_left=$(jobs -p)
  # shellcheck disable=SC2086 # a list of pids
  [[ -z "$jobs_left" ]] || kill $jobs_left 2>/dev/null
  # shellcheck disable=SC2086 # TEST_ENV is a list of assignments
  env $TEST_ENV localstack/cloud.sh down >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ok NAME: the step has ended and succeeded.
ok() { [[ "$(cat "$out/$1.rc" 2>/dev/null)" == 0 ]]; }

# await NAME: until the step has ended.
await() {
  while [[ ! -f "$out/$1.rc" ]]; do sleep 0.2; done
}

# cloud: moto's venv and DynamoDB Local at once, then, once vet has compiled
# every package, the edge and the cloud itself. (Two go commands compiling
# one package at the same time both compile it: on an empty cache the edge
# and cfn-lint's synth, started beside vet, compiled the AWS SDK and the CDK
# bindings a second time.)
cloud() {
  # shellcheck disable=SC2086 # TEST_ENV is a list of assignments
  env $TEST_ENV "${later[@]}" localstack/cloud.sh venv &
  # shellcheck disable=SC2086
  env $TEST_ENV "${later[@]}" localstack/cloud.sh dynamodb &
  wait
  await golint
  ok golint || return 0 # nothing runs on it
  # shellcheck disable=SC2086
  env $TEST_ENV localstack/cloud.sh up
}

# later: what is installed while the prelude and vet compile (the
# virtualenvs, DynamoDB Local, Chromium, the model, the console's bundle)
# is needed only once vet has passed, so it runs at a lower priority and
# takes the CPU the compile leaves: on a cold run everything before vet's
# end is one chain, prelude then vet, and installs beside it at the same
# priority made the prelude 16 s longer (4-34 s before Chromium and the
# console's bundle, 0-46 s with them).
later=(nice -n 10)

step up cloud &
pids=($!)
# The stack tests (infra/stack): the CDK bindings' compile is the run's
# longest chain of single packages and the tests then run a Node process,
# so they start early instead of ending the run: compiled once the prelude
# has compiled everything the CDK app shares with the rest (the standard
# library, the manifest: no package compiled twice), beside vet, and run
# as soon as vet has passed, the two CDK packages vetted beside them (vet-cdk)
# and cfn-lint lints the templates the tests wrote. (They waited for the
# test tools' install before, as a clock: on a fresh machine that came
# 113 s into the run, with one core idle.)
step tools "${later[@]}" localstack/contract.sh venv &
pids+=($!)
# The Debian packages the tests need, installed when missing (as root,
# with apt-get, in one run) while the rest compiles: Chromium for the
# console's browser tests, qemu-user for make test-arm64.
step debs "${later[@]}" localstack/debs.sh &
pids+=($!)
# What the unit tests read besides the code, fetched while the prelude
# compiles (each a few seconds the first time on a machine, then a link
# to the shared cache): the ExpertGate's embedding model, and the
# console's bundle, which the console function's wiring reads (its npm
# packages, then a copy).
step wordllama "${later[@]}" localstack/wordllama.sh &
pids+=($!)
step console "${later[@]}" localstack/console.sh &
pids+=($!)
(
  # The CDK modules (some 350 MB) download while the prelude compiles.
  go mod download $(go list -m -f '{{.Path}}' all | grep -E 'aws-cdk-go|jsii-runtime-go|constructs-go|cdklabs|Masterminds/semver') >/dev/null 2>&1
  await prelude
  ok prelude || exit 0 # reported as a failed step below
  step stack-build go test -vet=off -c -o "$PWD/$out/stack.test" ./infra/stack
  await golint
  ok golint && ok stack-build || exit 0 # reported as failed steps below
  # vet-cdk beside the stack tests, not after them: after, it was the
  # run's last 6 s, alone on the machine.
  step vet-cdk go vet -tags integration,e2e,soak,load,faults ./infra ./infra/stack &
  step stack env CONCLAVE_TEMPLATES_DIR="$templates" bash -c 'cd infra/stack && "$0" -test.count=1' "$PWD/$out/stack.test"
  wait
) &
pids+=($!)
# The float32 kernel on arm64, the functions' architecture (make
# test-arm64: its NEON assembly runs nowhere else here): once vet has
# passed and qemu-user is there (debs), the package vetted for arm64 and
# its check (localstack/f32check) built for arm64 and run under
# qemu-aarch64, at the installs' low priority (on an empty cache the
# runtime compiled for arm64: about 8 s of CPU).
(
  await debs
  await golint
  ok golint && ok debs || exit 0 # reported as failed steps below
  step arm64 "${later[@]}" "${make[@]}" test-arm64 GOTESTFLAGS=-vet=off
) &
pids+=($!)
(
  await golint
  await tools
  ok tools && ok golint || exit 0 # reported as failed steps below
  # The templates the stack tests synthesize (cfnlint.sh).
  step cfn-lint env CONCLAVE_TEMPLATES_DIR="$templates" CONCLAVE_TEMPLATES_DONE="$out/stack.rc" "${make[@]}" cfn-lint
) &
pids+=($!)
(
  await up
  await tools
  await debs
  ok golint && ok up && ok tools && ok debs || exit 0 # reported as failed steps below
  set -a
  eval "$TEST_ENV"
  : "${CONCLAVE_STATE_DIR:=.local}"
  # shellcheck disable=SC1091 # written by cloud.sh up
  if ! . "$CONCLAVE_STATE_DIR/cloud.env"; then
    for name in integration contract moto-patches; do
      echo "no $CONCLAVE_STATE_DIR/cloud.env: the local cloud did not say where it runs" >"$out/$name.log"
      setrc "$name" 1
    done
    exit 1
  fi
  set +a
  step integration "${make[@]}" integration-go GOTESTFLAGS=-vet=off &
  step contract localstack/contract.sh &
  # The checks of moto_server.py's patches, in the venv the cloud runs.
  step moto-patches "${CONCLAVE_VENV:-.local/venv}/bin/python" -m unittest localstack/moto_server_test.py &
  wait
) &
pids+=($!)

status=0
# No fuzzing here: go test -fuzz builds an instrumented copy of every
# package it reaches (the standard library and the AWS SDK included) that
# no other step shares, 100 s of a cold run's CPU for a few seconds of
# fuzzing; the unit step runs every fuzz target on its corpus, the contract
# step fuzzes every route over HTTP (bodies, parameters: never a 5xx, a
# refused request changes nothing), and make fuzz explores (docs/testing.md).
# vet leaves the two packages that link the CDK bindings (infra,
# infra/stack) to the stack steps above, which compile the bindings
# anyway; vet-cdk vets the two from the build cache then.
# (shared/archtest checks that the two cover every package.)
# The prelude: what the stack tests share with the rest (the packages of
# this module the CDK app imports, with everything they import: the
# standard library, testify), compiled first and once, by vet: a package
# compiled for go build or go test is compiled again for go vet, but one
# compiled for go vet serves them all. Then the stack-build above and the
# vet of everything else compile at once, nothing twice. (The CDK
# modules download meanwhile, in the stack-build's step.)
mark prelude start
( rc=0; prelude=$(sed -n '/^import (/,/^)/p; /^import "/p' infra/stack/*.go | grep -o '"github.com/conclave-ai/conclave/[^"]*"' | tr -d '"' | grep -v '/infra/stack$' | sort -u) &&
  go vet -tags integration,e2e,soak,load,faults $prelude || rc=$?; cpu prelude; exit "$rc" ) >"$out/prelude.log" 2>&1
setrc prelude $?
mark prelude end
if ! ok prelude; then
  cat "$out/prelude.log"
  status=1
fi
no_cdk=(./events/... ./functions/... ./localstack/... ./shared/... ./statemachines/... ./infra/admin/... ./infra/e2e/... ./infra/grants/...)
mark golint start
( rc=0; "${make[@]}" golint VET_PKGS="${no_cdk[*]}" || rc=$?; cpu golint; exit "$rc" ) 2>&1 | tee "$out/golint.log"
setrc golint "${PIPESTATUS[0]}"
mark golint end
ok golint || status=1
await wordllama
await console
for name in wordllama console; do
  if ! ok "$name"; then
    echo "== make test FAILED: $name (localstack/$name.sh)"
    cat "$out/$name.log"
    status=1
  fi
done
if [[ $status == 0 ]]; then
  mark unit start
  # Every package but infra/stack (its own steps, above) and infra (the
  # CDK app: no tests; vet-cdk compiles and vets it).
  ( rc=0; "${make[@]}" unit GOTESTFLAGS=-vet=off UNIT_PKGS="$(go list ./... | grep -Ev '/infra(/stack)?$' | tr '\n' ' ')" || rc=$?; cpu unit; exit "$rc" ) 2>&1 | tee "$out/unit.log"
  setrc unit "${PIPESTATUS[0]}"
  mark unit end
  ok unit || status=1
fi
for pid in "${pids[@]}"; do # the background above
  wait "$pid" || status=1
done

# Every step that should have run did: a missing status is a failure (a
# background step that died before writing it must not pass for skipped).
expected=(prelude golint tools debs wordllama console)
ok prelude && expected+=(stack-build)
if ok golint; then
  expected+=(unit up)
  ok debs && expected+=(arm64)
  ok tools && expected+=(cfn-lint)
  ok prelude && ok stack-build && expected+=(stack vet-cdk)
  ok up && ok tools && ok debs && expected+=(integration contract moto-patches)
fi
for name in "${expected[@]}"; do
  if [[ ! -f "$out/$name.rc" ]]; then
    echo "$name did not run" >>"$out/$name.log"
    setrc "$name" 1
  fi
done

for name in stack-build stack vet-cdk up tools debs arm64 cfn-lint integration contract moto-patches; do
  [[ -f "$out/$name.rc" ]] || continue
  if [[ $name == up || $name == tools || $name == debs ]]; then
    ok "$name" && continue
    echo "$name failed:"
  else
    echo "== $name"
  fi
  cat "$out/$name.log"
  ok "$name" || status=1
done

# The failures once more, last: a report cut to its tail (a CI log) still
# names every failed step and test, with the test's own message.
# Each step's span, in seconds from the start.
echo "== timings (s from the start): $(awk '$2 == "start" {s[$1] = $3} $2 == "end" {printf "%s %d-%d, ", $1, s[$1], $3}' "$out/timings") total $((SECONDS - t0))"
echo "== CPU (s, user + system): $(sort -k2 -rn "$out/cpu" 2>/dev/null | awk '{t += $2; printf "%s %d, ", $1, $2} END {printf "steps %d", t}')"

if [[ $status != 0 ]]; then
  echo
  echo "== make test FAILED"
  for name in prelude golint unit stack-build stack vet-cdk up tools debs arm64 cfn-lint integration contract moto-patches; do
    [[ -f "$out/$name.rc" ]] && ! ok "$name" || continue
    echo "-- $name failed (the whole report: $out/$name.log)"
    case $name in
    unit | stack | integration)
      # Each failed test's block: from "--- FAIL" to the package's verdict
      # (or the log's end when no test got to fail: a build error, a panic).
      blocks=$(
        awk '/^ *--- FAIL/ {p = 1} /^(ok|FAIL|PASS)/ {p = 0} p' "$out/$name.log" | grep -v "^SDK .* WARN" | head -150
        grep -E "^(FAIL|panic:)" "$out/$name.log" | head -20
      )
      if [[ -n "$blocks" ]]; then echo "$blocks"; else tail -n 30 "$out/$name.log"; fi
      ;;
    *) tail -n 30 "$out/$name.log" ;;
    esac
  done
fi
exit "$status"
