#!/usr/bin/env bash
# cfnlint.sh — cfn-lint on the synthesized template of every stage named in
# CFN_LINT_STAGES (default: dev prod). The stacks are synthesized with
# placeholder function binaries (as infra/stack's tests do), so no `make
# build` is needed: the template is the same but for the assets' hashes.
#
# Every rule runs but W3005 (see docs/testing.md, "Template checks"), configured in
# localstack/cfnlintrc.yaml; any other error or warning fails.
set -euo pipefail
cd "$(dirname "$0")/.."

localstack/contract.sh venv
VENV="${CONCLAVE_TOOLS_VENV:-.local/tools-venv}"
stages="${CFN_LINT_STAGES:-dev prod}"

# make test: the stack tests (infra/stack, in the unit step) hand their
# synthesized templates over in CONCLAVE_TEMPLATES_DIR (the same stacks,
# built from the same code and cdk.json context, named Test-<stage>);
# linting those spares a second compile of the CDK bindings and a second
# load of the CDK library. CONCLAVE_TEMPLATES_DONE is a file whose
# existence says the unit step has ended: templates missing by then are a
# failure, not a wait forever.
if [[ -n "${CONCLAVE_TEMPLATES_DIR:-}" ]]; then
  templates=()
  for env in $stages; do
    f="$CONCLAVE_TEMPLATES_DIR/$env.template.json"
    until [[ -f "$f" ]]; do
      if [[ -n "${CONCLAVE_TEMPLATES_DONE:-}" && -f "$CONCLAVE_TEMPLATES_DONE" && ! -f "$f" ]]; then
        echo "cfn-lint: the stack tests ended without synthesizing $env ($f)"
        exit 1
      fi
      sleep 1
    done
    templates+=("$f")
  done
  "$VENV/bin/cfn-lint" --config-file localstack/cfnlintrc.yaml -- "${templates[@]}"
  echo "cfn-lint: ${templates[*]}: no error, no warning"
  exit 0
fi

out="${CONCLAVE_STATE_DIR:-.local}/cfn-lint"
dist="$out/dist"
rm -rf "$dist"
for f in functions/*/; do
  mkdir -p "$dist/$(basename "$f")"
  echo placeholder > "$dist/$(basename "$f")/bootstrap"
done
# Every stage in one app, one process: the CDK library (jsii, Node) is
# loaded once, not once per stage.
rm -rf "$out/app"
(cd infra && CDK_OUTDIR="../$out/app" CONCLAVE_ENV="${stages// /,}" CONCLAVE_DIST="../$dist" go run . >/dev/null 2>"../$out/synth.log") ||
  { cat "$out/synth.log"; exit 1; }
templates=()
for env in $stages; do
  templates+=("$out/app/Conclave-$env.template.json")
done
"$VENV/bin/cfn-lint" --config-file localstack/cfnlintrc.yaml -- "${templates[@]}"
echo "cfn-lint: ${templates[*]}: no error, no warning"
