#!/usr/bin/env bash
# bench.sh SECTION COMMAND...: runs a benchmark command, prints its output
# and, unless BENCH_DOC=off, writes it into the SECTION of
# docs/measurements.md (localstack/benchdoc) with the commit, the date and
# the machine's load, so the figures there are the command's own. The
# command's exit status is bench.sh's; a failed run writes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
section="$1"
shift
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$@" | tee "$out"
if [[ "${BENCH_DOC:-docs/measurements.md}" != off ]]; then
  {
    echo "Written by \`make bench\` on commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`, $(date -u +%Y-%m-%d); $(uname -m), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg):"
    echo
    echo '```'
    echo "\$ $*"
    grep -E '^(Benchmark|goos|goarch|cpu|pkg|ok|PASS)' "$out" || true
    echo '```'
  } | go run ./localstack/benchdoc -doc "${BENCH_DOC:-docs/measurements.md}" -section "$section"
fi
