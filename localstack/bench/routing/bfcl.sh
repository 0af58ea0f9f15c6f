#!/usr/bin/env bash
# Routing quality on the Berkeley Function Calling Leaderboard (BFCL v4): the
# ExpertGate (localstack/bench/bfclbench) and the seed's design (seed_bfcl.py,
# scoring with seed_gate.py) on the same four function-selection sets, in
# one run, one table each.
#
#   localstack/bench/routing/bfcl.sh            # or: make bench-routing
#   BFCL_ARGS='-v -set multiple' localstack/bench/routing/bfcl.sh   # the gate's misses, for tuning
#
# Each BFCL entry is a team: one agent per function, with one skill named
# after the function and described by its description and its parameters'
# descriptions (keywords: the parameter names); the question is routed
# among them. multiple and live_multiple have an expected function (the
# gold); irrelevance and live_irrelevance have none that fits, and the right
# outcome is to decline. multiple and irrelevance are the tuning sets,
# live_* (questions users contributed) are held out: tune on the first two,
# read the others.
#
# What the figures mean:
#   n               entries in the set (200, 240, 1,053 and 884).
#   top1            the gold agent is ranked first (the threshold aside).
#   mrr             mean reciprocal rank of the gold agent among all the
#                   entry's agents (1 = always first; 0.5 = second on average).
#   declined@0.6    irrelevance sets: the share of questions declined, i.e.
#                   the best agent's Confidence (the gate) or overall score
#                   (the seed) is below 0.6. Higher is better.
#   false-declined@0.6  answerable sets: the share declined although a
#                   function fits. Lower is better.
#   sweep           the same at thresholds 0.30 to 0.80; "routed" is the
#                   share of answerable questions both ranked right and not
#                   declined (what a user would see answered by the right
#                   agent).
# The gate uses WordLlama embeddings when their weights are where
# wordllama.Dir looks (`make wordllama` puts them in .local/wordllama), TF-IDF
# alone otherwise; its header line says which (BFCL_ARGS='-embedder none' for
# TF-IDF alone). The seed has no ratings (neutral performance 0.7), a neutral
# personality (0.5 on each scale) and idle agents, so its overall score is
# 0.40 × its TF-IDF cosine plus about 0.45: at 0.6 it declines when the
# cosine is below about 0.37, and at 0.40 or less it declines nothing but
# the four live_irrelevance entries that have no function at all.
#
# Time: 9-13 s on the two-core machine (shared) once the data and the seed's
# virtualenv are there (the gate 0.8-1.2 s with WordLlama, 0.5 s without; the seed
# 7-9 s, a SeedGate and its TfidfVectorizer per entry; the rest is go run's
# build and Python's start). The first run on a machine also downloads the
# 1.9 MB wheel (2 s) and, when .local/seedgate is missing, installs the
# seed's scikit-learn (15 s).
#
# The data: PyPI's bfcl-eval, pinned with its wheel's sha256 below, fetched
# once per machine into the shared cache (localstack/cache.sh) and linked at
# .local/bfcl (CONCLAVE_BFCL_DIR to use another directory).
set -euo pipefail
cd "$(dirname "$0")/../../.."

HERE=localstack/bench/routing
PYTHON="${PYTHON:-python3}"
BFCL_PIN=bfcl-eval==2026.3.23
BFCL_WHEEL=bfcl_eval-2026.3.23-py3-none-any.whl
BFCL_SHA256=3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a
BFCL_DIR="${CONCLAVE_BFCL_DIR:-.local/bfcl}"
# The seed's virtualenv is compare.sh's (make bench-gate): the same
# directory and pins, built by compare.sh's own venv function (below).
VENV="${GATE_VENV:-.local/seedgate}"

# shellcheck source=localstack/cache.sh
. localstack/cache.sh

# fetch_bfcl DIR: the pinned wheel's six data files, in DIR as
# BFCL_v4_<set>.json and possible_answer/BFCL_v4_<set>.json. A subshell, so
# that its trap removes the download whether the cache builds it in a
# subshell or, without a cache, in this shell.
fetch_bfcl() (
  local dir=$1 tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "fetching $BFCL_PIN into $dir ..." >&2
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$tmp" "$BFCL_PIN" || {
    echo "pip could not download $BFCL_PIN (python3 with pip and access to PyPI are needed)." >&2
    exit 1
  }
  if ! echo "$BFCL_SHA256  $tmp/$BFCL_WHEEL" | sha256sum --check --status; then
    echo "$BFCL_WHEEL: sha256 $(sha256sum "$tmp/$BFCL_WHEEL" | cut -d' ' -f1), want $BFCL_SHA256" >&2
    exit 1
  fi
  mkdir -p "$dir/possible_answer"
  "$PYTHON" - "$tmp/$BFCL_WHEEL" "$dir" <<'PY'
import sys, zipfile

wheel, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for s in ("multiple", "irrelevance", "live_multiple", "live_irrelevance"):
        name = f"BFCL_v4_{s}.json"
        with open(f"{out}/{name}", "wb") as f:
            f.write(z.read(f"bfcl_eval/data/{name}"))
        if s.endswith("multiple"):
            with open(f"{out}/possible_answer/{name}", "wb") as f:
                f.write(z.read(f"bfcl_eval/data/possible_answer/{name}"))
PY
)

cache="${CONCLAVE_CACHE:-}"
[[ -z "${CONCLAVE_BFCL_DIR:-}" ]] || cache=off
CONCLAVE_CACHE="$cache" cached "$BFCL_DIR" bfcl "${BFCL_PIN#*==}-${BFCL_SHA256:0:16}" fetch_bfcl

# compare.sh's venv function, taken from compare.sh rather than copied (it
# reads HERE, VENV and PYTHON, set above): one definition of how the seed's
# virtualenv is built and when it is rebuilt.
eval "$(sed -n '/^venv() {$/,/^}$/p' "$HERE/compare.sh")"
if ! declare -F venv >/dev/null; then
  echo "bfcl.sh: no venv() function found in $HERE/compare.sh" >&2
  exit 1
fi
venv

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
# Everything below is printed and, unless BENCH_DOC=off, written into the
# "routing" section of docs/measurements.md as it was printed.
{
  # BFCL_ARGS: more flags for the gate's harness (-v, -set, -embedder, -json).
  # shellcheck disable=SC2086
  go run ./localstack/bench/bfclbench -data "$BFCL_DIR" -teams "$work/teams.jsonl" ${BFCL_ARGS:-}
  echo
  # No __pycache__ beside seed_gate.py, which seed_bfcl.py imports (the tree
  # does not ignore one).
  PYTHONDONTWRITEBYTECODE=1 "$VENV/bin/python" "$HERE/seed_bfcl.py" "$work/teams.jsonl"
} | tee "$work/out.txt"
echo
echo "bench-routing: $((SECONDS - start)) s"
if [[ "${BENCH_DOC:-docs/measurements.md}" != off && -z "${BFCL_ARGS:-}" ]]; then
  {
    echo "Written by \`make bench-routing\` on commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`, $(date -u +%Y-%m-%d), in $((SECONDS - start)) s:"
    echo
    echo '```'
    cat "$work/out.txt"
    echo '```'
  } | go run ./localstack/benchdoc -doc "${BENCH_DOC:-docs/measurements.md}" -section routing
fi

# CLINC150 (localstack/bench/routing/clinc150, in the repository): everyday
# messages to a team of ten agents with examples, through the chat turn's
# routing, in its own section of docs/measurements.md.
start=$SECONDS
go run ./localstack/bench/clincbench | tee "$work/clinc.txt"
echo "bench-routing (CLINC150): $((SECONDS - start)) s"
if [[ "${BENCH_DOC:-docs/measurements.md}" != off && -z "${BFCL_ARGS:-}" ]]; then
  {
    echo "Written by \`make bench-routing\` on commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`, $(date -u +%Y-%m-%d), in $((SECONDS - start)) s:"
    echo
    cat "$work/clinc.txt"
  } | go run ./localstack/benchdoc -doc "${BENCH_DOC:-docs/measurements.md}" -section routing-clinc150
fi
