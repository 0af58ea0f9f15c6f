#!/usr/bin/env bash
# cfnlint.sh — cfn-lint on the synthesized templates of every stage named in
# CFN_LINT_STAGES (default: dev prod): the application's stack and its nested
# monitoring stack (infra/stack/monitoring.go). The stacks are synthesized with
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
# failure, not a wait forever. The tests write <stage>.monitoring.template.json
# (the nested stack's) before <stage>.template.json, so once the latter is
# there both are.
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
    nested="$CONCLAVE_TEMPLATES_DIR/$env.monitoring.template.json"
    [[ -f "$nested" ]] || { echo "cfn-lint: $env has no nested monitoring template ($nested)"; exit 1; }
    templates+=("$f" "$nested")
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
# A nested stack's template is named after its construct path without the
# dashes (Conclave-dev/Monitoring: ConclavedevMonitoring<hash>.nested.template.json);
# exactly one a stage.
templates=()
for env in $stages; do
  nested=("$out/app/Conclave${env//-/}Monitoring"*.nested.template.json)
  [[ ${#nested[@]} -eq 1 && -f "${nested[0]}" ]] ||
    { echo "cfn-lint: expected one nested monitoring template for $env in $out/app, found: ${nested[*]}"; exit 1; }
  templates+=("$out/app/Conclave-$env.template.json" "${nested[0]}")
done
"$VENV/bin/cfn-lint" --config-file localstack/cfnlintrc.yaml -- "${templates[@]}"
echo "cfn-lint: ${templates[*]}: no error, no warning"
