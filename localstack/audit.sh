#!/usr/bin/env bash
# audit.sh — checkov on the synthesized templates of dev and prod (make audit).
# Synthesizes and lints them first (localstack/cfnlint.sh). checkov lives in
# its own virtualenv (.local/audit-venv, localstack/requirements-audit.txt):
# it pins many libraries of its own. Settings and the checks that do not
# apply, with why: localstack/checkov.yaml and README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${CONCLAVE_AUDIT_VENV:-.local/audit-venv}"
REQ=localstack/requirements-audit.txt
stamp="$VENV/.requirements.sha"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ ! -x "$VENV/bin/checkov" || ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  echo "installing checkov into $VENV ..."
  "${PYTHON:-python3}" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
  echo "$want" > "$stamp"
fi
localstack/cfnlint.sh
out="${CONCLAVE_STATE_DIR:-.local}/cfn-lint"
files=()
for t in "$out"/*/*.template.json; do files+=(-f "$t"); done
BC_SKIP_MAPPING=TRUE "$VENV/bin/checkov" --config-file localstack/checkov.yaml "${files[@]}"
