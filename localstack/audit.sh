#!/usr/bin/env bash
# audit.sh — checkov on the synthesized templates of dev and prod (make audit).
# Synthesizes and lints them first (localstack/cfnlint.sh). checkov lives in
# its own virtualenv (.local/audit-venv, localstack/requirements-audit.txt):
# it pins many libraries of its own. Installed once per machine and pin, a
# link to the shared cache like the other virtualenvs (localstack/cache.sh):
# `make lint` runs this in every clone. Settings and the checks that do not
# apply, with why: localstack/checkov.yaml and docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${CONCLAVE_AUDIT_VENV:-.local/audit-venv}"
REQ=localstack/requirements-audit.txt
# shellcheck source=localstack/cache.sh
. localstack/cache.sh
install_checkov() {
  echo "installing checkov into $1 ..."
  make_venv "$REQ" "$1"
}
cache="${CONCLAVE_CACHE:-}"
[[ -z "${CONCLAVE_AUDIT_VENV:-}" ]] || cache=off # a path the user chose is never a link
CONCLAVE_CACHE="$cache" cached "$VENV" venv-audit "$(python_key "$REQ")" install_checkov
localstack/cfnlint.sh
out="${CONCLAVE_STATE_DIR:-.local}/cfn-lint"
files=()
for t in "$out"/*/*.template.json; do files+=(-f "$t"); done
BC_SKIP_MAPPING=TRUE "$VENV/bin/checkov" --config-file localstack/checkov.yaml "${files[@]}"
