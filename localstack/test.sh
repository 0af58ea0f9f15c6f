#!/usr/bin/env bash
# test.sh — `make test`'s schedule (run it through make: it calls the
# Makefile's targets, with TEST_ENV and the other variables make was given).
#
# On two cores nothing here may wait while a core idles, and the fuzz tests
# (whose -fuzztime is time) must have the machine to themselves:
#
#   background  the local cloud starting (moto's venv, DynamoDB Local and the
#               edge at once) | the test tools' venv
#   foreground  gofmt + go vet, then the fuzz tests
#   then, once the cloud and the tools are up, in the background:
#               the Go integration and end-to-end tests | the contract test
#               (schemathesis, a team of its own) | cfn-lint
#   foreground  the unit tests, meanwhile
#
# The reports of the background steps are printed after the unit tests', the
# local cloud is stopped whatever happens, and the exit status is non-zero
# if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

: "${TEST_ENV:?TEST_ENV: the ports and state directory of the local cloud (make test sets it)}"
make=("${MAKE:-make}" --no-print-directory)
out=.local/make-test
mkdir -p "$out"
rm -f "$out"/*.rc

# step NAME COMMAND... runs COMMAND with its output in $out/NAME.log and its
# exit status in $out/NAME.rc.
step() {
  local name=$1
  shift
  "$@" >"$out/$name.log" 2>&1
  echo $? >"$out/$name.rc"
}

# ok NAME: the step has ended and succeeded.
ok() { [[ "$(cat "$out/$1.rc" 2>/dev/null)" == 0 ]]; }

# await NAME...: until every step has ended.
await() {
  for name in "$@"; do
    while [[ ! -f "$out/$name.rc" ]]; do sleep 0.2; done
  done
}

# shellcheck disable=SC2086 # TEST_ENV is a list of assignments
step up env $TEST_ENV localstack/cloud.sh up &
step tools localstack/contract.sh venv &

status=0
"${make[@]}" golint fuzz GOTESTFLAGS=-vet=off || status=1

cloud=()
if [[ $status == 0 ]]; then
  (
    await up tools
    if ! ok up || ! ok tools; then
      exit 0 # reported below
    fi
    # shellcheck disable=SC2086
    set -a && eval "$TEST_ENV" && . "$CONCLAVE_STATE_DIR/cloud.env" && set +a
    step integration "${make[@]}" integration-go GOTESTFLAGS=-vet=off &
    step contract localstack/contract.sh &
    step cfn-lint "${make[@]}" cfn-lint &
    wait
  ) &
  cloud=($!)
  "${make[@]}" unit GOTESTFLAGS=-vet=off || status=1
fi

wait # the cloud's start (stopped below either way) and the steps above
for name in up tools; do
  if ! ok "$name"; then
    echo "$name failed:"
    cat "$out/$name.log"
    status=1
  fi
done
if ((${#cloud[@]})) && ok up && ok tools; then
  for name in integration cfn-lint contract; do
    echo "== $name"
    cat "$out/$name.log"
    ok "$name" || status=1
  done
fi
# shellcheck disable=SC2086
env $TEST_ENV localstack/cloud.sh down >/dev/null
exit "$status"
