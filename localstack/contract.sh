#!/usr/bin/env bash
# contract.sh — the running API against its own contract, shared/api/openapi.yaml,
# with schemathesis: property-based requests (valid and invalid) to every
# operation, and checks that every answer is one the document lists, with
# the documented content type and body schema, that no request gets a 5xx,
# and that every request breaking the document is refused.
#
#   localstack/contract.sh            against $CONCLAVE_BASE_URL (make test runs it
#                                     after the Go integration tests, same cloud)
#
# On the local cloud ($CONCLAVE_EDGE_URL set) it makes a team of its own with
# the admin function, so the cases it generates (agents, tasks, revoked keys)
# touch no other test's data; elsewhere it uses $CONCLAVE_API_KEY's team —
# give it a throwaway team's key there: its cases rotate and revoke that key.
# Key rotation and revocation run last, in a second pass: a case that revokes
# the run's own key leaves every later request a 403.
#
# Bounded and reproducible: the coverage phase's cases, then at most
# CONTRACT_EXAMPLES fuzzed cases per operation (default 15), a fixed seed
# (CONTRACT_SEED, default 15), no example database carried between runs.
# About 25 s on the local cloud (the first two phases at once).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${CONCLAVE_TOOLS_VENV:-.local/tools-venv}"
PYTHON="${PYTHON:-python3}"
REQ=localstack/requirements-tools.txt

tools_venv() {
  local stamp="$VENV/.requirements.sha" want
  want="$(sha256sum "$REQ" | cut -d' ' -f1)"
  if [[ -x "$VENV/bin/schemathesis" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  echo "installing the test tools into $VENV ..."
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
  echo "$want" > "$stamp"
}

if [[ "${1:-}" == "venv" ]]; then
  tools_venv
  exit 0
fi

: "${CONCLAVE_BASE_URL:?set CONCLAVE_BASE_URL (and CONCLAVE_API_KEY), e.g. from .local/cloud.env}"
tools_venv

key="${CONCLAVE_API_KEY:-}"
if [[ -n "${CONCLAVE_EDGE_URL:-}" ]]; then
  key="$(go run ./infra/admin -stage "${CONCLAVE_STAGE:-local}" -endpoint "$CONCLAVE_EDGE_URL" create-team "Contract $(date +%s)" | awk '/^api key:/ {print $3}')"
fi
: "${key:?no API key: set CONCLAVE_API_KEY}"

report="${CONCLAVE_STATE_DIR:-.local}/contract"
mkdir -p "$report"
st() {
  "$VENV/bin/schemathesis" --config-file localstack/schemathesis.toml run shared/api/openapi.yaml \
    --url "$CONCLAVE_BASE_URL" -H "X-Api-Key: $key" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,negative_data_rejection \
    --mode all --seed "${CONTRACT_SEED:-15}" --generation-database none \
    --generation-with-security-parameters false \
    --request-timeout 30 --no-color --warnings off "$@"
}
keys=(--exclude-operation-id rotateKey --exclude-operation-id revokeKey)
status=0
# 1. The coverage phase: the schema's boundaries, one by one, valid and
#    broken (each minimum, maximum, pattern, enum, required field, type).
#    One worker: its generator is not safe across threads in this release.
# 2. The fuzzing phase: random valid and invalid requests, bounded per operation.
# The two run at once, as two processes (each mostly waits on the API);
# their reports are printed in this order once both have ended.
st --phases examples,coverage --workers 1 "${keys[@]}" --report junit --report-junit-path "$report/coverage.xml" >"$report/coverage.log" 2>&1 &
coverage=$!
st --phases fuzzing --workers 2 --max-examples "${CONTRACT_EXAMPLES:-15}" "${keys[@]}" --report junit --report-junit-path "$report/fuzzing.xml" >"$report/fuzzing.log" 2>&1 &
fuzzing=$!
wait "$coverage" || status=$?
wait "$fuzzing" || status=$?
cat "$report/coverage.log" "$report/fuzzing.log"
# 3. Rotation and revocation of keys, last (see above).
st --phases examples,coverage,fuzzing --workers 1 --max-examples "${CONTRACT_EXAMPLES:-15}" \
  --include-operation-id rotateKey --include-operation-id revokeKey --report junit --report-junit-path "$report/keys.xml" || status=$?
exit $status
