#!/usr/bin/env bash
# The ExpertGate against the seed's design, side by side (issue 10, item 5):
# BenchmarkGateScore (Go, in process) and seed_gate.py (scikit-learn) score
# the same query for the same synthetic team of 10, 100 and 1,000 agents with
# the same 200 ratings, in one run on this machine. Prints a table and fails
# when Go is not at least GATE_MIN_RATIO (50) times faster at every size.
#
#   localstack/bench/routing/compare.sh            # or: make bench-gate
#
# Each side runs GATE_ROUNDS (3) times, interleaved, and its best time
# counts: the best of a few runs is the least disturbed by whatever else the
# machine does, for both sides alike. The seed runs in a virtualenv at
# .local/seedgate, installed once from requirements.txt (pinned) and
# reinstalled when that file changes.
set -euo pipefail
cd "$(dirname "$0")/../../.."

HERE=localstack/bench/routing
VENV="${GATE_VENV:-.local/seedgate}"
PYTHON="${PYTHON:-python3}"
ROUNDS="${GATE_ROUNDS:-3}"
MIN_RATIO="${GATE_MIN_RATIO:-50}"
ITER="${GATE_SEED_ITER:-200}"
SIZES=(10 100 1000)

venv() {
  local stamp="$VENV/.requirements.sha" want
  want="$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)"
  if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  echo "installing the seed's scikit-learn into $VENV ..." >&2
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
  echo "$want" >"$stamp"
}
venv

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
GO_CMD=(go test -run '^$' -bench 'GateScore' -benchmem -count 1 ./shared/routing/)

echo "machine: $(uname -m), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3); $("$VENV/bin/python" --version)"
echo "go:   $(printf "%q " "${GO_CMD[@]}")"
echo "seed: $VENV/bin/python $HERE/seed_gate.py N $ITER   (N = ${SIZES[*]})"
echo "best of $ROUNDS interleaved rounds"
echo
for round in $(seq "$ROUNDS"); do
  # "BenchmarkGateScore1000-2  27500  43125 ns/op  …" → "1000 43.125"
  "${GO_CMD[@]}" | tee -a "$work/go.log" |
    awk '$1 ~ /^BenchmarkGateScore[0-9]+(-[0-9]+)?$/ { n = $1; sub(/^BenchmarkGateScore/, "", n); sub(/-[0-9]+$/, "", n); print n, $3 / 1000 }' >>"$work/go.txt"
  for n in "${SIZES[@]}"; do
    "$VENV/bin/python" "$HERE/seed_gate.py" "$n" "$ITER" >>"$work/seed.txt"
  done
done

# The best (lowest) µs per query of each side and size, and the table,
# printed and written into docs/measurements.md (its "gate" section; set
# BENCH_DOC=off to leave the document as it is).
status=0
printf '%-8s %16s %18s %8s\n' agents 'Go µs/query' 'seed µs/query' ratio
{
  echo "Written by \`make bench-gate\` on commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`, $(date -u +%Y-%m-%d), best of $ROUNDS interleaved rounds;"
  echo "$(uname -m), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (compare the ratios of one run)."
  echo
  echo "| agents | Go µs/query | seed_gate.py µs/query | ratio |"
  echo "|---|---|---|---|"
} >"$work/doc.md"
for n in "${SIZES[@]}"; do
  g="$(awk -v n="$n" '$1 == n { if (b == "" || $2 < b) b = $2 } END { print b }' "$work/go.txt")"
  s="$(awk -v n="$n" '$1 == n { if (b == "" || $2 < b) b = $2 } END { print b }' "$work/seed.txt")"
  if [[ -z "$g" || -z "$s" ]]; then
    echo "no figure for $n agents (go: '${g}', seed: '${s}')" >&2
    cat "$work/go.log" >&2
    exit 1
  fi
  ratio="$(awk -v g="$g" -v s="$s" 'BEGIN { printf "%.1f", s / g }')"
  printf '%-8s %16.1f %18.1f %7sx\n' "$n" "$g" "$s" "$ratio"
  printf '| %s | %.1f | %.1f | **%.0f×** |\n' "$n" "$g" "$s" "$ratio" >>"$work/doc.md"
  if awk -v r="$ratio" -v m="$MIN_RATIO" 'BEGIN { exit !(r < m) }'; then
    status=1
  fi
done
if ((status)); then
  echo "FAIL: the gate must be at least ${MIN_RATIO}x faster than seed_gate.py at every size" >&2
  printf '\nBelow the %s× target at some size: `make bench-gate` exits 1.\n' "$MIN_RATIO" >>"$work/doc.md"
fi
if [[ "${BENCH_DOC:-docs/measurements.md}" != off ]]; then
  go run ./localstack/benchdoc -doc "${BENCH_DOC:-docs/measurements.md}" -section gate <"$work/doc.md"
fi
exit $status
