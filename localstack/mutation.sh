#!/usr/bin/env bash
# mutation.sh: mutation testing of the domain packages (make mutation). Runs
# gremlins (the pinned one make mutation installs in .local/bin) on each
# package's unit tests (no build tags) with the conditional-boundary and
# conditional-negation mutators only: the mutants that move a promised
# limit by one or turn a rule around. One package at a time, one worker,
# at the lowest priority: a mutant is a rebuild and a test run, and the
# machine is shared. Each package's report goes to .local/mutation; then,
# unless MUTATION_DOC=off, the table of every domain package's latest
# report is written into the "mutation" section of docs/measurements.md.
# shared/routing's tests need the wordllama model (make wordllama).
#
#   MUTATION_PACKAGES="routing work/tasks" make mutation   # only these, then the table
#   MUTATION_PACKAGES=none make mutation              # the table only
set -euo pipefail
cd "$(dirname "$0")/.."
all=(routing work/tasks work/sessions work/consultations chat/conversations routing/cascade work/reports team/authorizer)
read -r -a pkgs <<<"${MUTATION_PACKAGES:-${all[*]}}"
# MUTATION_PACKAGES=none writes the table of the reports already there.
[[ "${pkgs[*]}" == none ]] && pkgs=()
gremlins="${GREMLINS:-.local/bin/gremlins}"
out=.local/mutation
mkdir -p "$out"
# -trimpath (the Makefile exports it): gremlins builds each mutant in a
# copy of the module, which without it shares no build cache with the
# checkout and recompiles every dependency of the package per mutant.
# -count=1: gremlins times the unmutated run to set each mutant's timeout;
# a cached result took 0.3 s and timed out mutants that only needed
# their rebuild.
export GOFLAGS="${GOFLAGS:--trimpath} -count=1"
# The wordllama model, by its absolute path: gremlins' copy of the module
# has no .local, and routing's tests that need the model would fail there,
# leaving their mutants "not covered" (routing: 290 of 469).
if [[ -z "${CONCLAVE_WORDLLAMA_DIR:-}" && -d .local/wordllama ]]; then
  export CONCLAVE_WORDLLAMA_DIR="$PWD/.local/wordllama"
fi
status=0
for p in ${pkgs[@]+"${pkgs[@]}"}; do
  echo "== shared/$p"
  rm -f "$out/$p.json"
  mkdir -p "$(dirname "$out/$p.json")"
  # The commit the run starts from (gremlins copies the tree then).
  commit="$(git rev-parse --short HEAD 2>/dev/null || true)"
  # --timeout-coefficient: a mutant's tests may take this many times the
  # unmutated run before they count as timed out (not killed, not lived);
  # the default was too short on a busy two-core machine.
  # No --test-cpu: gremlins v0.6.0 passes it to go test as one argument
  # ("-cpu 1"), which go test refuses, and counts every mutant killed.
  nice -n 19 "$gremlins" unleash --workers 1 --timeout-coefficient 10 \
    --arithmetic-base=false --increment-decrement=false --invert-negatives=false \
    --conditionals-boundary --conditionals-negation \
    -o "$out/$p.json" "./shared/$p" || { echo "gremlins failed on shared/$p" >&2; status=1; rm -f "$out/$p.json"; continue; }
  echo "$commit" >"$out/$p.commit"
done
table="$(go run ./localstack/mutationtable -dir "$out" "${all[@]}")"
echo "$table"
if [[ "${MUTATION_DOC:-docs/measurements.md}" != off ]]; then
  {
    echo "Written by \`make mutation\` on commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)'), $(date -u +%Y-%m-%d); $(uname -m), $(nproc) CPUs; packages run by this invocation: ${pkgs[*]:-none}; each row's commit is its report's."
    echo
    echo "$table"
  } | go run ./localstack/benchdoc -doc "${MUTATION_DOC:-docs/measurements.md}" -section mutation
fi
exit $status
